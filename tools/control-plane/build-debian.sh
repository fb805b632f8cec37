#!/usr/bin/env bash
# Builds a local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager)
# from Debian's own packages and caches the binaries per user, keyed by version, with the
# matching kubectl (Debian's kubernetes-client, the same 1.20.2).
#
#   tools/control-plane/build.sh          # prints the folder holding the three binaries
#
# Everything comes from the Debian archive that this machine's apt is already configured
# with (its URL is read from the apt configuration at run time). The system's apt sources and
# state are never touched: apt runs with a private source list and private state folders.
#
# Ingredients: etcd-server (bookworm), the `kubernetes` 1.20.2 source package (bookworm,
# vendored dependencies included), Go 1.15 (bullseye; Kubernetes 1.20 built with a newer Go
# crashes under load), rsync (bookworm; the Kubernetes build scripts call it).
#
# Environment:
#   TINY_CACHE_DIR      cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/tiny)
#   TINY_DEBIAN_MIRROR  Debian archive URL to use instead of the one apt is configured with
#   TINY_KEEP_WORK=1    keep the unpacked sources after a successful build
#
# The first build takes 5-8 minutes on 2 cores; a rebuild (warm GOCACHE) 1-2 minutes.
# Concurrent callers are serialised by a lock; only one of them builds.
set -euo pipefail

K8S_VERSION=1.20.2
CACHE_ROOT="${TINY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tiny}"
BASE="$CACHE_ROOT/control-plane/k8s-$K8S_VERSION"
BIN="$BASE/bin"
BINARIES=(etcd kube-apiserver kube-controller-manager kubectl)

log() { echo "control-plane: $*" >&2; }
die() { log "error: $*"; exit 1; }

have_all() {
    local b
    for b in "${BINARIES[@]}"; do
        [[ -x "$BIN/$b" && -s "$BIN/$b" ]] || return 1
    done
}

if have_all; then
    echo "$BIN"
    exit 0
fi

mkdir -p "$BASE"
exec 9>"$BASE/.lock"
if ! flock -n 9; then
    log "another process is building; waiting for the lock $BASE/.lock"
    flock 9
fi
if have_all; then
    log "another process built the binaries meanwhile"
    echo "$BIN"
    exit 0
fi

START=$(date +%s)
WORK="$BASE/work"
ROOT="$WORK/root"        # unpacked .deb files
DL="$WORK/download"      # .deb files and the source package
APT="$WORK/apt"          # private apt state
SRC_PARENT="$WORK/src"
SRC="$SRC_PARENT/kubernetes-$K8S_VERSION"
GOCACHE="$BASE/gocache"   # kept: a rebuild takes 1-2 minutes instead of 5-8
export GOCACHE
mkdir -p "$ROOT" "$DL" "$APT/lists/partial" "$APT/cache/archives/partial" "$GOCACHE"
rm -rf "$BASE"/bin.tmp.*   # left by an interrupted earlier run

# Deletes folders in a detached background process: the unpacked Kubernetes tree has so
# many files that removing it takes a while, and nobody needs to wait for that.
remove_later() {
    local d trash
    for d in "$@"; do
        [[ -e "$d" ]] || continue
        trash=$(mktemp -d "$WORK/trash.XXXXXX")
        mv "$d" "$trash/"
    done
    # Closing fd 9 (the lock) and stdout keeps callers from waiting for the deletion.
    (rm -rf "$WORK"/trash.* </dev/null >/dev/null 2>&1 9>&- &) 9>&-
}

# --- the archive URL, from this machine's apt configuration ---------------------------
find_mirror() {
    local f uri=""
    # deb822 .sources: the URIs of the first stanza whose Suites holds a plain code name
    # (not -security / -updates / -backports).
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] || continue
        uri=$(awk '
            BEGIN { RS = ""; FS = "\n" }
            {
                u = ""; plain = 0
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); split($i, a, /[ \t]+/); u = a[1] }
                    if ($i ~ /^Suites:/) {
                        sub(/^Suites:[ \t]*/, "", $i); n = split($i, s, /[ \t]+/)
                        for (j = 1; j <= n; j++) if (s[j] ~ /^[a-z]+$/) plain = 1
                    }
                }
                if (u != "" && plain) { print u; exit }
            }' "$f")
        [[ -n "$uri" ]] && { echo "$uri"; return 0; }
    done
    # one-line format: "deb [options] URI SUITE COMPONENTS..."
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$f" ]] || continue
        uri=$(awk '
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                if ($(i + 1) ~ /^[a-z]+$/) { print $i; exit }
            }' "$f")
        [[ -n "$uri" ]] && { echo "$uri"; return 0; }
    done
    return 1
}

MIRROR="${TINY_DEBIAN_MIRROR:-}"
if [[ -z "$MIRROR" ]]; then
    MIRROR=$(find_mirror) || die "no Debian archive found in /etc/apt/sources.list{,.d}; set TINY_DEBIAN_MIRROR"
fi
MIRROR="${MIRROR%/}"
log "Debian archive from apt configuration: $MIRROR"

SIGNED=""
if [[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
    SIGNED="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
fi
cat >"$APT/sources.list" <<LIST
deb ${SIGNED}$MIRROR bookworm main
deb-src ${SIGNED}$MIRROR bookworm main
deb ${SIGNED}$MIRROR bullseye main
LIST

APT_OPTS=(
    -o "Dir::Etc::SourceList=$APT/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$APT/lists"
    -o "Dir::Cache=$APT/cache"
    -o "Acquire::Languages=none"
    -q
)
if [[ "$(id -u)" == 0 ]]; then
    APT_OPTS+=(-o "APT::Sandbox::User=root")
fi

# --- downloads ----------------------------------------------------------------------
DEBS=(etcd-server golang-1.15-go golang-1.15-src rsync libpopt0 kubernetes-client)
need_download=0
for p in "${DEBS[@]}"; do
    compgen -G "$DL/${p}_*.deb" >/dev/null || need_download=1
done
compgen -G "$DL/kubernetes_*.orig.tar.*" >/dev/null || need_download=1

if [[ $need_download == 1 ]]; then
    log "apt-get update (private lists in $APT)"
    apt-get "${APT_OPTS[@]}" update >"$WORK/apt-update.log" 2>&1 \
        || { tail -n 30 "$WORK/apt-update.log" >&2; die "apt-get update failed"; }
    log "downloading ${DEBS[*]}"
    (cd "$DL" && apt-get "${APT_OPTS[@]}" download "${DEBS[@]}") >"$WORK/apt-download.log" 2>&1 \
        || { tail -n 30 "$WORK/apt-download.log" >&2; die "apt-get download failed"; }
    log "downloading the kubernetes source package"
    (cd "$DL" && apt-get "${APT_OPTS[@]}" source --download-only kubernetes) >"$WORK/apt-source.log" 2>&1 \
        || { tail -n 30 "$WORK/apt-source.log" >&2; die "apt-get source failed"; }
else
    log "downloads already present in $DL"
fi

log "unpacking the .deb files into $ROOT"
rm -rf "$ROOT"
mkdir -p "$ROOT"
for p in "${DEBS[@]}"; do
    for deb in "$DL/${p}"_*.deb; do
        dpkg -x "$deb" "$ROOT"
    done
done

GO_ROOT="$ROOT/usr/lib/go-1.15"
[[ -x "$GO_ROOT/bin/go" ]] || die "Go 1.15 not found at $GO_ROOT"
[[ -x "$ROOT/usr/bin/etcd" ]] || die "etcd not found at $ROOT/usr/bin/etcd"
[[ -x "$ROOT/usr/bin/kubectl" ]] || die "kubectl not found at $ROOT/usr/bin/kubectl"

# rsync: use the system's if there is one, else the unpacked one through a wrapper that
# finds its libraries in the private root.
TOOLS="$WORK/tools"
rm -rf "$TOOLS"
mkdir -p "$TOOLS"
if ! command -v rsync >/dev/null 2>&1; then
    LIBDIRS=$(find "$ROOT" -name 'lib*.so*' -printf '%h\n' | sort -u | paste -sd: -)
    cat >"$TOOLS/rsync" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$LIBDIRS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$ROOT/usr/bin/rsync" "\$@"
WRAP
    chmod +x "$TOOLS/rsync"
    "$TOOLS/rsync" --version >/dev/null || die "the unpacked rsync does not run"
    log "using the unpacked rsync"
fi

# --- sources ------------------------------------------------------------------------
ORIG=$(compgen -G "$DL/kubernetes_*.orig.tar.*" | head -n 1)
log "unpacking $(basename "$ORIG")"
remove_later "$SRC_PARENT"
mkdir -p "$SRC_PARENT"
tar -xf "$ORIG" -C "$SRC_PARENT"
[[ -f "$SRC/Makefile" ]] || die "the source package did not unpack to $SRC (found: $(ls "$SRC_PARENT"))"
rm -rf "$SRC/_output"
# The Kubernetes scripts force GOCACHE=_output/local/go/cache; point that at the persistent
# cache so that a rebuild (same source path, same inputs) takes about a minute.
mkdir -p "$SRC/_output/local/go"
ln -s "$GOCACHE" "$SRC/_output/local/go/cache"

mkdir -p "$SRC/.go/src/k8s.io"
ln -sfn "$SRC" "$SRC/.go/src/k8s.io/kubernetes"

# --- build --------------------------------------------------------------------------
export GOROOT="$GO_ROOT"
export PATH="$GO_ROOT/bin:$TOOLS:$PATH"
export GOPATH="$SRC/.go"
export CGO_ENABLED=0
export GOFLAGS=""
# Ignore the user's `go env -w` settings: Go 1.15 does not know flags a newer Go put there
# (e.g. GOFLAGS=-buildvcs=false), and an empty GOFLAGS above does not override that file.
export GOENV=off
export GO111MODULE=""
# The tarball carries its version (filled-in `git archive` placeholders); pin it anyway so
# that a git repository around the cache folder cannot change what the binaries report.
export KUBE_GIT_VERSION="v$K8S_VERSION"
export KUBE_GIT_TREE_STATE=archive
export KUBE_GIT_MAJOR=1
export KUBE_GIT_MINOR=20

log "go: $(go version)"
log "building kube-apiserver and kube-controller-manager (cold: 5-8 minutes on 2 cores, warm: 1-2; log: $WORK/make.log)"
if ! (cd "$SRC" && make WHAT="cmd/kube-apiserver cmd/kube-controller-manager") >"$WORK/make.log" 2>&1; then
    tail -n 40 "$WORK/make.log" >&2
    die "make failed (full log: $WORK/make.log)"
fi

OUT="$SRC/_output/bin"
for b in kube-apiserver kube-controller-manager; do
    [[ -x "$OUT/$b" && -s "$OUT/$b" ]] || die "make did not produce $OUT/$b"
done

# --- install atomically ---------------------------------------------------------------
TMP_BIN=$(mktemp -d "$BASE/bin.tmp.XXXXXX")
cp "$ROOT/usr/bin/etcd" "$TMP_BIN/etcd"
cp "$ROOT/usr/bin/kubectl" "$TMP_BIN/kubectl"
cp "$OUT/kube-apiserver" "$OUT/kube-controller-manager" "$TMP_BIN/"
chmod 755 "$TMP_BIN" "$TMP_BIN"/*
"$TMP_BIN/kube-apiserver" --version >&2
rm -rf "$BIN"
mv "$TMP_BIN" "$BIN"

if [[ "${TINY_KEEP_WORK:-0}" != 1 ]]; then
    remove_later "$SRC_PARENT" "$ROOT" "$TOOLS"
fi
log "done in $(( $(date +%s) - START )) s"
echo "$BIN"

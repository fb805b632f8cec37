#!/usr/bin/env bash
# Builds a current Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager
# and kubectl, all of one release) from their Go modules with the machine's Go, and caches
# the binaries per user, keyed by version.
#
#   tools/control-plane/build-go.sh      # prints the folder holding the four binaries
#
# The versions are those of go/go.mod: k8s.io/kubernetes with each staging module replaced by
# its published release of the same version, and the etcd server Kubernetes requires.
# Modules come from the Go module proxy `go env GOPROXY` names.
#
# Environment:
#   TINY_CACHE_DIR   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/tiny); Go's module
#                    and build caches live in its control-plane/go/ so a rebuild is quick
#
# Cold (empty module and build caches): about 7 minutes on 2 cores; with warm caches (the
# binaries removed): seconds. Concurrent callers are serialised by a lock; only one of them
# builds. An interrupted build installs nothing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD_DIR="$HERE/go"
K8S_VERSION=1.35.4
# The release of each staging module (k8s.io/api, ...) that matches K8S_VERSION.
STAGING_VERSION=v0.35.4
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

# A go.mod that drifted from this script would build another version than the folder says.
grep -q "^	k8s.io/kubernetes v$K8S_VERSION\b" "$MOD_DIR/go.mod" \
    || die "$MOD_DIR/go.mod does not require k8s.io/kubernetes v$K8S_VERSION"
grep -q "^	k8s.io/api => k8s.io/api $STAGING_VERSION\$" "$MOD_DIR/go.mod" \
    || die "$MOD_DIR/go.mod does not replace k8s.io/api with $STAGING_VERSION"
command -v go >/dev/null 2>&1 || die "no \`go\` on PATH (Go 1.25 or newer builds Kubernetes $K8S_VERSION)"

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
GO_CACHE_ROOT="$CACHE_ROOT/control-plane/go"
export GOMODCACHE="$GO_CACHE_ROOT/mod"
export GOCACHE="$GO_CACHE_ROOT/build"
# The machine's Go, never a downloaded toolchain; static binaries; the committed go.sum
# is the whole truth (a build never edits go.mod or go.sum).
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
export GOWORK=off
mkdir -p "$GOMODCACHE" "$GOCACHE"
rm -rf "$BASE"/bin.tmp.*   # left by an interrupted earlier run
LOG="$BASE/build.log"

# What `kubectl version` and the API server's /version report. Without these the binaries
# say v0.0.0-master, and kubectl warns about version skew.
BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDFLAGS+=" -X $pkg.gitVersion=v$K8S_VERSION -X $pkg.gitMajor=${K8S_VERSION%%.*}"
    LDFLAGS+=" -X $pkg.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION") -X $pkg.gitTreeState=clean"
    LDFLAGS+=" -X $pkg.buildDate=$BUILD_DATE"
done

TMP_BIN=$(mktemp -d "$BASE/bin.tmp.XXXXXX")
trap 'rm -rf "$TMP_BIN"' EXIT   # gone after the final mv; a failed build leaves nothing
log "go: $(go version)"
log "downloading modules into $GOMODCACHE"
if ! (cd "$MOD_DIR" && go mod download) >"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    die "go mod download failed (full log: $LOG)"
fi
log "building Kubernetes $K8S_VERSION and etcd (cold: about 7 minutes on 2 cores; log: $LOG)"
# One `go build` for all four: the packages they share are compiled once, in parallel.
if ! (cd "$MOD_DIR" && go build -ldflags "$LDFLAGS" -o "$TMP_BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl \
    go.etcd.io/etcd/server/v3) >>"$LOG" 2>&1; then
    tail -n 40 "$LOG" >&2
    die "go build failed (full log: $LOG)"
fi
# `go build -o DIR/` names a binary after its package path: etcd's is `server`.
mv "$TMP_BIN/server" "$TMP_BIN/etcd"
for b in "${BINARIES[@]}"; do
    [[ -x "$TMP_BIN/$b" && -s "$TMP_BIN/$b" ]] || die "go build did not produce $b"
done
chmod 755 "$TMP_BIN"
# The binaries run, and say the version the folder is named after.
API_VERSION=$("$TMP_BIN/kube-apiserver" --version)
[[ "$API_VERSION" == "Kubernetes v$K8S_VERSION" ]] || die "kube-apiserver --version says \"$API_VERSION\", not v$K8S_VERSION"
ETCD_VERSION=$("$TMP_BIN/etcd" --version)
log "built: $API_VERSION, ${ETCD_VERSION%%$'\n'*}"

# --- install atomically ---------------------------------------------------------------
rm -rf "$BIN"
mv "$TMP_BIN" "$BIN"
log "done in $(( $(date +%s) - START )) s"
echo "$BIN"

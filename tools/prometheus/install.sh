#!/usr/bin/env bash
# A real Prometheus for the http module's `promql_query` tests: Debian's `prometheus`
# package (2.42 on bookworm), unpacked on first use into the per-user cache
# (~/.cache/tiny/prometheus) without installing it into the system (no service is set
# up or started). Prints the binary's path. /usr/bin/prometheus is used where the
# package is installed already.
set -euo pipefail
if [ -x /usr/bin/prometheus ]; then
    echo /usr/bin/prometheus
    exit 0
fi
base="${TINY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tiny}/prometheus"
bin="$base/root/usr/bin/prometheus"
if [ ! -x "$bin" ]; then
    mkdir -p "$base"
    # Parallel tests may get here together: one unpacks, the others wait for it.
    exec 9>"$base.lock"
    flock 9
    if [ ! -x "$bin" ]; then
        work=$(mktemp -d "$base/work.XXXXXX")
        trap 'rm -rf "$work"' EXIT
        echo "prometheus: downloading Debian's prometheus package into $base" >&2
        # The machine's package lists may be empty on a new machine: read them once.
        if ! (cd "$work" && apt-get download prometheus) >"$work/download.log" 2>&1; then
            apt-get update -q >"$work/update.log" 2>&1 \
                || { tail -n 20 "$work/update.log" >&2; echo "prometheus: apt-get update failed" >&2; exit 1; }
            (cd "$work" && apt-get download prometheus) >"$work/download.log" 2>&1 \
                || { tail -n 20 "$work/download.log" >&2; echo "prometheus: apt-get download failed" >&2; exit 1; }
        fi
        dpkg -x "$work"/prometheus_*.deb "$work/root"
        [ -x "$work/root/usr/bin/prometheus" ] || { echo "prometheus: no binary in the package" >&2; exit 1; }
        # One move: an interrupted unpack leaves nothing half made.
        rm -rf "$base/root"
        mv "$work/root" "$base/root"
    fi
    flock -u 9
fi
echo "$bin"

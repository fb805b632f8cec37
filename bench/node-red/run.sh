#!/usr/bin/env bash
# Install Node-RED (pinned by package-lock.json) if node_modules is missing or
# was installed from a different lock file, then run the benchmark.
# Results go to stdout (one JSON object per line); everything else to stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

stamp=node_modules/.tiny-bench-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [ ! -d node_modules/node-red ] || [ "$want" != "$have" ]; then
    echo "[bench/node-red] installing node-red (npm ci)..." >&2
    npm ci --silent --no-audit --no-fund --ignore-scripts >&2
    echo "$want" > "$stamp"
fi
# BENCH_SCRIPT picks another entry point (serve-http.js for `make bench-http`).
exec node "${BENCH_SCRIPT:-run.js}" "$@"

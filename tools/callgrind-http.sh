#!/usr/bin/env bash
# Instructions per HTTP request through `http_server` (request -> the edge's
# `{"body": "{{$.body}}", ...}` -> response) beside the bare hyper server, counted by
# callgrind: the figure a shared, noisy machine cannot blur. Runs the http bench
# (mimalloc) with `--only tiny` and `--only bare` for N1 and N2 requests (plus the
# bench's warm-up, a tenth more); the difference of two counts divided by the
# requests between them is what one request costs, setup cancelled out. Each run
# counts its threads apart: the main thread is the load generator, the rest the
# servers, so the server's own part is printed beside the total.
# `CALLGRIND_KEEP=DIR` keeps each run's profiles (one file a thread) as
# DIR/<bare|tiny>.<N>-<thread>, for `callgrind_annotate --inclusive=yes [--tree=calling]`.
#
# Usage: tools/callgrind-http.sh [N1 N2]   (defaults 2000 6000)
set -euo pipefail
cd "$(dirname "$0")/.."
n1="${1:-2000}"
n2="${2:-6000}"
command -v valgrind >/dev/null || { echo "callgrind-http: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
bin=$(cargo bench -p tiny-example-http --bench http --features fast-alloc --no-run 2>&1 \
    | sed -n 's/.*Executable benches\/http.rs (\(.*\))/\1/p' | tail -1)
[[ -x "$bin" ]] || { echo "callgrind-http: the http bench did not build" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Prints "<all threads> <main thread>" for one run of `server` with `n` requests.
count() {
    rm -f "$out"/cg*
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/cg" \
        "$bin" --only "$1" --n "$2" --conc 4 --secs 100000 >/dev/null 2>&1
    local total=0 main=0 f n
    for f in "$out"/cg*; do
        n=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$f" | head -1)
        [[ -n "$n" ]] || n=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$f" | head -1)
        total=$((total + ${n:-0}))
        [[ "$f" == *-01 ]] && main=${n:-0}
    done
    if [[ -n "${CALLGRIND_KEEP:-}" ]]; then
        mkdir -p "$CALLGRIND_KEEP"
        for f in "$out"/cg*; do cp "$f" "$CALLGRIND_KEEP/$1.$2${f##*/cg}"; done
    fi
    echo "$total $main"
}
sent() { echo $(($1 + $1 / 10)); }
requests=$(($(sent "$n2") - $(sent "$n1")))
for server in bare tiny; do
    read -r t1 m1 < <(count "$server" "$n1")
    read -r t2 m2 < <(count "$server" "$n2")
    (( t2 > t1 )) || { echo "callgrind-http: no count from callgrind for $server" >&2; exit 1; }
    all=$(((t2 - t1) / requests))
    own=$((((t2 - m2) - (t1 - m1)) / requests))
    echo "$server: instructions per request: $all with the load generator, $own the server's own"
    eval "${server}_all=$all ${server}_own=$own"
done
awk -v a="$tiny_all" -v b="$bare_all" -v c="$tiny_own" -v d="$bare_own" \
    'BEGIN { printf "tiny / bare: %.2fx instructions per request with the load generator, %.2fx the server'"'"'s own (goal <= 1.3x)\n", a / b, c / d }'

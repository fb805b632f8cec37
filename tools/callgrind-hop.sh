#!/usr/bin/env bash
# Instructions per hop of the flow engine, counted by callgrind: the figure a shared,
# noisy machine cannot blur. Runs the flow bench's 10-node chain (default edges:
# retries on) under callgrind with N1 and N2 messages sent typed; the difference of
# the two counts divided by (N2 - N1) x 10 hops is what one hop costs, setup and
# warm-up cancelled out. `--json` sends the messages as JSON (a signal's way in);
# `--no-retries` gives the edges one attempt (no copy kept for a retry); `--expr` puts
# chain10_expr's expression on every edge; `--traced` records every hop span as a
# module that exports traces does (the runtime's hop sink building each span's
# OpenTelemetry data for a batch processor whose exporter sends nothing, and its
# subscriber's OpenTelemetry layer for the spans it makes with `tracing`), as on a
# cluster that sets `OTLP_DSN`.
# `CALLGRIND_KEEP=DIR` keeps the two runs' profiles as DIR/hop.N1 and DIR/hop.N2, for
# `callgrind_annotate --inclusive=yes [--tree=calling]`: a function's count in the second
# minus the first, over (N2 - N1) x 10, is what it costs a hop.
#
# Usage: tools/callgrind-hop.sh [--json] [--no-retries] [--expr] [--traced] [N1 N2]   (defaults 2000 6000)
set -euo pipefail
cd "$(dirname "$0")/.."
json=()
edges=()
chain=chain10
while [[ "${1:-}" == --* ]]; do
    case "$1" in
        --json) json=(--json) ;;
        --no-retries) edges+=(--max-attempts 1) ;;
        --expr) edges+=(--expr); chain=chain10_expr ;;
        --traced) edges+=(--traced) ;;
        *) echo "callgrind-hop: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
n1="${1:-2000}"
n2="${2:-6000}"
command -v valgrind >/dev/null || { echo "callgrind-hop: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
features=(--features fast-alloc)
bin=$(cargo bench -p tiny-sdk --bench flow "${features[@]}" --no-run 2>&1 \
    | sed -n 's/.*Executable benches\/flow.rs (\(.*\))/\1/p' | tail -1)
[[ -x "$bin" ]] || { echo "callgrind-hop: the flow bench did not build" >&2; exit 1; }
count() {
    local out file=/dev/null
    if [[ -n "${CALLGRIND_KEEP:-}" ]]; then
        mkdir -p "$CALLGRIND_KEEP"
        file="$CALLGRIND_KEEP/hop.$1"
    fi
    out=$(valgrind --tool=callgrind --callgrind-out-file="$file" "$bin" --instructions --n "$1" "${json[@]}" "${edges[@]}" 2>&1 >/dev/null)
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out" | tail -1
}
i1=$(count "$n1")
i2=$(count "$n2")
[[ -n "$i1" && -n "$i2" ]] || { echo "callgrind-hop: no count from callgrind" >&2; exit 1; }
per_hop=$(( (i2 - i1) / ((n2 - n1) * 10) ))
echo "${chain} (mimalloc, ${json[*]:-typed} in, ${edges[*]:-default edges}): ${i1} instructions for ${n1} messages, ${i2} for ${n2}"
echo "instructions per hop: ${per_hop}"

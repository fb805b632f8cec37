#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ one after another on the pinned stable
# toolchain, each for FUZZ_SECONDS (default 600), niced so other builds keep going.
#
#   tools/fuzz.sh [TARGET...]        (default: every target in fuzz/fuzz_targets)
#
# FUZZ_SECONDS  time per target            FUZZ_NICE   nice level (default 19)
# FUZZ_RSS_MB   memory limit (2048)        FUZZ_TIMEOUT  seconds one input may take (10)
# FUZZ_MERGE=1  afterwards, merge inputs that add coverage into fuzz/corpus/<target>
# FUZZ_MAX_LEN  largest input in bytes (default 1 MiB: real messages and node specs are
#               that large, and what breaks at size, like a deep expression, hides below it)
#
# A target with a dictionary (fuzz/dict/<target>.dict: its tokens, e.g. the expression
# operators and functions) is given it.
#
# New inputs go to a scratch corpus in ~/.cache/tiny/fuzz/corpus/<target>, so the
# committed corpus only grows through FUZZ_MERGE. A crash stops its target, is saved
# in fuzz/artifacts/<target>/ and fails the script; once fixed, copy it to
# fuzz/regressions/<target>/ so the replay tests keep it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tiny
seconds=${FUZZ_SECONDS:-600}
nice_level=${FUZZ_NICE:-19}
rss_mb=${FUZZ_RSS_MB:-2048}
timeout=${FUZZ_TIMEOUT:-10}
max_len=${FUZZ_MAX_LEN:-1048576}
cargo_fuzz_version=0.13.2

# cargo-fuzz, installed once per user.
if ! "$cache/cargo-fuzz/bin/cargo-fuzz" --version 2>/dev/null | grep -q "$cargo_fuzz_version"; then
    cargo install cargo-fuzz --locked --version "$cargo_fuzz_version" --root "$cache/cargo-fuzz"
fi
export PATH="$cache/cargo-fuzz/bin:$PATH"
# cargo-fuzz passes -Z flags (sanitizer coverage); the stable compiler accepts them
# with RUSTC_BOOTSTRAP, since only the machine's stable toolchain is available.
export RUSTC_BOOTSTRAP=1
fuzz=(cargo fuzz)
common=(--fuzz-dir "$root/fuzz" --target-dir "$cache/target-fuzz-san")
# The sanitized builds keep to their own folder, not the shared build folder `make` names.
export CARGO_BUILD_BUILD_DIR="$cache/target-fuzz-san"

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cd "$root/fuzz/fuzz_targets" && ls ./*.rs | sed 's|^\./||; s|\.rs$||')
fi

cd "$root"
nice -n "$nice_level" "${fuzz[@]}" build "${common[@]}"
mkdir -p "$cache/fuzz/logs"
for target in "${targets[@]}"; do
    scratch="$cache/fuzz/corpus/$target"
    log="$cache/fuzz/logs/$target.log"
    mkdir -p "$scratch" "fuzz/artifacts/$target"
    dict=()
    [ -f "fuzz/dict/$target.dict" ] && dict=(-dict="fuzz/dict/$target.dict")
    echo "fuzzing $target for ${seconds}s (log: $log)"
    status=0
    nice -n "$nice_level" "${fuzz[@]}" run "${common[@]}" "$target" "$scratch" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout" -max_len="$max_len" \
        "${dict[@]}" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done )|^#[0-9]+\s+DONE' "$log" || true
    if [ "$status" -ne 0 ]; then
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" || tail -n 30 "$log"
        echo "$target: crash (exit $status); inputs in fuzz/artifacts/$target/" >&2
        exit "$status"
    fi
    if [ "${FUZZ_MERGE:-0}" = 1 ]; then
        nice -n "$nice_level" "${fuzz[@]}" run "${common[@]}" "$target" "fuzz/corpus/$target" "$scratch" -- \
            -merge=1 -rss_limit_mb="$rss_mb" -timeout="$timeout" >>"$log" 2>&1
    fi
done

#!/usr/bin/env bash
# The target folder's lock through `make`, with a stand-in for cargo (CARGO=...): a
# second `make` waits while the first holds the folder and says who holds it; it runs
# once the first ends; a `make` nested in a locked command runs at once.
# Run by tiny-testenv/tests/target_lock.rs; standalone: tools/target-lock/test.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
# Each background make in a process group of its own, ended whole by the trap.
set -m
trap 'for j in $(jobs -p); do kill -- "-$j" 2>/dev/null; done; rm -rf "$work"' EXIT
# A folder of its own: the lock is keyed by the folder, so this test never waits for
# (or blocks) the real builds, and a `cargo test` holding the real lock runs it.
export CARGO_TARGET_DIR="$work/target"
unset TINY_TARGET_LOCK CARGO_BUILD_BUILD_DIR CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER

fail() { echo "FAIL: $*" >&2; exit 1; }
# Waits for a fact (a file, a line), not for time; the limit only ends a broken run.
until_true() {
  local what=$1; shift
  for _ in $(seq 600); do "$@" 2>/dev/null && return 0; sleep 0.1; done
  fail "$what"
}

# The stand-in: notes when it starts and ends, and stays until its gate file appears.
cat >"$work/fake-cargo" <<'FAKE'
#!/usr/bin/env bash
name=$1; work=$2
echo "start $name" >>"$work/order"
until [[ -e "$work/gate-$name" ]]; do sleep 0.05; done
if [[ $name == first ]]; then
  # Nested, as a test that runs `make`: must not wait for its own parent's lock.
  make -s -C "$ROOT" demo CARGO="echo nested" >>"$work/nested" || exit 1
fi
echo "end $name" >>"$work/order"
FAKE
chmod +x "$work/fake-cargo"
export ROOT="$root"

make -s -C "$root" demo CARGO="$work/fake-cargo first $work" 2>"$work/first.err" &
first=$!
until_true "the first make to start" grep -q "start first" "$work/order"
make -s -C "$root" demo CARGO="$work/fake-cargo second $work" 2>"$work/second.err" &
second=$!
until_true "the second make to say it waits" grep -q "waiting for $CARGO_TARGET_DIR" "$work/second.err"
grep -q "in use by pid [0-9]* in $root since .*first" "$work/second.err" ||
  fail "the waiting make does not name the holder: $(cat "$work/second.err")"
grep -q "start second" "$work/order" && fail "the second make ran while the first held the lock"
touch "$work/gate-second" "$work/gate-first"
# A nested make that waited for its parent's lock would never let the first end.
until_true "the first make (and the make nested in it) to end" grep -q "end first" "$work/order"
wait "$first" || fail "the first make failed: $(cat "$work/first.err")"
wait "$second" || fail "the second make failed: $(cat "$work/second.err")"
[[ "$(cat "$work/order")" == $'start first\nend first\nstart second\nend second' ]] ||
  fail "not one after the other: $(cat "$work/order")"
grep -q "^nested run -q -p tiny-example-hello --bin hello-demo" "$work/nested" ||
  fail "the nested make did not run: $(cat "$work/nested" 2>/dev/null)"
echo "ok: the second make waited for the first; a nested make ran at once"

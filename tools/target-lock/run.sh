#!/usr/bin/env bash
# tools/target-lock/run.sh CMD [ARG...]: runs CMD holding an exclusive lock on the
# shared build folder ($CARGO_BUILD_BUILD_DIR, else $CARGO_TARGET_DIR), for the whole
# command.
#
# Why: every checkout of tiny (a second clone, a worktree, a CI clone) builds into the
# same per-user folder. The Makefile keeps each checkout's crates apart in it (a
# workspace wrapper found by the checkout's path, docs/testing.md); CI's clones share
# one key (.ci/run), so one CI run must be whole: cargo's own lock covers a build, not
# the tests run after it. The lock also keeps two checkouts' test runs from sharing
# two cores.
#
# Re-entrant: the command runs with TINY_TARGET_LOCK set to the lock's path, and a
# nested call for the same folder (a test that runs `make` or this script) runs at
# once. The lock is held by this shell; the command does not inherit its descriptor,
# so a process left running by a test cannot keep it.
set -euo pipefail
target="${CARGO_BUILD_BUILD_DIR:-${CARGO_TARGET_DIR:?tools/target-lock/run.sh: CARGO_TARGET_DIR is not set}}"
lock="${target%/}.lock"
if [[ "${TINY_TARGET_LOCK:-}" == "$lock" ]]; then
  exec "$@"
fi
mkdir -p "$(dirname "$lock")"
# Opened to append: the holder's line stays readable for those who wait.
exec 9>>"$lock"
if ! flock --nonblock 9; then
  echo "waiting for $target: in use by $(cat "$lock" 2>/dev/null || echo 'an unknown process')" >&2
  flock 9
fi
printf 'pid %s in %s since %s: %s\n' "$$" "$PWD" "$(date -u +%H:%M:%S)" "$*" >"$lock"
export TINY_TARGET_LOCK="$lock"
status=0
"$@" 9>&- || status=$?
: >"$lock"
exit "$status"

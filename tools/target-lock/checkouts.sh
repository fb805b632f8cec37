#!/usr/bin/env bash
# Two checkouts sharing the per-user build folder through the Makefile never see each
# other's crates (docs/testing.md, "The shared target folder"). Each checkout is the
# real Makefile and tools/target-lock/ beside a two-crate workspace: `a` (v() returns the
# checkout's number), `b` (calls it; a doctest, an integration test and a binary the
# tests start through CARGO_BIN_EXE_b-b). Every check compares b::v() with the number the
# checkout's own file says, compiled into the test itself.
#   1. one after the other: B's sources are older than A's last build, which used to
#      make cargo take A's artifacts for B's (fresh by mtime, same file names);
#   2. at once: while B's `make` runs its tests, a plain `cargo build` in A (no make,
#      no lock, as in the main checkout) rebuilds `a`; B's doctest used to fail with
#      E0460/E0463 and its test started A's binary.
# Run by tiny-testenv/tests/target_lock.rs; standalone: tools/target-lock/checkouts.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
set -m
trap 'for j in $(jobs -p); do kill -- "-$j" 2>/dev/null; done; rm -rf "$work"' EXIT
# A shared folder of its own: the real one is neither used nor locked.
export CARGO_TARGET_DIR="$work/shared"
unset TINY_TARGET_LOCK CARGO_BUILD_BUILD_DIR CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER
unset RUSTC_WORKSPACE_WRAPPER RUSTC_WRAPPER CARGO_BUILD_RUSTC_WRAPPER
export CARGO_TERM_COLOR=never

fail() { echo "FAIL: $*" >&2; exit 1; }
until_true() {
  local what=$1; shift
  for _ in $(seq 1200); do "$@" 2>/dev/null && return 0; sleep 0.1; done
  fail "$what"
}

# checkout DIR N: a checkout whose `a::v()` returns N.
checkout() {
  local dir=$1 n=$2
  mkdir -p "$dir/tools" "$dir/a/src" "$dir/b/src/bin" "$dir/b/tests"
  cp "$root/Makefile" "$dir/"
  cp -r "$root/tools/target-lock" "$dir/tools/"
  printf '[workspace]\nmembers = ["a", "b"]\nresolver = "2"\n' >"$dir/Cargo.toml"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n' a >"$dir/a/Cargo.toml"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\na = { path = "../a" }\n' b >"$dir/b/Cargo.toml"
  echo "$n" >"$dir/value"
  echo "pub fn v() -> u32 { $n }" >"$dir/a/src/lib.rs"
  cat >"$dir/b/src/lib.rs" <<'RS'
/// ```
/// assert_eq!(b::v(), include!(concat!(env!("CARGO_MANIFEST_DIR"), "/../value")));
/// ```
pub fn v() -> u32 { a::v() }

#[cfg(test)]
mod tests {
    // Runs first: holds this run in its test phase until the gate file appears.
    #[test]
    fn gate() {
        if let Ok(gate) = std::env::var("TL_GATE") {
            std::fs::write(format!("{gate}.reached"), "").unwrap();
            while !std::path::Path::new(&gate).exists() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}
RS
  echo 'fn main() { println!("{}", b::v()); }' >"$dir/b/src/bin/b-b.rs"
  cat >"$dir/b/tests/own.rs" <<'RS'
const OWN: u32 = include!(concat!(env!("CARGO_MANIFEST_DIR"), "/../value"));
#[test]
fn the_library_is_this_checkouts() { assert_eq!(b::v(), OWN); }
#[test]
fn the_binary_is_this_checkouts() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_b-b")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), OWN.to_string());
}
RS
  (cd "$dir" && cargo generate-lockfile --offline -q)
}

# The stand-in for cargo that `make demo` runs (with the Makefile's environment and
# lock): the scratch workspace's tests, whatever the arguments.
cat >"$work/cargo-test" <<'SH'
#!/usr/bin/env bash
exec cargo test --offline -q 2>&1
SH
chmod +x "$work/cargo-test"
make_test() { make -s -C "$1" demo CARGO="$work/cargo-test"; }

# B first, then A: B's files are the older ones.
checkout "$work/B" 1
checkout "$work/A" 2
make_test "$work/A" >"$work/a.log" || fail "A's own tests: $(cat "$work/a.log")"
make_test "$work/B" >"$work/b.log" || fail "one after the other, B ran A's crates: $(cat "$work/b.log")"
echo "ok: one after the other, each checkout tested its own crates"

# At once: B held in its test phase while a plain cargo in A rebuilds `a` and `b-b`.
TL_GATE="$work/gate" make_test "$work/B" >"$work/b2.log" &
tested=$!
until_true "B's tests to reach the gate" test -e "$work/gate.reached"
echo "pub fn v() -> u32 { 3 }" >"$work/A/a/src/lib.rs"
echo 3 >"$work/A/value"
(cd "$work/A" && cargo build --offline -q) || fail "the plain cargo build in A"
touch "$work/gate"
wait "$tested" || fail "at once, B's tests met A's build: $(cat "$work/b2.log")"
echo "ok: at once, B's doctest and binary were its own while A built"

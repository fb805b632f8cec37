//! Run ids and step keys: the identity of a durable run and of each hop in it.
//!
//! A step key must come out the same when a redelivered handler emits again, because
//! the broker dedupes on it (`Nats-Msg-Id`) and the ledger is keyed by it. So a child
//! key is a hash of its parent's key, the edge and the emit's ordinal on that edge in
//! the handler call, never a counter shared across edges: fan-out order between
//! edges may change from one delivery to the next, the order of emits on one edge
//! does not.

use std::sync::{Mutex, PoisonError};

use rustc_hash::FxHashMap as HashMap;

/// A new run id: a random UUID v4, lower-case, 36 characters (Go's `uuid.NewString`).
///
/// # Panics
///
/// When the operating system has no randomness to give, as Go's `uuid.NewString`
/// does: a run id that is not random could collide with another run's ledger.
pub fn new_run_id() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the operating system's random number generator failed");
    uuid(b, 4)
}

/// The id of the run that the stored message `seed` names starts: the same for the
/// same seed, so that a redelivered message that starts a run (its replica died
/// after the first step ran and before it was recorded) continues that run rather
/// than starting a second one. A UUID shaped as [`new_run_id`]'s, of version 8
/// (RFC 9562's application-defined one): two FNV-1a 64-bit hashes of the seed.
///
/// The seed must name one message for good, never another: JetStream's transport
/// uses the stream, the message's sequence in it and the time it was stored.
///
/// ```
/// use tiny_sdk::run::run_id_from;
/// let id = run_id_from("module-edges:42:1764045600000000000");
/// assert_eq!(id, run_id_from("module-edges:42:1764045600000000000"));
/// assert_ne!(id, run_id_from("module-edges:43:1764045600000000000"));
/// assert_eq!((id.len(), &id[14..15]), (36, "8"));
/// ```
pub fn run_id_from(seed: &str) -> String {
    let mut b = [0u8; 16];
    for (half, salt) in b.chunks_exact_mut(8).zip([&b"run-id:0|"[..], b"run-id:1|"]) {
        let mut h = Fnv1a64::new();
        h.write(salt);
        h.write(seed.as_bytes());
        half.copy_from_slice(&h.0.to_be_bytes());
    }
    uuid(b, 8)
}

/// `b` as a lower-case UUID of `version`, RFC 4122 variant.
fn uuid(mut b: [u8; 16], version: u8) -> String {
    b[6] = (b[6] & 0x0f) | (version << 4);
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let mut id = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    id
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The step key of the message that starts a run: `<runID>.root`.
pub fn root_step_key(run_id: &str) -> String {
    format!("{run_id}.root")
}

/// The step key of the `n`th emit (from 0) over edge `edge_id` by the handler call
/// whose own step key is `parent_step_key`: `<runID>.` and the FNV-1a 64-bit hash of
/// `<parent>|<edgeID>|<n>` in 16 lower-case hex digits, as the Go SDK derives it.
///
/// ```
/// use tiny_sdk::run::{child_step_key, root_step_key};
/// let run = "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50";
/// let key = child_step_key(run, &root_step_key(run), "edge-1", 0);
/// assert_eq!(key, "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.d48c93a48f6993f3");
/// ```
pub fn child_step_key(run_id: &str, parent_step_key: &str, edge_id: &str, n: u32) -> String {
    let mut h = Fnv1a64::new();
    h.write(parent_step_key.as_bytes());
    h.write(b"|");
    h.write(edge_id.as_bytes());
    h.write(b"|");
    h.write(n.to_string().as_bytes());
    format!("{run_id}.{:016x}", h.0)
}

/// FNV-1a, 64 bits (Go's `hash/fnv` `New64a`): the hash the step keys are made of.
struct Fnv1a64(u64);

impl Fnv1a64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Self(Self::OFFSET_BASIS)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }
}

/// The per-edge emit ordinals of one handler call: `next("e")` gives 0, 1, 2… for
/// edge `e`, independently of the other edges, to feed [`child_step_key`]. Make one
/// per handler call; it may be shared by the call's concurrent emits.
#[derive(Debug, Default)]
pub struct StepCounter {
    next: Mutex<HashMap<String, u32>>,
}

impl StepCounter {
    /// A counter with every edge at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ordinal of the next emit over `edge_id`: 0 the first time, then one more
    /// on each call.
    pub fn next(&self, edge_id: &str) -> u32 {
        // A panic elsewhere while holding the lock leaves the map consistent (one
        // insert or increment), so a poisoned lock is still good to use.
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = next.get_mut(edge_id) {
            let this = *n;
            *n = n.saturating_add(1);
            this
        } else {
            next.insert(edge_id.to_owned(), 1);
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_random_lower_case_v4_uuids() {
        let a = new_run_id();
        let b = new_run_id();
        assert_ne!(a, b);
        for id in [&a, &b] {
            assert_eq!(id.len(), 36, "{id}");
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12],
                "{id}"
            );
            assert!(
                id.chars()
                    .all(|c| c == '-' || c.is_ascii_digit() || c.is_ascii_lowercase()),
                "{id}"
            );
            assert!(parts[2].starts_with('4'), "version 4: {id}");
            assert!(
                matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
                "variant: {id}"
            );
        }
    }

    #[test]
    fn a_run_id_from_a_seed_is_the_seeds_alone_and_uuid_shaped() {
        let a = run_id_from("module-edges:7:1764045600123456789");
        assert_eq!(a, run_id_from("module-edges:7:1764045600123456789"));
        let others = [
            run_id_from("module-edges:8:1764045600123456789"),
            run_id_from("module-edges:7:1764045600123456780"),
            run_id_from(""),
        ];
        for other in &others {
            assert_ne!(&a, other);
        }
        for id in others.iter().chain([&a]) {
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12],
                "{id}"
            );
            assert!(parts[2].starts_with('8'), "version 8: {id}");
            assert!(
                matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'),
                "variant: {id}"
            );
            assert!(
                id.chars()
                    .all(|c| c == '-' || c.is_ascii_digit() || c.is_ascii_lowercase()),
                "{id}"
            );
        }
    }

    #[test]
    fn fnv1a_64_matches_the_published_vectors() {
        // From the FNV reference test suite (isthe.com/chongo/tech/comp/fnv).
        for (input, want) in [
            (&b""[..], 0xcbf2_9ce4_8422_2325_u64),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut h = Fnv1a64::new();
            h.write(input);
            assert_eq!(h.0, want, "{input:?}");
        }
    }

    #[test]
    fn the_counter_counts_each_edge_on_its_own() {
        let c = StepCounter::new();
        assert_eq!(c.next("a"), 0);
        assert_eq!(c.next("a"), 1);
        assert_eq!(c.next("b"), 0);
        assert_eq!(c.next(""), 0);
        assert_eq!(c.next("a"), 2);
        assert_eq!(c.next("b"), 1);
        // Shared by a handler call's concurrent emits.
        fn shareable<T: Send + Sync>(_: &T) {}
        shareable(&c);
    }
}

//! Where a run's ledger and run-scoped state live in the store: keys under
//! `exec/<runID>/`, as the Go SDK lays out the `TINY_EXEC` bucket.
//!
//! - `exec/<runID>/step/<stepKey>`: the [`StepRecord`](super::StepRecord) of a hop;
//! - `exec/<runID>/redrive/<stepKey>`: how many times the reconciler re-drove the hop
//!   (ASCII decimal);
//! - `exec/<runID>/call/<stepKey>/<name>/<n>`: the answer of the `n`th outside call
//!   `name` a hop's handler made ([`Ctx::outside`](crate::Ctx::outside)), JSON, the
//!   name encoded by [`encode_call_name`];
//! - `exec/<runID>/entry/<runID>.root`: the message that started the run
//!   ([`RunEntry`](super::RunEntry)), tiny's, written by the run's first step;
//! - anything else under `exec/<runID>/`: run-scoped state of components (an LLM
//!   module's response cache at `llm/<stepKey>`, say), which the ledger leaves alone.

/// Maps a key into the characters a NATS KV key may hold, as Go's `sanitizeKey`
/// does: ASCII letters, digits and `- _ / . =` stay, every other character (not
/// byte) becomes `_`. Slashes stay so that prefixes still list.
pub fn sanitize_key(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '/' | '.' | '=') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The prefix of every key of run `run_id`: `exec/<runID>/`, sanitised.
pub fn exec_prefix(run_id: &str) -> String {
    sanitize_key(&format!("exec/{run_id}/"))
}

/// The store key of run-scoped state `user_key` of run `run_id`: the
/// [`exec_prefix`] and the sanitised `user_key` (Go's `State.Scoped("execution", id)`).
pub fn scoped_key(run_id: &str, user_key: &str) -> String {
    let mut key = exec_prefix(run_id);
    key.push_str(&sanitize_key(user_key));
    key
}

/// The key of the ledger record of hop `step_key`: `exec/<runID>/step/<stepKey>`.
pub fn step_record_key(run_id: &str, step_key: &str) -> String {
    scoped_key(run_id, &format!("{STEP}/{step_key}"))
}

/// The prefix of every ledger record of run `run_id`: `exec/<runID>/step/`.
pub fn step_records_prefix(run_id: &str) -> String {
    scoped_key(run_id, &format!("{STEP}/"))
}

/// The key of hop `step_key`'s re-drive counter: `exec/<runID>/redrive/<stepKey>`.
pub fn redrive_key(run_id: &str, step_key: &str) -> String {
    scoped_key(run_id, &format!("{REDRIVE}/{step_key}"))
}

/// The key of the answer of the `n`th (from 0) outside call `name` made by hop
/// `step_key`'s handler: `exec/<runID>/call/<stepKey>/<name>/<n>`, the name written
/// by [`encode_call_name`], so that the key gives it back ([`decode_call_name`]) and
/// two names never share a key.
pub fn call_key(run_id: &str, step_key: &str, name: &str, n: u32) -> String {
    scoped_key(run_id, &format!("{CALL}/{step_key}/{}/{n}", encode_call_name(name)))
}

/// An outside call's name as one part of a ledger key, reversibly: ASCII letters,
/// digits and `-` stay, every other byte becomes `_` and two lower-case hex digits
/// (`"GET /users"` -> `GET_20_2fusers`, `"a_b"` -> `a_5fb`). Sanitising alone would
/// make `"a b"` and `"a_b"` one key, and a `.` could make an empty subject token.
pub fn encode_call_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for &b in name.as_bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push('_');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// The name [`encode_call_name`] wrote; `None` for a part it cannot have written.
pub fn decode_call_name(encoded: &str) -> Option<String> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' {
            let hex = encoded.get(i + 1..i + 3)?;
            if !hex.bytes().all(|h| h.is_ascii_digit() || (b'a'..=b'f').contains(&h)) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The key of the message that started run `run_id`:
/// `exec/<runID>/entry/<runID>.root` (laid out as a step's, so that it parses as one
/// and no plausible run-scoped state key meets it).
pub fn entry_key(run_id: &str) -> String {
    scoped_key(run_id, &format!("{ENTRY}/{}", super::root_step_key(run_id)))
}

/// The prefix of every outside call answer of run `run_id`: `exec/<runID>/call/`.
pub fn calls_prefix(run_id: &str) -> String {
    scoped_key(run_id, &format!("{CALL}/"))
}

const STEP: &str = "step";
const REDRIVE: &str = "redrive";
const CALL: &str = "call";
const ENTRY: &str = "entry";

/// A key of the ledger, taken apart by [`parse_ledger_key`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LedgerKey {
    /// The run, as it appears in the key (sanitised).
    pub run_id: String,
    /// A step record or a re-drive counter.
    pub kind: LedgerKind,
    /// The hop's step key: everything after the kind, `/` included.
    pub step_key: String,
}

/// What a [`LedgerKey`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LedgerKind {
    /// `exec/<runID>/step/<stepKey>`: a [`StepRecord`](super::StepRecord).
    Step,
    /// `exec/<runID>/redrive/<stepKey>`: a re-drive counter.
    Redrive,
    /// `exec/<runID>/call/<stepKey>/<name>/<n>`: an outside call's answer (the
    /// [`LedgerKey::step_key`] is then `<stepKey>/<name>/<n>`). Removed with its run.
    Call,
    /// `exec/<runID>/entry/<runID>.root`: the run's first message. Removed with its
    /// run.
    Entry,
}

/// Takes a store key apart if it is a ledger key (`exec/<runID>/step/<stepKey>`,
/// `exec/<runID>/redrive/<stepKey>` or `exec/<runID>/call/...`); `None` for any other key, such as run-scoped
/// state (`exec/<runID>/llm/<stepKey>`). Splits as the Go reconciler does: the run
/// id is the second `/`-separated part, the step key all after the third `/`.
pub fn parse_ledger_key(key: &str) -> Option<LedgerKey> {
    let mut parts = key.splitn(4, '/');
    let (exec, run_id, kind, step_key) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if exec != "exec" {
        return None;
    }
    let kind = match kind {
        STEP => LedgerKind::Step,
        REDRIVE => LedgerKind::Redrive,
        CALL => LedgerKind::Call,
        ENTRY => LedgerKind::Entry,
        _ => return None,
    };
    Some(LedgerKey {
        run_id: run_id.to_owned(),
        kind,
        step_key: step_key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitising_keeps_the_kv_charset_and_replaces_each_other_character() {
        assert_eq!(sanitize_key("aZ09-_/.="), "aZ09-_/.=");
        assert_eq!(sanitize_key("a b:c*d>e"), "a_b_c_d_e");
        // One `_` per character, not per byte: `ü` is two bytes, `😀` four.
        assert_eq!(sanitize_key("ü😀|"), "___");
        assert_eq!(sanitize_key(""), "");
    }

    #[test]
    fn keys_are_laid_out_under_the_runs_prefix() {
        let run = "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50";
        assert_eq!(exec_prefix(run), format!("exec/{run}/"));
        assert_eq!(step_record_key(run, "k.root"), format!("exec/{run}/step/k.root"));
        assert_eq!(redrive_key(run, "k.00ff"), format!("exec/{run}/redrive/k.00ff"));
        assert_eq!(step_records_prefix(run), format!("exec/{run}/step/"));
        assert_eq!(scoped_key(run, "llm/turn 1"), format!("exec/{run}/llm/turn_1"));
        // The run id and the user key are sanitised each on its own.
        assert_eq!(scoped_key("r:1", "a:b"), "exec/r_1/a_b");
    }

    #[test]
    fn ledger_keys_parse_and_other_keys_do_not() {
        assert_eq!(
            parse_ledger_key("exec/run-1/step/run-1.00ff"),
            Some(LedgerKey {
                run_id: "run-1".into(),
                kind: LedgerKind::Step,
                step_key: "run-1.00ff".into()
            })
        );
        assert_eq!(
            parse_ledger_key("exec/run-1/redrive/run-1.root"),
            Some(LedgerKey {
                run_id: "run-1".into(),
                kind: LedgerKind::Redrive,
                step_key: "run-1.root".into()
            })
        );
        // Everything after the kind is the step key, as Go's SplitN(key, "/", 4).
        assert_eq!(
            parse_ledger_key("exec/r/step/a/b").map(|k| k.step_key),
            Some("a/b".to_owned())
        );
        assert_eq!(
            parse_ledger_key("exec/r/step/").map(|k| k.step_key),
            Some(String::new())
        );
        for other in [
            "exec/r/llm/r.root",
            "exec/r/cart",
            "exec/r/step",
            "exec/r",
            "exec",
            "",
            "state/r/step/x",
            "EXEC/r/step/x",
            "exec/r/Step/x",
        ] {
            assert_eq!(parse_ledger_key(other), None, "{other}");
        }
        assert_eq!(
            parse_ledger_key(&entry_key("r")).map(|k| (k.run_id, k.kind)),
            Some(("r".to_owned(), LedgerKind::Entry))
        );
        // What the key functions write, parses back.
        let key = parse_ledger_key(&redrive_key("r", "r.0123")).expect("a ledger key");
        assert_eq!(
            (key.run_id.as_str(), key.kind, key.step_key.as_str()),
            ("r", LedgerKind::Redrive, "r.0123")
        );
    }

    #[test]
    fn call_names_are_encoded_reversibly_and_never_collide() {
        let names = [
            "stripe:charge",
            "GET /users",
            "a b",
            "a_b",
            "weather api",
            "x.y",
            "ü",
            "",
        ];
        let keys: std::collections::HashSet<String> = names.iter().map(|n| call_key("r", "r.root", n, 0)).collect();
        assert_eq!(keys.len(), names.len(), "{keys:?}");
        for name in names {
            let encoded = encode_call_name(name);
            assert_eq!(sanitize_key(&encoded), encoded, "a KV key part: {encoded}");
            assert!(!encoded.contains('.') && !encoded.contains('/'), "{encoded}");
            assert_eq!(decode_call_name(&encoded).as_deref(), Some(name), "{encoded}");
        }
        assert_eq!(encode_call_name("GET /users"), "GET_20_2fusers");
        assert_eq!(decode_call_name("a_zz"), None);
    }
}

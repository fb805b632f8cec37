//! The Go SDK's time arithmetic in `+` and `-` on two strings: an RFC 3339 time plus or
//! minus a Go duration is a time, and two durations give `"<seconds>s"`.
//!
//! The cases are tried in Go's order: a time on the left with a duration on the right, a
//! time on the right with a duration on the left (so `"1h" - t` is `t - 1h`, as in Go),
//! then two durations. Anything else is not time arithmetic.

use crate::duration;
use crate::time::{Instant, format_rfc3339, parse_rfc3339};

/// `a + b` (or `a - b` when `subtract`) if the strings are a time and a duration or two
/// durations; `None` otherwise.
pub(crate) fn apply(subtract: bool, a: &str, b: &str) -> Option<String> {
    // Cheap filters first: every `+` of two strings comes through here.
    let da = could_be_duration(a).then(|| duration::parse(a)).flatten();
    let db = could_be_duration(b).then(|| duration::parse(b)).flatten();
    if da.is_none() && db.is_none() {
        return None;
    }
    let shift = |t: Instant, d: i64| {
        let d = i128::from(d);
        format_rfc3339(Instant {
            unix_nanos: if subtract { t.unix_nanos - d } else { t.unix_nanos + d },
            ..t
        })
    };
    if let (Some(d), Some(t)) = (db, parse_rfc3339(a)) {
        return Some(shift(t, d));
    }
    if let (Some(d), Some(t)) = (da, parse_rfc3339(b)) {
        return Some(shift(t, d));
    }
    let (x, y) = (duration::seconds(da?), duration::seconds(db?));
    let s = if subtract { x - y } else { x + y };
    Some(format!("{}s", duration::go_number(s)))
}

/// A duration starts with a sign, a digit or a point.
fn could_be_duration(s: &str) -> bool {
    s.as_bytes()
        .first()
        .is_some_and(|b| matches!(b, b'+' | b'-' | b'.' | b'0'..=b'9'))
}

//! [`Timestamp`]: an instant written as Go writes a `time.Time` in JSON.

use std::{
    cmp::Ordering,
    fmt,
    hash::{Hash, Hasher},
    str::FromStr,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::error::{Error, Result};

/// An instant with the UTC offset it was written with: the `startedAt` and
/// `completedAt` of a ledger record.
///
/// It is written as Go's `time.Time` is in JSON (RFC 3339 with nanoseconds, trailing
/// zeros dropped, `Z` for UTC: `2026-08-22T10:11:12.5Z`), and reads any RFC 3339
/// time, whatever its offset (`2026-08-22T12:11:12.5+02:00`), keeping the offset so
/// that it is written back as it was read. Comparisons (`==`, `<`, hashing) are
/// between instants: the offset does not count.
///
/// ```
/// use tiny_sdk::run::Timestamp;
/// let utc: Timestamp = "2026-08-22T10:11:12.5Z".parse()?;
/// let cest: Timestamp = "2026-08-22T12:11:12.500+02:00".parse()?;
/// assert_eq!(utc, cest);
/// assert_eq!(cest.to_string(), "2026-08-22T12:11:12.5+02:00");
/// assert_eq!(Timestamp::ZERO.to_string(), "0001-01-01T00:00:00Z");
/// # Ok::<(), tiny_sdk::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z.
    secs: i64,
    nanos: u32,
    /// East of UTC, in seconds (RFC 3339 writes whole minutes).
    offset: i32,
}

// A string to the editor, as it is on the wire.
impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "date-time" })
    }
}

/// Seconds from 0001-01-01 (Go's zero `time.Time`) to the Unix epoch.
const GO_ZERO_UNIX: i64 = -62_135_596_800;
/// Seconds from the Unix epoch to 0000-01-01T00:00:00Z, the first instant Go writes.
const MIN_UNIX: i64 = -62_167_219_200;
/// Seconds from the Unix epoch to 9999-12-31T23:59:59Z, the last second Go writes.
const MAX_UNIX: i64 = 253_402_300_799;

impl Timestamp {
    /// Go's zero `time.Time`, `0001-01-01T00:00:00Z`: what Go writes for a time that
    /// was never set (the `startedAt` of a record the reconciler writes).
    pub const ZERO: Timestamp = Timestamp {
        secs: GO_ZERO_UNIX,
        nanos: 0,
        offset: 0,
    };

    /// The current time, in UTC.
    pub fn now() -> Self {
        let (secs, nanos) = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => (i64::try_from(d.as_secs()).unwrap_or(MAX_UNIX), d.subsec_nanos()),
            // A clock before 1970: count back from the epoch.
            Err(e) => {
                let d = e.duration();
                let secs = -i64::try_from(d.as_secs()).unwrap_or(-MIN_UNIX);
                match d.subsec_nanos() {
                    0 => (secs, 0),
                    n => (secs - 1, 1_000_000_000 - n),
                }
            }
        };
        Self {
            secs: secs.clamp(MIN_UNIX, MAX_UNIX),
            nanos,
            offset: 0,
        }
    }

    /// The UTC instant `secs` seconds and `nanos` nanoseconds after the Unix epoch;
    /// `None` if `nanos` is a second or more, or the instant is outside the years
    /// 0000 to 9999 (which Go refuses to write).
    pub fn from_unix(secs: i64, nanos: u32) -> Option<Self> {
        (nanos < 1_000_000_000 && (MIN_UNIX..=MAX_UNIX).contains(&secs)).then_some(Self { secs, nanos, offset: 0 })
    }

    /// The UTC instant `millis` milliseconds after the Unix epoch (see
    /// [`from_unix`](Self::from_unix)).
    pub fn from_unix_millis(millis: i64) -> Option<Self> {
        let nanos = u32::try_from(millis.rem_euclid(1000) * 1_000_000).ok()?;
        Self::from_unix(millis.div_euclid(1000), nanos)
    }

    /// Whole seconds since the Unix epoch (negative before it).
    pub fn unix_seconds(&self) -> i64 {
        self.secs
    }

    /// The nanoseconds past [`unix_seconds`](Self::unix_seconds), below a second.
    pub fn subsec_nanos(&self) -> u32 {
        self.nanos
    }

    /// The UTC offset it was written with, in seconds east of UTC (0 for `Z`).
    pub fn offset_seconds(&self) -> i32 {
        self.offset
    }

    /// Whether it is Go's zero time ([`ZERO`](Self::ZERO)), at whatever offset.
    pub fn is_zero(&self) -> bool {
        self.secs == GO_ZERO_UNIX && self.nanos == 0
    }

    /// How long after `earlier` it is; zero if it is not after it.
    pub fn saturating_duration_since(&self, earlier: Timestamp) -> Duration {
        let nanos = self.nanos_since(earlier);
        if nanos <= 0 {
            return Duration::ZERO;
        }
        let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
        // In 0..1e9 here, so the conversion cannot fail.
        let sub = u32::try_from(nanos % 1_000_000_000).unwrap_or(0);
        Duration::new(secs, sub)
    }

    /// Nanoseconds from `earlier` to `self`, negative if `earlier` is later (Go's
    /// `Sub`, without its saturation: the years 0000 to 9999 fit in an `i128`).
    pub(crate) fn nanos_since(&self, earlier: Timestamp) -> i128 {
        (i128::from(self.secs) - i128::from(earlier.secs)) * 1_000_000_000 + i128::from(self.nanos)
            - i128::from(earlier.nanos)
    }

    /// Reads an RFC 3339 time (`2026-08-22T10:11:12.5Z`,
    /// `2026-08-22T12:11:12+02:00`), as Go's `time.Time` reads one from JSON: a
    /// four-digit year, an existing date, hours to 23, seconds to 59, up to nine
    /// digits of a second kept, and an offset of `Z` or `±hh:mm`.
    pub fn parse(s: &str) -> Result<Self> {
        parse_rfc3339(s.as_bytes()).ok_or_else(|| Error::permanent(format!("not an RFC 3339 time: {s:?}")))
    }
}

fn parse_rfc3339(s: &[u8]) -> Option<Timestamp> {
    // `2006-01-02T15:04:05` is fixed-width.
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' || !matches!(s[10], b'T' | b't') || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let year = digits(&s[0..4])?;
    let month = digits(&s[5..7])?;
    let day = digits(&s[8..10])?;
    let hour = digits(&s[11..13])?;
    let minute = digits(&s[14..16])?;
    let second = digits(&s[17..19])?;
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }

    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some((b'.' | b',', frac)) = rest.split_first() {
        let len = frac.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        // Digits past the ninth are below a nanosecond: dropped, as Go does.
        for (i, &d) in frac[..len].iter().enumerate() {
            if i < 9 {
                nanos = nanos * 10 + u32::from(d - b'0');
            }
        }
        nanos *= 10u32.pow(9u32.saturating_sub(u32::try_from(len).ok()?));
        rest = &frac[len..];
    }

    let offset = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if h > 23 || m > 59 {
                return None;
            }
            let offset = i32::try_from(h * 3600 + m * 60).ok()?;
            if *sign == b'-' { -offset } else { offset }
        }
        _ => return None,
    };

    let local = days_from_civil(i64::from(year), month, day) * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    Some(Timestamp {
        secs: local - i64::from(offset),
        nanos,
        offset,
    })
}

/// The number the ASCII digits spell, if they all are digits.
fn digits(s: &[u8]) -> Option<u32> {
    s.iter()
        .try_fold(0u32, |n, &b| b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0')))
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of a day counted from 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // In 1..=31 and 1..=12, so the conversions cannot fail.
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    /// RFC 3339 with nanoseconds, trailing zeros dropped (Go's `time.RFC3339Nano`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let local = self.secs + i64::from(self.offset);
        let (year, month, day) = civil_from_days(local.div_euclid(86_400));
        let in_day = local.rem_euclid(86_400);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            in_day / 3600,
            in_day / 60 % 60,
            in_day % 60
        )?;
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        if self.offset == 0 {
            f.write_str("Z")
        } else {
            let sign = if self.offset < 0 { '-' } else { '+' };
            let minutes = self.offset.unsigned_abs() / 60;
            write!(f, "{sign}{:02}:{:02}", minutes / 60, minutes % 60)
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

impl Default for Timestamp {
    /// [`Timestamp::ZERO`], as Go's zero `time.Time`.
    fn default() -> Self {
        Self::ZERO
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        (self.secs, self.nanos) == (other.secs, other.nanos)
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.secs, self.nanos).cmp(&(other.secs, other.nanos))
    }
}

impl Hash for Timestamp {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.secs, self.nanos).hash(state);
    }
}

impl FromStr for Timestamp {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    /// An RFC 3339 string, or `null` for the zero time (as Go reads one).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl de::Visitor<'_> for Visitor {
            type Value = Timestamp;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 time")
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Timestamp, E> {
                parse_rfc3339(s.as_bytes()).ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Timestamp, E> {
                Ok(Timestamp::ZERO)
            }

            fn visit_none<E: de::Error>(self) -> Result<Timestamp, E> {
                Ok(Timestamp::ZERO)
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn writes_as_go_writes_rfc3339nano() {
        // Worked out with Go's `time.Time.MarshalJSON` (Go's stdlib, time.RFC3339Nano).
        for (secs, nanos, want) in [
            (GO_ZERO_UNIX, 0, "0001-01-01T00:00:00Z"),
            (MAX_UNIX, 999_999_999, "9999-12-31T23:59:59.999999999Z"),
            (MIN_UNIX, 1, "0000-01-01T00:00:00.000000001Z"),
            (1_709_251_199, 10, "2024-02-29T23:59:59.00000001Z"),
            (-1, 999_000_000, "1969-12-31T23:59:59.999Z"),
            (1_787_393_472, 500_000_000, "2026-08-22T10:11:12.5Z"),
        ] {
            let t = Timestamp::from_unix(secs, nanos).expect("in range");
            assert_eq!(t.to_string(), want);
            assert_eq!(ts(want), t, "{want}");
            assert_eq!(ts(want).to_string(), want);
        }
        assert!(Timestamp::ZERO.is_zero());
        assert_eq!(Timestamp::default(), Timestamp::ZERO);
    }

    #[test]
    fn reads_any_offset_and_compares_instants() {
        let utc = ts("2026-08-22T10:11:12.987654Z");
        let west = ts("2026-08-22T04:41:12.987654-05:30");
        let east = ts("2026-08-22T12:11:12.987654+02:00");
        assert_eq!(west, utc);
        assert_eq!(east, utc);
        assert_eq!(west.offset_seconds(), -(5 * 3600 + 30 * 60));
        assert_eq!(west.to_string(), "2026-08-22T04:41:12.987654-05:30");
        assert_eq!(east.to_string(), "2026-08-22T12:11:12.987654+02:00");
        assert_eq!(utc.unix_seconds(), 1_787_393_472);
        assert_eq!(utc.subsec_nanos(), 987_654_000);
        assert!(ts("2026-08-22T12:11:13+02:00") > utc);
        // A day boundary crossed by the offset.
        assert_eq!(ts("2026-08-23T01:00:00+02:00"), ts("2026-08-22T23:00:00Z"));
        assert_eq!(ts("2026-08-22t10:11:12z"), ts("2026-08-22T10:11:12Z"));
        // Past nine digits, the rest is below a nanosecond.
        assert_eq!(ts("2026-08-22T10:11:12.1234567891Z").subsec_nanos(), 123_456_789);
    }

    #[test]
    fn refuses_what_is_not_an_rfc3339_time() {
        for bad in [
            "",
            "2026-08-22",
            "2026-08-22T10:11:12",
            "2026-08-22 10:11:12Z",
            "2026-02-29T10:11:12Z",
            "2026-13-01T10:11:12Z",
            "2026-08-32T10:11:12Z",
            "2026-08-22T24:00:00Z",
            "2026-08-22T10:60:00Z",
            "2026-08-22T10:11:60Z",
            "2026-08-22T10:11:12.Z",
            "2026-08-22T10:11:12+0200",
            "2026-08-22T10:11:12+24:00",
            "2026-08-22T10:11:12Z ",
            "+2026-08-22T10:11:12Z",
            "２026-08-22T10:11:12Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Timestamp::parse("2024-02-29T10:11:12Z").is_ok());
    }

    #[test]
    fn durations_saturate_and_unix_bounds_hold() {
        let a = ts("2026-08-22T10:00:00Z");
        let b = ts("2026-08-22T10:06:00.5Z");
        assert_eq!(b.saturating_duration_since(a), Duration::from_millis(360_500));
        assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
        assert_eq!(a.nanos_since(b), -360_500_000_000);
        assert_eq!(Timestamp::from_unix(0, 1_000_000_000), None);
        assert_eq!(Timestamp::from_unix(MAX_UNIX + 1, 0), None);
        assert_eq!(Timestamp::from_unix(MIN_UNIX - 1, 0), None);
        assert_eq!(Timestamp::from_unix_millis(-1), Timestamp::from_unix(-1, 999_000_000));
        let now = Timestamp::now();
        assert!(now > ts("2020-01-01T00:00:00Z") && now.offset_seconds() == 0);
    }

    #[test]
    fn json_null_reads_as_the_zero_time() {
        let t: Timestamp = serde_json::from_str("null").expect("null");
        assert!(t.is_zero());
        let t: Timestamp = serde_json::from_str("\"2026-08-22T10:11:12+02:00\"").expect("a time");
        assert_eq!(
            serde_json::to_string(&t).expect("json"),
            "\"2026-08-22T10:11:12+02:00\""
        );
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
        assert!(serde_json::from_str::<Timestamp>("1").is_err());
    }
}

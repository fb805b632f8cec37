//! RFC 3339 timestamps to and from Unix time, without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds of 0000-01-01T00:00:00Z.
const MIN_SECONDS: i64 = -62_167_219_200;
/// Seconds of 9999-12-31T23:59:59Z.
const MAX_SECONDS: i64 = 253_402_300_799;

/// The current Unix time in whole seconds.
pub(crate) fn now_seconds() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`. `None` outside years 0000–9999.
pub(crate) fn rfc3339(seconds: i64) -> Option<String> {
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return None;
    }
    let days = seconds.div_euclid(86_400);
    let secs_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60
    ))
}

/// An instant read from an RFC 3339 timestamp, with the UTC offset it was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Instant {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    pub(crate) unix_nanos: i128,
    /// The offset from UTC in seconds (`+02:00` is 7200).
    pub(crate) offset: i32,
}

/// Reads a timestamp the way Go's `time.Parse(time.RFC3339, s)` does:
/// `YYYY-MM-DDTHH:MM:SS`, an optional fraction (`.5` or `,5`), then `Z` or `±HH:MM`.
/// Like Go, it also takes a one-digit hour, and rejects a lowercase `t`/`z`, a missing
/// zone, and days, hours, minutes or seconds out of range. `None` when `s` is not one.
pub(crate) fn parse_rfc3339(s: &str) -> Option<Instant> {
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        digits.iter().try_fold(0i64, |acc, d| {
            d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
        })
    };
    let year = num(0..4)?;
    let month = num(5..7)?;
    let day = num(8..10)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || b.get(10) != Some(&b'T') {
        return None;
    }
    // Go's layout hour "15" takes one or two digits.
    let hour_len = if b.get(12).is_some_and(u8::is_ascii_digit) {
        2
    } else {
        1
    };
    let hour = num(11..11 + hour_len)?;
    let at = 11 + hour_len;
    if b.get(at) != Some(&b':') || b.get(at + 3) != Some(&b':') {
        return None;
    }
    let minute = num(at + 1..at + 3)?;
    let second = num(at + 4..at + 6)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut rest = &s[at + 6..];
    let mut nanos = 0i64;
    if let Some(frac) = rest.strip_prefix(['.', ',']) {
        let len = frac.find(|c: char| !c.is_ascii_digit()).unwrap_or(frac.len());
        if len == 0 {
            return None;
        }
        // Nanosecond precision; further digits are dropped.
        for (i, d) in frac.bytes().take(len).enumerate() {
            if i < 9 {
                nanos = nanos * 10 + i64::from(d - b'0');
            }
        }
        for _ in len..9 {
            nanos *= 10;
        }
        rest = &frac[len..];
    }
    let offset = match rest.as_bytes() {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| -> Option<i32> {
                (a.is_ascii_digit() && b.is_ascii_digit()).then(|| i32::from(a - b'0') * 10 + i32::from(b - b'0'))
            };
            let (h, m) = (two(*h1, *h2)?, two(*m1, *m2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let secs = (h * 60 + m) * 60;
            if *sign == b'-' { -secs } else { secs }
        }
        _ => return None,
    };
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let utc = local - i64::from(offset);
    Some(Instant {
        unix_nanos: i128::from(utc) * 1_000_000_000 + i128::from(nanos),
        offset,
    })
}

/// Formats an instant as Go's `Format(time.RFC3339)` does: in its own offset, the
/// fraction dropped (not rounded), `Z` for a zero offset; years outside 0000–9999 are
/// written as Go writes them (`10000-01-01T...`, `-0001-12-31T...`).
pub(crate) fn format_rfc3339(t: Instant) -> String {
    let local_nanos = t.unix_nanos + i128::from(t.offset) * 1_000_000_000;
    let secs = local_nanos.div_euclid(1_000_000_000);
    // Any instant reachable from years 0000-9999 plus a duration fits easily.
    let secs = i64::try_from(secs).unwrap_or(if secs < 0 { i64::MIN / 2 } else { i64::MAX / 2 });
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    let year = if year < 0 {
        format!("-{:04}", year.unsigned_abs())
    } else {
        format!("{year:04}")
    };
    let zone = if t.offset == 0 {
        "Z".to_owned()
    } else {
        let sign = if t.offset < 0 { '-' } else { '+' };
        let m = t.offset.unsigned_abs() / 60;
        format!("{sign}{:02}:{:02}", m / 60, m % 60)
    };
    format!(
        "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}{zone}",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A proleptic Gregorian date to days since 1970-01-01; the inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12; // month from March, [0, 11]
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
/// Howard Hinnant's `civil_from_days` algorithm.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1
    let mp = (5 * doy + 2) / 153; // month from March, [0, 11]
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_timestamps() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (1_704_164_645, "2024-01-02T03:04:05Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_164_800, "2024-02-29T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (-86_400 * 365, "1969-01-01T00:00:00Z"),
            (4_102_444_800, "2100-01-01T00:00:00Z"),
            (MIN_SECONDS, "0000-01-01T00:00:00Z"),
            (MAX_SECONDS, "9999-12-31T23:59:59Z"),
        ];
        for (secs, want) in cases {
            assert_eq!(rfc3339(secs).as_deref(), Some(want), "{secs}");
        }
        assert_eq!(rfc3339(MIN_SECONDS - 1), None);
        assert_eq!(rfc3339(MAX_SECONDS + 1), None);
    }

    #[test]
    fn every_day_round_trips_through_month_lengths() {
        // Walk 800 years day by day and check the calendar advances correctly.
        let (mut y, mut m, mut d) = civil_from_days(-200 * 365);
        for days in (-200 * 365 + 1)..(600 * 365) {
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let month_len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            let expected = if d < month_len {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            let got = civil_from_days(days);
            assert_eq!(got, expected, "day {days}");
            (y, m, d) = got;
        }
    }

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for days in (-800_000..800_000).step_by(7) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    fn roundtrip(s: &str) -> Option<String> {
        parse_rfc3339(s).map(format_rfc3339)
    }

    #[test]
    fn timestamps_read_and_written_like_go() {
        // Results of Go 1.19's time.Parse(time.RFC3339, s).Format(time.RFC3339).
        let ok = [
            ("2024-01-01T12:00:00Z", "2024-01-01T12:00:00Z"),
            ("2024-01-01T12:00:00+02:00", "2024-01-01T12:00:00+02:00"),
            ("2024-01-01T12:00:00.5Z", "2024-01-01T12:00:00Z"),
            ("2024-01-01T12:00:00+00:00", "2024-01-01T12:00:00Z"),
            ("2024-01-01T12:00:00-00:00", "2024-01-01T12:00:00Z"),
            ("2024-01-01T1:00:00Z", "2024-01-01T01:00:00Z"),
            ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
            ("2024-01-01T12:00:00,5Z", "2024-01-01T12:00:00Z"),
            ("2024-02-29T00:00:00-05:30", "2024-02-29T00:00:00-05:30"),
        ];
        for (s, want) in ok {
            assert_eq!(roundtrip(s).as_deref(), Some(want), "{s}");
        }
        let bad = [
            "2024-01-01t12:00:00Z",
            "2024-01-01T12:00:00z",
            "2024-02-30T12:00:00Z",
            "2023-02-29T12:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T12:00:60Z",
            "2024-01-01T12:00:00",
            "2024-01-01T12:00:00.Z",
            " 2024-01-01T12:00:00Z",
            "2024-13-01T12:00:00Z",
            "2024-01-01T12:00:00+2:00",
            "2024-01-01T12:00:00Z ",
            "1h",
            "",
        ];
        for s in bad {
            assert_eq!(parse_rfc3339(s), None, "{s}");
        }
    }

    #[test]
    fn fractions_and_years_outside_four_digits() {
        let t = parse_rfc3339("2024-01-01T12:00:00Z").map(|t| Instant {
            unix_nanos: t.unix_nanos - 1,
            ..t
        });
        // Go drops the fraction: one nanosecond earlier is still in the previous second.
        assert_eq!(t.map(format_rfc3339).as_deref(), Some("2024-01-01T11:59:59Z"));
        let late = parse_rfc3339("9999-12-31T23:59:59Z").map(|t| Instant {
            unix_nanos: t.unix_nanos + 1_000_000_000,
            ..t
        });
        assert_eq!(late.map(format_rfc3339).as_deref(), Some("10000-01-01T00:00:00Z"));
        let early = parse_rfc3339("0000-01-01T00:00:00Z").map(|t| Instant {
            unix_nanos: t.unix_nanos - 1_000_000_000,
            ..t
        });
        assert_eq!(early.map(format_rfc3339).as_deref(), Some("-0001-12-31T23:59:59Z"));
    }

    #[test]
    fn now_is_after_2024() {
        assert!(now_seconds() > 1_704_067_200);
    }
}

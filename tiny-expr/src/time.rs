//! Unix time to an RFC 3339 UTC timestamp, without a date library.

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
    fn now_is_after_2024() {
        assert!(now_seconds() > 1_704_067_200);
    }
}

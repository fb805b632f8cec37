//! Go's duration strings (`1h30m`, `1.5h`, `300ms`, `-2m`, `1µs`) and Go's `%v` form of
//! a number of seconds, for the time arithmetic of `+` and `-`.

/// Nanoseconds in each unit Go accepts. `µ` (U+00B5) and `μ` (U+03BC) both mean micro.
const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// The magnitude limit of a Go duration: 2^63 nanoseconds.
const LIMIT: u64 = 1 << 63;

/// Parses a Go duration (`time.ParseDuration`) into nanoseconds: an optional sign, then
/// one or more `<number><unit>` parts; a bare `0` is zero. Fractions finer than a
/// nanosecond are dropped, as in Go. `None` when `s` is not a duration or overflows.
pub(crate) fn parse(s: &str) -> Option<i64> {
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let (whole, after_whole) = split_digits(rest);
        let mut fraction = Fraction::default();
        let mut after_number = after_whole;
        if let Some(frac) = after_whole.strip_prefix('.') {
            let (digits, after) = split_digits(frac);
            fraction = Fraction::of(digits);
            after_number = after;
        }
        if whole.is_empty() && fraction.digits == 0 {
            return None;
        }
        let unit_len = after_number
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after_number.len());
        if unit_len == 0 {
            return None;
        }
        let (unit, after_unit) = after_number.split_at(unit_len);
        let scale = UNITS.iter().find(|u| u.0 == unit)?.1;
        let mut part = leading_int(whole)?.checked_mul(scale).filter(|v| *v <= LIMIT)?;
        if fraction.value > 0 {
            // Go scales the fraction in floating point and truncates; at most 3.6e12 ns.
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let ns = (fraction.value as f64 * (scale as f64 / fraction.scale)) as u64;
            part = part.checked_add(ns).filter(|v| *v <= LIMIT)?;
        }
        total = total.checked_add(part).filter(|v| *v <= LIMIT)?;
        rest = after_unit;
    }
    if negative {
        // -2^63 is the one magnitude that only fits negated.
        Some(0i64.wrapping_sub_unsigned(total))
    } else {
        i64::try_from(total).ok()
    }
}

/// Splits `s` after its leading ASCII digits.
fn split_digits(s: &str) -> (&str, &str) {
    s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()))
}

/// A run of digits as an integer; `None` past 2^63, as Go rejects it.
fn leading_int(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |acc, b| {
        acc.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .filter(|v| *v <= LIMIT)
    })
}

/// The digits after a decimal point: `value / scale`. Digits past what a `u64` holds are
/// ignored, as Go does.
#[derive(Default)]
struct Fraction {
    value: u64,
    scale: f64,
    digits: usize,
}

impl Fraction {
    fn of(digits: &str) -> Fraction {
        let mut f = Fraction {
            value: 0,
            scale: 1.0,
            digits: digits.len(),
        };
        for b in digits.bytes() {
            match f.value.checked_mul(10).and_then(|v| v.checked_add(u64::from(b - b'0'))) {
                Some(v) if v <= LIMIT => {
                    f.value = v;
                    f.scale *= 10.0;
                }
                _ => break,
            }
        }
        f
    }
}

/// A duration in seconds as Go's `Duration.Seconds` computes it.
pub(crate) fn seconds(ns: i64) -> f64 {
    let (whole, rest) = (ns / 1_000_000_000, ns % 1_000_000_000);
    // Both parts are exact in a double except huge whole-second counts, as in Go.
    #[allow(clippy::cast_precision_loss)]
    let s = whole as f64 + rest as f64 / 1e9;
    s
}

/// A number as Go's `fmt` prints a float64 with `%v`: the shortest digits that read back
/// as the same number, in exponent form (`3.6e+06`, `1e-05`) when the decimal exponent is
/// below -4 or at least 6.
pub(crate) fn go_number(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        // Values from Go 1.19's time.ParseDuration.
        let cases: &[(&str, Option<i64>)] = &[
            ("1h30m", Some(5_400_000_000_000)),
            ("1.5h", Some(5_400_000_000_000)),
            ("300ms", Some(300_000_000)),
            ("-2m", Some(-120_000_000_000)),
            ("1us", Some(1_000)),
            ("1µs", Some(1_000)),
            ("1μs", Some(1_000)),
            ("10ns", Some(10)),
            ("0", Some(0)),
            ("-0", Some(0)),
            (".5h", Some(1_800_000_000_000)),
            ("5.h", Some(18_000_000_000_000)),
            ("+1h", Some(3_600_000_000_000)),
            ("2562047h", Some(9_223_369_200_000_000_000)),
            ("9223372036854775807ns", Some(i64::MAX)),
            ("-9223372036854775808ns", Some(i64::MIN)),
            ("0.0000000001s", Some(0)),
            ("1.0000000005s", Some(1_000_000_000)),
            ("00001s", Some(1_000_000_000)),
            ("1.000000000000000000000000001s", Some(1_000_000_000)),
            ("", None),
            ("1", None),
            (".h", None),
            ("1h-1m", None),
            ("1H", None),
            ("2562048h", None),
            ("9223372036854775808ns", None),
            ("1h 2m", None),
            ("1d", None),
            ("-", None),
            ("h", None),
            ("abc", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse(s), *want, "{s:?}");
        }
    }

    #[test]
    fn go_percent_v() {
        // Output of Go's fmt.Sprintf("%v", x) for each x.
        let cases = [
            (5400.0, "5400"),
            (3_600_000.0, "3.6e+06"),
            (1e21, "1e+21"),
            (123_456.0, "123456"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100_000.0, "100000"),
            (1e6, "1e+06"),
            (0.0, "0"),
            (1e-9, "1e-09"),
            (1.000_000_001, "1.000000001"),
            (9.223_372_036_854_776e9, "9.223372036854776e+09"),
            (1e100, "1e+100"),
            (-1e-100, "-1e-100"),
        ];
        for (x, want) in cases {
            assert_eq!(go_number(x), want, "{x}");
        }
    }

    #[test]
    fn seconds_like_go() {
        assert_eq!(seconds(5_400_000_000_000), 5400.0);
        assert_eq!(seconds(-1_500_000_000), -1.5);
        assert_eq!(seconds(1), 1e-9);
    }
}

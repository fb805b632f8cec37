//! The one-number math functions and the named constants of the Go SDK's evaluator (ajson).
//!
//! Go computes these with its `math` package; here they come from Rust's `f64` methods and
//! the `libm` crate (a port of the same FreeBSD/musl code Go's Bessel and error functions
//! descend from), so results agree with Go's to the last bit or within a few units in the
//! last place. `erfinv` has no `libm` counterpart and is computed below.

/// A function of one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MathFn {
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Cbrt,
    Cos,
    Cosh,
    Erf,
    Erfc,
    Erfcinv,
    Erfinv,
    Exp,
    Exp2,
    Expm1,
    Gamma,
    J0,
    J1,
    Log,
    Log10,
    Log1p,
    Log2,
    Logb,
    RoundToEven,
    Sin,
    Sinh,
    Tan,
    Tanh,
    Trunc,
    Y0,
    Y1,
}

impl MathFn {
    /// Whether an integer argument comes back unchanged, so it stays exact.
    pub(crate) fn keeps_integers(self) -> bool {
        matches!(self, MathFn::RoundToEven | MathFn::Trunc)
    }

    /// The function's value at `x`; NaN or an infinity outside its domain.
    pub(crate) fn apply(self, x: f64) -> f64 {
        match self {
            MathFn::Acos => x.acos(),
            MathFn::Acosh => x.acosh(),
            MathFn::Asin => x.asin(),
            MathFn::Asinh => x.asinh(),
            MathFn::Atan => x.atan(),
            MathFn::Atanh => x.atanh(),
            MathFn::Cbrt => x.cbrt(),
            MathFn::Cos => x.cos(),
            MathFn::Cosh => x.cosh(),
            MathFn::Erf => libm::erf(x),
            MathFn::Erfc => libm::erfc(x),
            // As in Go: the inverse of erfc is erfinv of 1 - x.
            MathFn::Erfcinv => erfinv(1.0 - x),
            MathFn::Erfinv => erfinv(x),
            MathFn::Exp => x.exp(),
            MathFn::Exp2 => x.exp2(),
            MathFn::Expm1 => x.exp_m1(),
            MathFn::Gamma => libm::tgamma(x),
            MathFn::J0 => libm::j0(x),
            MathFn::J1 => libm::j1(x),
            MathFn::Log => x.ln(),
            MathFn::Log10 => x.log10(),
            MathFn::Log1p => x.ln_1p(),
            MathFn::Log2 => x.log2(),
            MathFn::Logb => logb(x),
            MathFn::RoundToEven => x.round_ties_even(),
            MathFn::Sin => x.sin(),
            MathFn::Sinh => x.sinh(),
            MathFn::Tan => x.tan(),
            MathFn::Tanh => x.tanh(),
            MathFn::Trunc => x.trunc(),
            MathFn::Y0 => libm::y0(x),
            MathFn::Y1 => libm::y1(x),
        }
    }
}

/// The named constants, spelled as ajson registers them (Go's `math.E`, `math.Pi`, ...).
const CONSTANTS: &[(&str, f64)] = &[
    ("e", std::f64::consts::E),
    ("pi", std::f64::consts::PI),
    ("phi", 1.618_033_988_749_895),
    ("sqrt2", std::f64::consts::SQRT_2),
    ("sqrte", 1.648_721_270_700_128_2),
    ("sqrtpi", 1.772_453_850_905_516),
    ("sqrtphi", 1.272_019_649_514_069),
    ("ln2", std::f64::consts::LN_2),
    ("log2e", std::f64::consts::LOG2_E),
    ("ln10", std::f64::consts::LN_10),
    ("log10e", std::f64::consts::LOG10_E),
];

/// The value of the constant called `name`, if there is one.
pub(crate) fn constant(name: &str) -> Option<f64> {
    // ajson folds names to lowercase: `PI` is `pi`.
    CONSTANTS.iter().find(|c| c.0.eq_ignore_ascii_case(name)).map(|c| c.1)
}

/// The binary exponent of `x` as a number (Go's `math.Logb`): `logb(100)` is 6.
fn logb(x: f64) -> f64 {
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if !x.is_finite() {
        return x.abs();
    }
    f64::from(libm::ilogb(x))
}

/// The inverse error function, by Wichura's algorithm AS 241 (PPND16) for the normal
/// quantile: `erfinv(x) = Φ⁻¹((1 + x) / 2) / √2`. Accurate to about 1e-16 relative.
fn erfinv(x: f64) -> f64 {
    if x.is_nan() || !(-1.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    if x == 1.0 || x == -1.0 {
        return x * f64::INFINITY;
    }
    // q = p - 1/2 with p = (1 + x) / 2.
    let q = x / 2.0;
    let z = if q.abs() <= 0.425 {
        let r = 0.180_625 - q * q;
        q * poly(&as241::CENTRAL_NUM, r) / poly(&as241::CENTRAL_DEN, r)
    } else {
        // The smaller tail probability, (1 - |x|) / 2, written to keep precision near ±1.
        let r = (std::f64::consts::LN_2 - (-x.abs()).ln_1p()).sqrt();
        let v = if r <= 5.0 {
            let r = r - 1.6;
            poly(&as241::NEAR_NUM, r) / poly(&as241::NEAR_DEN, r)
        } else {
            let r = r - 5.0;
            poly(&as241::FAR_NUM, r) / poly(&as241::FAR_DEN, r)
        };
        v.copysign(x)
    };
    z * std::f64::consts::FRAC_1_SQRT_2
}

/// Evaluates the polynomial with coefficients `c` (lowest degree first) at `x`.
fn poly(c: &[f64; 8], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, k| acc * x + k)
}

/// Coefficients of AS 241 (Applied Statistics 37 (1988), 477-484), as published.
mod as241 {
    #![allow(clippy::excessive_precision)] // the published digits, kept verbatim

    pub(super) const CENTRAL_NUM: [f64; 8] = [
        3.387_132_872_796_366_608,
        1.331_416_678_917_843_774_5e2,
        1.971_590_950_306_551_442_7e3,
        1.373_169_376_550_946_112_5e4,
        4.592_195_393_154_987_145_7e4,
        6.726_577_092_700_870_085_3e4,
        3.343_057_558_358_812_810_5e4,
        2.509_080_928_730_122_672_7e3,
    ];
    pub(super) const CENTRAL_DEN: [f64; 8] = [
        1.0,
        4.231_333_070_160_091_125_2e1,
        6.871_870_074_920_579_083e2,
        5.394_196_021_424_751_107_7e3,
        2.121_379_430_158_659_586_7e4,
        3.930_789_580_009_271_061e4,
        2.872_908_573_572_194_267_4e4,
        5.226_495_278_852_854_561e3,
    ];
    pub(super) const NEAR_NUM: [f64; 8] = [
        1.423_437_110_749_683_577_34,
        4.630_337_846_156_545_295_9,
        5.769_497_221_460_691_405_5,
        3.647_848_324_763_204_605_04,
        1.270_458_252_452_368_382_58,
        2.417_807_251_774_506_117_7e-1,
        2.272_384_498_926_918_458_33e-2,
        7.745_450_142_783_414_076_4e-4,
    ];
    pub(super) const NEAR_DEN: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_821_87,
        1.676_384_830_183_803_849_4,
        6.897_673_349_851_000_045_5e-1,
        1.481_039_764_274_800_745_9e-1,
        1.519_866_656_361_645_719_66e-2,
        5.475_938_084_995_344_946e-4,
        1.050_750_071_644_416_843_24e-9,
    ];
    pub(super) const FAR_NUM: [f64; 8] = [
        6.657_904_643_501_103_777_2,
        5.463_784_911_164_114_369_9,
        1.784_826_539_917_291_335_8,
        2.965_605_718_285_048_912_3e-1,
        2.653_218_952_657_612_309_3e-2,
        1.242_660_947_388_078_438_6e-3,
        2.711_555_568_743_487_578_15e-5,
        2.010_334_399_292_288_132_65e-7,
    ];
    pub(super) const FAR_DEN: [f64; 8] = [
        1.0,
        5.998_322_065_558_879_376_9e-1,
        1.369_298_809_227_358_053_1e-1,
        1.487_536_129_085_061_485_25e-2,
        7.868_691_311_456_132_591e-4,
        1.846_318_317_510_054_681_8e-5,
        1.421_511_758_316_445_888_7e-7,
        2.044_263_103_389_939_785_64e-15,
    ];
}

/// `n!` as an exact integer while it fits in an `i64` (up to 20!), else as a double
/// (up to 170!); `None` beyond that.
pub(crate) fn factorial(n: u64) -> Option<Result<i64, f64>> {
    if n <= 20 {
        return Some(Ok((1..=n).fold(1i64, |acc, k| acc * k.cast_signed())));
    }
    if n > 170 {
        return None;
    }
    // Above 20! every product is far below f64::MAX; the precision loss is inherent.
    #[allow(clippy::cast_precision_loss)]
    let f = (1..=n).fold(1f64, |acc, k| acc * k as f64);
    Some(Err(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfinv_inverts_erf() {
        for i in -999..=999 {
            let x = f64::from(i) / 1000.0;
            let y = erfinv(x);
            let back = libm::erf(y);
            assert!((back - x).abs() <= 4.0 * f64::EPSILON, "erf(erfinv({x})) = {back}");
        }
        for x in [1e-300, 1e-20, 1.0 - 1e-12, -(1.0 - 1e-15)] {
            let y = erfinv(x);
            assert!((libm::erf(y) - x).abs() <= 1e-15 * x.abs().max(1e-300), "{x}");
        }
        assert!(erfinv(1.5).is_nan());
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert_eq!(erfinv(-1.0), f64::NEG_INFINITY);
        assert_eq!(erfinv(0.0), 0.0);
    }

    #[test]
    fn logb_is_the_binary_exponent() {
        assert_eq!(logb(100.0), 6.0);
        assert_eq!(logb(0.5), -1.0);
        assert_eq!(logb(-8.0), 3.0);
        // Subnormals are normalised, as in Go.
        assert_eq!(logb(1e-310), -1030.0);
        assert_eq!(logb(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn factorials() {
        assert_eq!(factorial(0), Some(Ok(1)));
        assert_eq!(factorial(10), Some(Ok(3_628_800)));
        assert_eq!(factorial(20), Some(Ok(2_432_902_008_176_640_000)));
        assert_eq!(factorial(21), Some(Err(51_090_942_171_709_440_000.0)));
        assert!(matches!(factorial(170), Some(Err(f)) if f.is_finite()));
        assert_eq!(factorial(171), None);
    }
}

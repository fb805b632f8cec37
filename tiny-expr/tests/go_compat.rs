//! The functions, constants and time arithmetic taken from the Go SDK's evaluator, checked
//! against the Go test tables they come from: ajson's `math_test.go` and
//! `jsonpath_test.go` (tiny-systems/ajson) and the SDK's `pkg/evaluator/functions_test.go`
//! (tiny-systems/module). Where a Go test computes its expectation (`math.Sin(100)`), the
//! value here is what Go printed for it.

// The literals are the digits Go printed, compared on purpose instead of Rust's constants.
#![allow(clippy::approx_constant)]

mod common;

use common::{err0, ev, ev0, eval_err, parse_err, render};
use serde_json::{Value, json};
use tiny_expr::Expr;

/// Go's `math` and Rust's libm may round differently in the last place; allow a few units.
fn assert_close(src: &str, want: f64) {
    let got = ev0(src);
    let g = got.as_f64().unwrap_or(f64::NAN);
    let tolerance = 1e-15 * want.abs();
    assert!((g - want).abs() <= tolerance, "{src}: got {g}, Go gives {want}");
}

/// ajson `TestFunctions`: one number in, one number out.
#[test]
fn ajson_math_functions() {
    let cases: &[(&str, f64)] = &[
        ("acos(0.5)", 1.047_197_551_196_597_6),
        ("acosh(100)", 5.298_292_365_610_484),
        ("asin(0.5)", 0.523_598_775_598_298_9),
        ("asinh(100)", 5.298_342_365_610_589),
        ("atan(100)", 1.560_796_660_108_231_3),
        ("atanh(0.5)", 0.549_306_144_334_054_8),
        ("cbrt(100)", 4.641_588_833_612_778),
        ("cos(100)", 0.862_318_872_287_683_9),
        ("cosh(100)", 1.344_058_570_908_067_8e43),
        ("erfcinv(0.5)", 0.476_936_276_204_469_9),
        ("erfinv(0.5)", 0.476_936_276_204_469_9),
        ("exp(100)", 2.688_117_141_816_135_6e43),
        ("exp2(100)", 1.267_650_600_228_229_4e30),
        ("expm1(100)", 2.688_117_141_816_135_6e43),
        ("gamma(100)", 9.332_621_544_394_423e155),
        ("j0(100)", 0.019_985_850_304_223_122),
        ("j1(100)", -0.077_145_352_014_112_17),
        ("log(100)", 4.605_170_185_988_092),
        ("log1p(100)", 4.615_120_516_841_26),
        ("log2(100)", 6.643_856_189_774_724),
        ("sin(100)", -0.506_365_641_109_758_8),
        ("sinh(100)", 1.344_058_570_908_067_8e43),
        ("tan(100)", -0.587_213_915_156_929),
        ("y0(100)", -0.077_244_313_365_083_17),
        ("y1(100)", -0.020_372_312_002_759_796),
    ];
    for (src, want) in cases {
        assert_close(src, *want);
    }
    // Results Go computes exactly, so they must match exactly; whole numbers come out as
    // JSON integers.
    let exact = [
        ("abs(-100)", json!(100)),
        ("abs(100)", json!(100)),
        ("abs(0)", json!(0)),
        ("ceil(100)", json!(100)),
        ("erf(100)", json!(1)),
        ("erfc(100)", json!(0)),
        ("floor(0)", json!(0)),
        ("floor(0.1)", json!(0)),
        ("floor(0.5)", json!(0)),
        ("floor(0.9)", json!(0)),
        ("floor(100)", json!(100)),
        ("log10(100)", json!(2)),
        ("logb(100)", json!(6)),
        ("round(0)", json!(0)),
        ("round(0.1)", json!(0)),
        ("round(0.5)", json!(1)),
        ("round(0.9)", json!(1)),
        ("round(100)", json!(100)),
        ("roundtoeven(0)", json!(0)),
        ("roundtoeven(0.5)", json!(0)),
        ("roundtoeven(0.1)", json!(0)),
        ("roundtoeven(0.9)", json!(1)),
        ("roundtoeven(1)", json!(1)),
        ("sqrt(100)", json!(10)),
        ("tanh(100)", json!(1)),
        ("trunc(100)", json!(100)),
        ("pow10(10)", json!(10_000_000_000_i64)),
        ("factorial(10)", json!(3_628_800)),
        ("not(1)", json!(false)),
        ("not(0)", json!(true)),
    ];
    for (src, want) in exact {
        assert_eq!(ev0(src), want, "{src}");
    }
}

/// Beyond the Go table: more arguments, values Go printed.
#[test]
fn math_functions_at_other_arguments() {
    let cases: &[(&str, f64)] = &[
        ("asinh(0.5)", 0.481_211_825_059_603_47),
        ("erf(0.5)", 0.520_499_877_813_046_5),
        ("erfc(0.5)", 0.479_500_122_186_953_5),
        ("erfinv(-0.5)", -0.476_936_276_204_469_9),
        ("erfcinv(1.5)", -0.476_936_276_204_469_9),
        ("gamma(0.5)", 1.772_453_850_905_515_9),
        ("gamma(-2.5)", -0.945_308_720_482_941_9),
        ("j0(0.5)", 0.938_469_807_240_812_9),
        ("j1(0.5)", 0.242_268_457_674_873_9),
        ("y0(0.5)", -0.444_518_733_506_706_56),
        ("y1(0.5)", -1.471_472_392_670_243_3),
        ("log(0.5)", -0.693_147_180_559_945_3),
        ("expm1(0.5)", 0.648_721_270_700_128_2),
        ("cbrt(-0.5)", -0.793_700_525_984_099_7),
    ];
    for (src, want) in cases {
        assert_close(src, *want);
    }
    let exact = [
        ("logb(0.5)", json!(-1)),
        ("log2(0.5)", json!(-1)),
        ("roundtoeven(2.5)", json!(2)),
        ("roundtoeven(-2.5)", json!(-2)),
        ("roundtoeven(3.5)", json!(4)),
        ("trunc(-2.5)", json!(-2)),
        ("trunc(7.3)", json!(7)),
        ("gamma(5)", json!(24)),
        // Integers pass through trunc and roundtoeven exactly, even beyond 2^53.
        ("trunc(9007199254740993)", json!(9_007_199_254_740_993_i64)),
        ("roundtoeven(-9007199254740993)", json!(-9_007_199_254_740_993_i64)),
        ("factorial(0)", json!(1)),
        ("factorial(20)", json!(2_432_902_008_176_640_000_i64)),
        ("factorial(5.0)", json!(120)),
    ];
    for (src, want) in exact {
        assert_eq!(ev0(src), want, "{src}");
    }
    // 21! no longer fits in 64 bits; Go's unsigned product wraps, tiny gives the double.
    assert_eq!(ev0("factorial(21)"), json!(51_090_942_171_709_440_000.0_f64));
}

/// ajson's `numericFunction` errors on a non-number; NaN and infinite results (Go returns
/// them, JSON cannot hold them) are errors naming the argument.
#[test]
fn math_function_errors() {
    // ajson TestFunctions2 "abs error 2".
    assert_eq!(err0("abs('')"), "abs(): argument 1 must be a number, got string");
    for f in ["sin", "log", "gamma", "erfinv", "trunc", "roundtoeven", "j0", "y1"] {
        assert_eq!(
            err0(&format!("{f}('x')")),
            format!("{f}(): argument 1 must be a number, got string")
        );
    }
    assert_eq!(err0("sin(null)"), "sin(): argument 1 must be a number, got null");
    let domain = [
        ("log(0)", "log(): the result for 0 is -inf, not a finite number"),
        ("log(-1)", "log(): the result for -1 is NaN, not a finite number"),
        ("acos(2)", "acos(): the result for 2 is NaN, not a finite number"),
        ("atanh(1)", "atanh(): the result for 1 is inf, not a finite number"),
        ("erfinv(1)", "erfinv(): the result for 1 is inf, not a finite number"),
        ("erfcinv(0)", "erfcinv(): the result for 0 is inf, not a finite number"),
        ("gamma(0)", "gamma(): the result for 0 is inf, not a finite number"),
        ("gamma(-1)", "gamma(): the result for -1 is NaN, not a finite number"),
        ("logb(0)", "logb(): the result for 0 is -inf, not a finite number"),
        ("y0(0)", "y0(): the result for 0 is -inf, not a finite number"),
        ("exp(1000)", "exp(): the result for 1000 is inf, not a finite number"),
    ];
    for (src, message) in domain {
        assert_eq!(err0(src), message, "{src}");
    }
    // Errors are ordinary evaluation errors: `??` does not hide them.
    assert_eq!(
        err0("log(0) ?? 1"),
        "log(): the result for 0 is -inf, not a finite number"
    );
}

/// ajson TestFunctions2 "factorial error", "rand", "randint"; Go's getInteger and
/// getUInteger reject fractions and negatives, and rand.Intn panics below 1.
#[test]
fn factorial_rand_randint_errors() {
    let cases = [
        (
            "factorial(1.5)",
            "factorial(): argument 1 must be a whole number, got 1.5",
        ),
        ("factorial(-1)", "factorial(): argument 1 must not be negative, got -1"),
        ("factorial('3')", "factorial(): argument 1 must be a number, got string"),
        (
            "factorial(171)",
            "factorial(): 171! is too large for a number (the largest is 170!)",
        ),
        ("rand('test')", "rand(): argument 1 must be a number, got string"),
        ("randint('test')", "randint(): argument 1 must be a number, got string"),
        ("randint(2.5)", "randint(): argument 1 must be a whole number, got 2.5"),
        ("randint(0)", "randint(): argument 1 must be at least 1, got 0"),
        ("randint(-3)", "randint(): argument 1 must be at least 1, got -3"),
    ];
    for (src, message) in cases {
        assert_eq!(err0(src), message, "{src}");
    }
}

/// ajson TestFunctions "rand 50" / "randint 50" stub the generator; here the ranges are
/// checked instead, and that the values vary.
#[test]
fn rand_and_randint_ranges() {
    let rand = Expr::parse("rand(50)").unwrap_or_else(|e| panic!("{e}"));
    let randint = Expr::parse("randint(50)").unwrap_or_else(|e| panic!("{e}"));
    let mut floats = Vec::new();
    let mut ints = std::collections::BTreeSet::new();
    for _ in 0..2000 {
        let f = rand.eval(&Value::Null).map(|v| v.as_f64());
        let Ok(Some(f)) = f else { panic!("rand(50) gave {f:?}") };
        assert!((0.0..50.0).contains(&f), "rand(50) gave {f}");
        floats.push(f);
        let i = randint.eval(&Value::Null).map(|v| v.as_i64());
        let Ok(Some(i)) = i else {
            panic!("randint(50) gave {i:?}")
        };
        assert!((0..50).contains(&i), "randint(50) gave {i}");
        ints.insert(i);
    }
    // 2000 draws from 50 values reach every one (missing one has odds ~ 50 * 0.98^2000).
    assert_eq!(ints.len(), 50);
    let mean = floats.iter().sum::<f64>() / 2000.0;
    assert!((20.0..30.0).contains(&mean), "mean of rand(50) is {mean}");
    assert_eq!(ev0("randint(1)"), json!(0));
    assert_eq!(ev0("rand(0)"), json!(0));
    let neg = ev0("rand(-2)").as_f64().unwrap_or(f64::NAN);
    assert!(neg > -2.0 && neg <= 0.0, "rand(-2) gave {neg}");
}

/// ajson TestFunctions2 "b64encode_no_padding ..." (and the padded ones beside them).
#[test]
fn b64encoden() {
    let cases = [
        ("Short string", "U2hvcnQgc3RyaW5n", "U2hvcnQgc3RyaW5n"),
        ("A test string", "QSB0ZXN0IHN0cmluZw", "QSB0ZXN0IHN0cmluZw=="),
        ("A test string.", "QSB0ZXN0IHN0cmluZy4", "QSB0ZXN0IHN0cmluZy4="),
        ("", "", ""),
    ];
    for (plain, unpadded, padded) in cases {
        assert_eq!(ev0(&format!("b64encoden('{plain}')")), json!(unpadded), "{plain}");
        assert_eq!(ev0(&format!("b64encode('{plain}')")), json!(padded), "{plain}");
    }
    assert_eq!(
        err0("b64encoden(1)"),
        "b64encoden(): argument 1 must be a string, got number"
    );
}

/// ajson `TestConstants`: Go's `math` constants, exactly.
#[test]
fn ajson_constants() {
    let cases: &[(&str, f64)] = &[
        ("e", 2.718_281_828_459_045),
        ("pi", 3.141_592_653_589_793),
        ("phi", 1.618_033_988_749_895),
        ("sqrt2", 1.414_213_562_373_095_1),
        ("sqrte", 1.648_721_270_700_128_2),
        ("sqrtpi", 1.772_453_850_905_516),
        ("sqrtphi", 1.272_019_649_514_069),
        ("ln2", 0.693_147_180_559_945_3),
        ("log2e", 1.442_695_040_888_963_4),
        ("ln10", 2.302_585_092_994_046),
        ("log10e", 0.434_294_481_903_251_8),
    ];
    for (name, want) in cases {
        assert_eq!(ev0(name), json!(want), "{name}");
    }
    // ajson ExampleAddConstant_eval: `2 * $.radius * pi` with radius 50 is 314.159... m.
    let c = ev("2 * $.radius * pi", &json!({"radius": 50}));
    assert_eq!(c, json!(314.159_265_358_979_3));
    // A constant is a value, not a function; paths named like constants are still paths.
    assert_eq!(parse_err("pi(1)").message, "unknown function 'pi'");
    assert_eq!(ev("$.e + $.pi", &json!({"e": 1, "pi": 2})), json!(3));
    assert_eq!(ev0("2e1 + e - e"), json!(20));
}

/// ajson `TestEval`, on its store document.
#[test]
fn ajson_eval_table() {
    let store = json!({"store": {
        "book": [
            {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
            {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
            {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99},
            {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99}
        ],
        "bicycle": [{"color": "red", "price": 19.95}]
    }});
    assert_eq!(ev("avg($..price)", &store), json!(14.774_000_000_000_001));
    assert_eq!(ev("round(avg($..price)+pi)", &store), json!(18));
    assert_eq!(parse_err("avg()").message, "function 'avg' takes 1 argument, got 0");
}

fn family() -> Value {
    // ajson TestFunctions2's tree: `key` is the string "value" at r.t.
    json!({"q": 1, "w": 2, "e": 3, "r": {"t": "value", "y": 2}, "list": [{"id": "a"}, {"id": "b", "tag": "x"}]})
}

/// ajson TestFunctions2 "parent", "root", "key" and their "none"/"self"/"nil" variants.
#[test]
fn key_parent_root_of_paths() {
    let d = family();
    assert_eq!(ev("parent($.r.t)", &d), json!({"t": "value", "y": 2}));
    assert_eq!(ev("parent($)", &d), Value::Null);
    assert_eq!(ev("root($.r.t)", &d), d);
    assert_eq!(ev("root($)", &d), d);
    assert_eq!(ev("key($.r.t)", &d), json!("t"));
    // "key: none": a value that is not in the document has no key.
    assert_eq!(ev("key('value')", &d), Value::Null);
    // "key nil": Go gives null for a path that found nothing; here such a path is an error
    // as everywhere else, and `??` gives the default.
    assert_eq!(
        eval_err("key($.nothing)", &d).message,
        r#"path $.nothing matched nothing ($ has no key "nothing")"#
    );
    assert_eq!(ev("key($.nothing) ?? null", &d), Value::Null);
    // An array element has a parent but no key, as in Go.
    assert_eq!(ev("key($.list[1])", &d), Value::Null);
    assert_eq!(ev("parent($.list[1])", &d), d["list"]);
    assert_eq!(ev("parent(parent($.r.t))", &d), Value::Null);
}

#[test]
fn key_parent_root_of_queries_and_choices() {
    let d = family();
    // A filter or descendant query that finds one node keeps its place.
    assert_eq!(ev("key($..tag)", &d), json!("tag"));
    assert_eq!(ev("parent($..tag)", &d), json!({"id": "b", "tag": "x"}));
    assert_eq!(ev("parent($.list[?@.tag])", &d), d["list"]);
    assert_eq!(ev("key($['r']['y'])", &d), json!("y"));
    // Several nodes are one new array, as Go's ArrayNode: no key or parent, its own root.
    assert_eq!(ev("key($.list[*].id)", &d), Value::Null);
    assert_eq!(ev("parent($.list[*].id)", &d), Value::Null);
    assert_eq!(ev("root($.list[*].id)", &d), json!(["a", "b"]));
    // `?:` and `??` pass on the place of the side they pick.
    assert_eq!(ev("key($.missing ?? $.r.y)", &d), json!("y"));
    assert_eq!(ev("key($.r.n ?? $.q)", &json!({"r": {"n": null}, "q": 1})), json!("q"));
    assert_eq!(ev("key($.q > 0 ? $.w : $.e)", &d), json!("w"));
    assert_eq!(ev("key($.q > 5 ? $.w : $.e)", &d), json!("e"));
    // A computed value is detached: no key or parent, and its own root (as a Go literal).
    assert_eq!(ev("key(first($.list))", &d), Value::Null);
    assert_eq!(ev("parent(1 + 1)", &d), Value::Null);
    assert_eq!(ev("root('x')", &d), json!("x"));
    assert_eq!(ev("root([1, $.q])", &d), json!([1, 1]));
    // The key is a string like any other.
    assert_eq!(ev("upper(key($.r.t)) + '=' + $.r.t", &d), json!("T=value"));
    assert_eq!(
        parse_err("key($.a, $.b)").message,
        "function 'key' takes 1 argument, got 2"
    );
}

/// The SDK's `TestCustomOperator_Add_Durations` and `_Subtract_Durations`.
#[test]
fn sdk_duration_arithmetic() {
    let cases = [
        (r#""1h" + "30m""#, "5400s"),
        (r#""30s" + "15s""#, "45s"),
        (r#""1h" + "1m" + "1s""#, "3661s"),
        (r#""1h" - "30m""#, "1800s"),
        (r#""60s" - "15s""#, "45s"),
    ];
    for (src, want) in cases {
        assert_eq!(ev0(src), json!(want), "{src}");
    }
}

/// The SDK's `TestCustomOperator_Add_TimeAndDuration` and `_Subtract_TimeAndDuration`.
#[test]
fn sdk_time_arithmetic() {
    let base = "2024-01-01T12:00:00Z";
    let cases = [
        (format!(r#""{base}" + "1h""#), "2024-01-01T13:00:00Z"),
        (format!(r#""{base}" + "30m""#), "2024-01-01T12:30:00Z"),
        (format!(r#""1h" + "{base}""#), "2024-01-01T13:00:00Z"),
        (format!(r#""{base}" - "1h""#), "2024-01-01T11:00:00Z"),
        (format!(r#""{base}" - "30m""#), "2024-01-01T11:30:00Z"),
    ];
    for (src, want) in cases {
        assert_eq!(ev0(&src), json!(want), "{src}");
    }
}

/// Beyond the SDK's table: Go's duration syntax, zones, fractions and `%v` formatting,
/// with the results Go 1.19 printed for the same operations.
#[test]
fn go_time_and_duration_details() {
    let cases = [
        // Go's duration syntax.
        ("'2024-01-01T00:00:00Z' + '1h30m'", "2024-01-01T01:30:00Z"),
        ("'2024-01-01T00:00:00Z' + '1.5h'", "2024-01-01T01:30:00Z"),
        ("'2024-01-01T00:00:00Z' + '-2m'", "2023-12-31T23:58:00Z"),
        ("'2024-01-01T00:00:00Z' - '-2m'", "2024-01-01T00:02:00Z"),
        ("'2024-02-28T23:00:00Z' + '1h'", "2024-02-29T00:00:00Z"),
        ("'2024-01-01T00:00:00Z' + '8760h'", "2024-12-31T00:00:00Z"),
        // A duration on the left of '-' is subtracted from the time on the right, as Go does.
        ("'1h' - '2024-01-01T12:00:00Z'", "2024-01-01T11:00:00Z"),
        // The offset is kept; a zero offset is written Z.
        ("'2024-01-01T12:00:00+02:00' + '1h'", "2024-01-01T13:00:00+02:00"),
        ("'2024-01-01T23:30:00-05:30' + '1h'", "2024-01-02T00:30:00-05:30"),
        ("'2024-01-01T12:00:00+00:00' + '1h'", "2024-01-01T13:00:00Z"),
        // Fractions of a second are dropped from the result, not rounded.
        ("'2024-01-01T12:00:00.5Z' + '1h'", "2024-01-01T13:00:00Z"),
        ("'2024-01-01T12:00:00Z' - '1ns'", "2024-01-01T11:59:59Z"),
        ("'2024-01-01T12:00:00Z' + '1500ms'", "2024-01-01T12:00:01Z"),
        // Years past 9999, as Go writes them.
        ("'9999-12-31T23:59:59Z' + '1h'", "10000-01-01T00:59:59Z"),
        // Two durations: seconds in Go's %v form.
        ("'1us' + '1µs'", "2e-06s"),
        ("'300ms' + '1.5s'", "1.8s"),
        ("'1000h' + '0s'", "3.6e+06s"),
        ("'10ns' - '1s'", "-0.99999999s"),
        ("'0' + '0'", "0s"),
        ("'1h' - '1h'", "0s"),
        // Not time arithmetic: plain concatenation.
        ("'1' + '2'", "12"),
        ("'1h' + 'x'", "1hx"),
        (
            "'2024-01-01T12:00:00Z' + '2024-01-01T12:00:00Z'",
            "2024-01-01T12:00:00Z2024-01-01T12:00:00Z",
        ),
        ("'1d' + '1h'", "1d1h"),
        ("'2024-01-01 12:00:00Z' + '1h'", "2024-01-01 12:00:00Z1h"),
    ];
    for (src, want) in cases {
        assert_eq!(ev0(src), json!(want), "{src}");
    }
    // From the message, as editor flows write it.
    let d = json!({"start": "2024-06-01T08:00:00Z", "ttl": "90m"});
    assert_eq!(ev("$.start + $.ttl", &d), json!("2024-06-01T09:30:00Z"));
    assert_eq!(ev("$.start - $.ttl", &d), json!("2024-06-01T06:30:00Z"));
}

/// The SDK's `-` falls back to numbers and fails on other strings; here the error says why.
#[test]
fn time_subtraction_errors() {
    let message = |l: &str, r: &str| {
        format!("operator '-' on strings needs an RFC 3339 time and a Go duration, or two durations; got {l} and {r}")
    };
    assert_eq!(err0("'a' - 'b'"), message(r#""a""#, r#""b""#));
    assert_eq!(
        err0("'2024-01-01T12:00:00Z' - '2024-01-01T11:00:00Z'"),
        message(r#""2024-01-01T12:00:00Z""#, r#""2024-01-01T11:00:00Z""#)
    );
    assert_eq!(err0("'1h' - '1'"), message(r#""1h""#, r#""1""#));
    assert_eq!(err0("'1h' - 1"), "operator '-' cannot be applied to string and number");
}

/// The SDK's `TestCustomOperator_Add_Numbers`, `_Subtract_Numbers`, `_Add_Strings`: the
/// time arithmetic leaves ordinary `+` and `-` alone.
#[test]
fn sdk_plain_operators_unchanged() {
    let cases = [
        ("1 + 2", json!(3)),
        ("10 + 20 + 30", json!(60)),
        ("1.5 + 2.5", json!(4)),
        ("-5 + 10", json!(5)),
        ("10 - 3", json!(7)),
        ("100 - 20 - 30", json!(50)),
        ("5.5 - 2.5", json!(3)),
        ("5 - 10", json!(-5)),
        (r#""hello" + " world""#, json!("hello world")),
        (r#""test" + """#, json!("test")),
    ];
    for (src, want) in cases {
        assert_eq!(ev0(src), want, "{src}");
    }
}

/// Every function and constant added from ajson compiles where a Go editor flow uses it.
#[test]
fn every_new_name_parses() {
    let unary = [
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "cbrt",
        "cos",
        "cosh",
        "erf",
        "erfc",
        "erfcinv",
        "erfinv",
        "exp",
        "exp2",
        "expm1",
        "gamma",
        "j0",
        "j1",
        "log",
        "log10",
        "log1p",
        "log2",
        "logb",
        "roundtoeven",
        "sin",
        "sinh",
        "tan",
        "tanh",
        "trunc",
        "y0",
        "y1",
        "factorial",
        "rand",
        "randint",
        "b64encoden",
        "key",
        "parent",
        "root",
    ];
    for f in unary {
        let src = format!("{f}($.x)");
        assert!(Expr::parse(&src).is_ok(), "{src}");
        assert_eq!(
            parse_err(&format!("{f}()")).message,
            format!("function '{f}' takes 1 argument, got 0")
        );
    }
    for c in [
        "e", "pi", "phi", "sqrt2", "sqrte", "sqrtpi", "sqrtphi", "ln2", "log2e", "ln10", "log10e",
    ] {
        assert!(Expr::parse(&format!("{c} * 2")).is_ok(), "{c}");
    }
    // ajson folds names to lowercase: an editor flow's `Sin(1)`, `PI` and `UPPER` work.
    assert_eq!(ev0("Sin(0)"), json!(0));
    assert_eq!(ev0("2 * PI"), ev0("2 * pi"));
    assert_eq!(ev0("UPPER('a')"), json!("A"));
}

/// In an edge configuration, as an editor flow writes them.
#[test]
fn in_a_template() {
    let config = json!({
        "deadline": "{{$.order.placed + $.sla}}",
        "field": "{{key($.order.placed)}}",
        "angle": "{{round(sin(pi / 6) * 100)}}",
        "note": "due {{$.order.placed + $.sla}} ({{$.sla}})"
    });
    let msg = json!({"order": {"placed": "2024-06-01T08:00:00+02:00"}, "sla": "36h"});
    assert_eq!(
        render(&config, &msg),
        json!({
            "deadline": "2024-06-02T20:00:00+02:00",
            "field": "placed",
            "angle": 50,
            "note": "due 2024-06-02T20:00:00+02:00 (36h)"
        })
    );
}

#[test]
fn the_documented_differences_hold() {
    // The crate docs' "Differences" section, kept honest.
    assert_eq!(ev0("string(1234567)"), json!("1234567"));
    assert_eq!(ev0("string(null)"), json!(""));
    assert!(
        parse_err("1 << 2").message.contains("<"),
        "bitwise operators do not parse"
    );
    assert!(err0("log(0)").contains("not a finite number"));
}

/// ajson's `.length` on an array is its size; an object's `length` key is its value.
#[test]
fn dot_length_of_an_array_is_its_size_as_in_ajson() {
    let d = json!({"items": [1, 2, 3], "box": {"length": 9}, "empty": []});
    assert_eq!(ev("$.items.length", &d), json!(3));
    assert_eq!(ev("$.empty.length == 0", &d), json!(true));
    assert_eq!(ev("$.box.length", &d), json!(9));
    assert!(eval_err("$.missing.length", &d).message.contains("matched nothing"));
    assert_eq!(render(&json!({"n": "{{$.items.length}}"}), &d), json!({"n": 3}));
}

/// A path that matches nothing is ajson's missing value (`nil` on its stack, no error):
/// comparisons with it are false, it is falsy, `length` of it is 0, and an interpolation
/// writes nothing for it. A flow built for Go on optional fields gets Go's values.
#[test]
fn a_path_that_matches_nothing_is_gos_missing_value() {
    let d = json!({"status": "ok", "n": 7, "items": []});
    for (src, want) in [
        ("$.err ? 'fail' : 'ok'", json!("ok")),
        ("not($.flag)", json!(true)),
        ("!$.flag", json!(true)),
        ("$.flag && true", json!(false)),
        ("$.flag || $.status == 'ok'", json!(true)),
        ("$.missing == null", json!(false)),
        ("$.missing != 'x'", json!(false)),
        ("$.n > $.limit", json!(false)),
        ("length($.tags)", json!(0)),
        ("size($.tags)", json!(0)),
        ("avg($.items)", json!(0)),
    ] {
        assert_eq!(ev(src, &d), want, "{src}");
    }
    // Where ajson has no answer for it, the missing value still fails the expression.
    assert!(eval_err("$.missing + 1", &d).message.contains("matched nothing"));
    assert!(eval_err("upper($.missing)", &d).message.contains("matched nothing"));
    // Interpolated: nothing is written for it (a whole value is null), and each is
    // still reported.
    let t = tiny_expr::Template::compile(&json!({
        "line": "Hello {{$.middle}}!",
        "whole": "{{$.middle}}",
        "sum": "n+1={{$.middle + 1}}"
    }))
    .expect("compiles");
    let mut failures = Vec::new();
    assert_eq!(
        t.render_lenient(&d, &mut failures),
        json!({"line": "Hello !", "whole": null, "sum": "n+1={{$.middle + 1}}"})
    );
    assert_eq!(failures.len(), 3);
}

//! Every operator, truthiness and precedence.

mod common;

use common::{err0, ev, ev0, eval_err, parse_err};
use serde_json::{Value, json};

fn data() -> Value {
    json!({
        "n": 5, "f": 1.5, "s": "str", "t": true, "nul": null,
        "arr": [1, 2], "empty": [], "obj": {"a": 1}, "emptyobj": {},
        "re": "^s.r$", "badre": "(", "o1": {"x": [1, {"y": 2}]}, "o2": {"x": [1.0, {"y": 2}]}
    })
}

#[test]
fn addition_and_concatenation() {
    let d = data();
    assert_eq!(ev0("1 + 2"), json!(3));
    assert_eq!(ev0("1.5 + 1"), json!(2.5));
    assert_eq!(ev0("0.1 + 0.2"), json!(0.300_000_000_000_000_04));
    assert_eq!(ev0("'a' + \"b\""), json!("ab"));
    assert_eq!(ev0("'n=' + 5"), json!("n=5"));
    assert_eq!(ev0("5 + 'x'"), json!("5x"));
    assert_eq!(ev0("'x' + 1.5"), json!("x1.5"));
    assert_eq!(ev0("'x' + true"), json!("xtrue"));
    assert_eq!(ev0("'x' + null"), json!("x"));
    assert_eq!(ev("'x' + $.arr", &d), json!("x[1,2]"));
    assert_eq!(ev("$.obj + ''", &d), json!(r#"{"a":1}"#));
    assert_eq!(err0("true + 1"), "operator '+' cannot be applied to boolean and number");
    assert_eq!(err0("null + 1"), "operator '+' cannot be applied to null and number");
    assert_eq!(
        eval_err("$.arr + $.arr", &d).message,
        "operator '+' cannot be applied to array and array"
    );
}

#[test]
fn subtraction_multiplication_division_remainder() {
    assert_eq!(ev0("5 - 3"), json!(2));
    assert_eq!(ev0("3 - 5"), json!(-2));
    assert_eq!(ev0("1.5 - 0.5"), json!(1));
    assert_eq!(err0("'a' - 1"), "operator '-' cannot be applied to string and number");
    assert_eq!(ev0("2 * 3"), json!(6));
    assert_eq!(ev0("2.5 * 2"), json!(5));
    assert_eq!(ev0("2.5 * 3"), json!(7.5));
    assert_eq!(err0("\"a\" * 2"), "operator '*' cannot be applied to string and number");
    assert_eq!(
        err0("2 * false"),
        "operator '*' cannot be applied to number and boolean"
    );
    assert_eq!(ev0("7 / 2"), json!(3.5));
    assert_eq!(ev0("6 / 3"), json!(2));
    assert_eq!(ev0("1 / 3"), json!(0.333_333_333_333_333_3));
    assert_eq!(err0("1 / 0"), "operator '/': division by zero");
    assert_eq!(err0("1 / 0.0"), "operator '/': division by zero");
    assert_eq!(err0("'a' / 0"), "operator '/' cannot be applied to string and number");
    assert_eq!(ev0("7 % 3"), json!(1));
    assert_eq!(ev0("-7 % 3"), json!(-1));
    assert_eq!(ev0("7.5 % 2"), json!(1.5));
    assert_eq!(err0("5 % 0"), "operator '%': division by zero");
    assert_eq!(err0("null % 2"), "operator '%' cannot be applied to null and number");
}

#[test]
fn power() {
    assert_eq!(ev0("2 ** 3"), json!(8));
    assert_eq!(ev0("2 ** 0.5"), json!(std::f64::consts::SQRT_2));
    assert_eq!(ev0("2 ** -1"), json!(0.5));
    assert_eq!(ev0("2 ** 3 ** 2"), json!(512));
    assert_eq!(ev0("-2 ** 2"), json!(-4));
    assert_eq!(ev0("(-2) ** 2"), json!(4));
    assert_eq!(err0("'2' ** 2"), "operator '**' cannot be applied to string and number");
    assert_eq!(err0("10 ** 400"), "result inf is not a finite number");
}

#[test]
fn unary_operators() {
    let d = data();
    assert_eq!(ev0("-5"), json!(-5));
    assert_eq!(ev0("-(1 + 2)"), json!(-3));
    assert_eq!(ev0("--5"), json!(5));
    assert_eq!(ev0("-1.5"), json!(-1.5));
    assert_eq!(ev("-$.n", &d), json!(-5));
    assert_eq!(err0("-'a'"), "operator '-' cannot be applied to string");
    assert_eq!(err0("-null"), "operator '-' cannot be applied to null");
    assert_eq!(ev0("!true"), json!(false));
    assert_eq!(ev0("!!true"), json!(true));
    assert_eq!(ev0("!0"), json!(true));
    assert_eq!(ev0("!0.0"), json!(true));
    assert_eq!(ev0("!''"), json!(true));
    assert_eq!(ev0("!'a'"), json!(false));
    assert_eq!(ev0("!null"), json!(true));
    assert_eq!(ev("!$.empty", &d), json!(true));
    assert_eq!(ev("!$.arr", &d), json!(false));
    // `{}` is falsy, as ajson's `boolean` has it.
    assert_eq!(ev("!$.emptyobj", &d), json!(true));
    // A path that matched nothing is ajson's missing value: falsy.
    assert_eq!(ev("!$.missing", &d), json!(true));
    assert_eq!(ev("not($.missing)", &d), json!(true));
}

#[test]
fn equality() {
    let d = data();
    assert_eq!(ev0("1 == 1.0"), json!(true));
    assert_eq!(ev0("'a' == 'a'"), json!(true));
    assert_eq!(ev0("1 == '1'"), json!(false));
    assert_eq!(ev0("null == null"), json!(true));
    assert_eq!(ev0("null == false"), json!(false));
    assert_eq!(ev0("true == true"), json!(true));
    assert_eq!(ev0("1 != 2"), json!(true));
    assert_eq!(ev0("'a' != 'a'"), json!(false));
    assert_eq!(ev("$.o1 == $.o2", &d), json!(true));
    assert_eq!(ev("$.o1 != $.obj", &d), json!(true));
    assert_eq!(ev("$.arr == $.arr", &d), json!(true));
    assert_eq!(ev("$.nul == null", &d), json!(true));
    // A missing side makes every comparison false, `!=` too, as in ajson: a field
    // that is there and null is not a field that is absent.
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        assert_eq!(ev(&format!("$.missing {op} null"), &d), json!(false), "{op}");
        assert_eq!(ev(&format!("1 {op} $.missing"), &d), json!(false), "{op}");
    }
}

#[test]
fn ordering() {
    assert_eq!(ev0("1 < 2"), json!(true));
    assert_eq!(ev0("2 < 1"), json!(false));
    assert_eq!(ev0("2 <= 2"), json!(true));
    assert_eq!(ev0("3 > 2.5"), json!(true));
    assert_eq!(ev0("2 >= 3"), json!(false));
    assert_eq!(ev0("-1 < 0"), json!(true));
    assert_eq!(ev0("'abc' < 'abd'"), json!(true));
    assert_eq!(ev0("'B' < 'a'"), json!(true));
    assert_eq!(ev0("'é' > 'z'"), json!(true));
    assert_eq!(ev0("'a' >= 'a'"), json!(true));
    // Two types: false either way, as in ajson; two booleans (or nulls, arrays,
    // objects) have no order.
    assert_eq!(ev0("1 < '2'"), json!(false));
    assert_eq!(ev0("null <= 1"), json!(false));
    assert_eq!(ev0("'a' >= 1"), json!(false));
    assert_eq!(err0("true > false"), "operator '>' cannot compare boolean and boolean");
}

#[test]
fn regex_match() {
    let d = data();
    assert_eq!(ev0("'hello' =~ '^h.*o$'"), json!(true));
    assert_eq!(ev0("'hello' =~ 'x'"), json!(false));
    assert_eq!(ev0("'abc' =~ 'b'"), json!(true));
    assert_eq!(ev0(r"'a1' =~ '\\d'"), json!(true));
    assert_eq!(ev0("'日本' =~ '^\\\\p{Han}+$'"), json!(true));
    assert_eq!(ev("$.s =~ $.re", &d), json!(true));
    assert_eq!(ev("$.s =~ 'x' + 'y'", &d), json!(false));
    assert_eq!(
        eval_err("$.s =~ $.badre", &d).message,
        "invalid regular expression \"(\": error: unclosed group"
    );
    assert_eq!(err0("1 =~ 'a'"), "operator '=~' needs a string on the left, got number");
    assert_eq!(
        eval_err("'a' =~ $.n", &d).message,
        "operator '=~' needs a string (a regular expression) on the right, got number"
    );
    let e = parse_err("'a' =~ '['");
    assert_eq!(e.offset, 7);
    assert_eq!(e.message, "invalid regular expression: error: unclosed character class");
}

#[test]
fn logical_operators_short_circuit() {
    let d = data();
    assert_eq!(ev0("true && false"), json!(false));
    assert_eq!(ev0("true && true"), json!(true));
    assert_eq!(ev0("1 && 'a'"), json!(true));
    assert_eq!(ev0("0 || ''"), json!(false));
    assert_eq!(ev0("null || 'x'"), json!(true));
    assert_eq!(ev0("false || false"), json!(false));
    assert_eq!(ev("false && $.missing", &d), json!(false));
    assert_eq!(ev("true || $.missing", &d), json!(true));
    // The missing value is falsy, as in ajson.
    assert_eq!(ev("true && $.missing", &d), json!(false));
    assert_eq!(ev("$.missing || 'x'", &d), json!(true));
}

#[test]
fn ternary() {
    let d = data();
    assert_eq!(ev0("true ? 1 : 2"), json!(1));
    assert_eq!(ev0("0 ? 1 : 2"), json!(2));
    assert_eq!(ev0("'' ? 'a' : 'b'"), json!("b"));
    assert_eq!(ev("$.empty ? 1 : 2", &d), json!(2));
    assert_eq!(ev("$.emptyobj ? 1 : 2", &d), json!(2));
    // A condition on an optional field that is absent takes the other branch.
    assert_eq!(ev("$.missing ? 'fail' : 'ok'", &d), json!("ok"));
    assert_eq!(ev0("false ? 1 : true ? 2 : 3"), json!(2));
    assert_eq!(ev0("true ? false ? 1 : 2 : 3"), json!(2));
    assert_eq!(ev("true ? 1 : $.missing", &d), json!(1));
    assert_eq!(ev("$.n > 3 ? $.obj : $.arr", &d), json!({"a": 1}));
}

#[test]
fn null_coalescing() {
    let d = data();
    assert_eq!(ev0("null ?? 1"), json!(1));
    assert_eq!(ev0("0 ?? 1"), json!(0));
    assert_eq!(ev0("false ?? 1"), json!(false));
    assert_eq!(ev0("'' ?? 1"), json!(""));
    assert_eq!(ev("$.missing ?? 'd'", &d), json!("d"));
    assert_eq!(ev("$.nul ?? 'd'", &d), json!("d"));
    assert_eq!(ev("$.s.deeper ?? 'd'", &d), json!("d"));
    assert_eq!(ev("$.arr[9] ?? 'd'", &d), json!("d"));
    assert_eq!(ev("$.arr[?@ > 5] ?? 'none'", &d), json!("none"));
    assert_eq!(ev("upper($.missing) ?? 'x'", &d), json!("x"));
    assert_eq!(ev("$.missing ?? $.s", &d), json!("str"));
    assert_eq!(ev("$.missing ?? $.gone ?? 3", &d), json!(3));
    assert_eq!(ev("$.missing ?? null", &d), json!(null));
    assert_eq!(ev("$.n ?? 0 + 1", &d), json!(5));
    assert_eq!(ev("$.missing ?? 0 + 1", &d), json!(1));
    assert_eq!(
        eval_err("$.missing ?? $.gone", &d).message,
        r#"path $.gone matched nothing ($ has no key "gone")"#
    );
    // Only "matched nothing" is caught, not other failures.
    assert_eq!(
        eval_err("$.s * 2 ?? 1", &d).message,
        "operator '*' cannot be applied to string and number"
    );
}

#[test]
fn precedence() {
    let d = data();
    let cases = [
        ("1 + 2 * 3", json!(7)),
        ("(1 + 2) * 3", json!(9)),
        ("10 - 4 - 3", json!(3)),
        ("100 / 10 / 5", json!(2)),
        ("2 * 3 % 4", json!(2)),
        ("1 + 2 < 4", json!(true)),
        ("1 < 2 == true", json!(true)),
        ("1 == 1 && 2 == 2", json!(true)),
        ("true || false && false", json!(true)),
        ("(true || false) && false", json!(false)),
        ("!true || true", json!(true)),
        ("!(true || true)", json!(false)),
        ("-2 * -3", json!(6)),
        ("1 + 1 == 2 ? 'y' : 'n'", json!("y")),
        ("'a' + 1 + 2", json!("a12")),
        ("1 + 2 + 'a'", json!("3a")),
        ("'ab' =~ 'b' && 1 < 2", json!(true)),
        ("false || null ?? 'x'", json!(false)),
        ("2 * 3 ** 2", json!(18)),
    ];
    for (src, want) in cases {
        assert_eq!(ev(src, &d), want, "{src}");
    }
    assert_eq!(ev("$.missing ?? 1 == 1 ? 'a' : 'b'", &d), json!("a"));
}

#[test]
fn whitespace_is_free_between_tokens() {
    assert_eq!(ev0("1+2*3"), json!(7));
    assert_eq!(ev0("  1\n+\t2  "), json!(3));
    assert_eq!(ev("$.n*2", &data()), json!(10));
    assert_eq!(ev("$.n-1", &data()), json!(4));
}

#[test]
fn literals() {
    assert_eq!(ev0("42"), json!(42));
    assert_eq!(ev0("1.25"), json!(1.25));
    assert_eq!(ev0("2e3"), json!(2000));
    assert_eq!(ev0("1.5E-1"), json!(0.15));
    assert_eq!(ev0("18446744073709551615"), json!(u64::MAX));
    assert_eq!(ev0("'it\\'s'"), json!("it's"));
    assert_eq!(ev0("\"say \\\"hi\\\"\""), json!("say \"hi\""));
    assert_eq!(
        ev0("'tab\\there\\nnew \\u00e9 \\ud83d\\ude00'"),
        json!("tab\there\nnew é 😀")
    );
    assert_eq!(ev0("true"), json!(true));
    assert_eq!(ev0("false"), json!(false));
    assert_eq!(ev0("null"), json!(null));
    assert_eq!(ev0("'日本語'"), json!("日本語"));
}

#[test]
fn array_literals() {
    let d = data();
    assert_eq!(ev0("[]"), json!([]));
    assert_eq!(ev0("[1, 'a', null, [true]]"), json!([1, "a", null, [true]]));
    assert_eq!(ev("[$.n, $.n * 2]", &d), json!([5, 10]));
    assert_eq!(ev("$.missing ?? []", &d), json!([]));
    assert_eq!(ev("contains(['a', 'b'], $.s)", &d), json!(false));
    assert_eq!(ev("[1, 2] == $.arr", &d), json!(true));
    assert_eq!(ev0("![]"), json!(true));
    assert_eq!(
        parse_err("[1, 2").message,
        "expected ',' or ']' in the array, found end of expression"
    );
}

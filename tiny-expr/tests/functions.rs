//! Every built-in function, with its error cases.

mod common;

use common::{err0, ev, ev0, eval_err, parse_err};
use serde_json::{Value, json};

fn data() -> Value {
    json!({
        "arr": [1, 2, 3], "empty": [], "mixed": [1, "a", true, null, [1], {"k": "v"}],
        "floats": [1.5, 2], "bad": [1, "a"], "obj": {"a": 1, "b": 2},
        "items": [{"id": "x"}, {"id": "y"}]
    })
}

#[test]
fn length_and_size() {
    let d = data();
    assert_eq!(ev0("length('abc')"), json!(3));
    assert_eq!(ev0("length('héllo')"), json!(5));
    assert_eq!(ev0("length('')"), json!(0));
    assert_eq!(ev("length($.arr)", &d), json!(3));
    assert_eq!(ev("length($.obj)", &d), json!(2));
    assert_eq!(ev("size($.arr)", &d), json!(3));
    assert_eq!(ev("length($.items[*].id)", &d), json!(2));
    assert_eq!(
        err0("length(1)"),
        "length(): argument 1 must be a string, array or object, got number"
    );
    assert_eq!(
        err0("size(null)"),
        "size(): argument 1 must be a string, array or object, got null"
    );
}

#[test]
fn case_and_trim() {
    assert_eq!(ev0("upper('abc')"), json!("ABC"));
    assert_eq!(ev0("upper('straße')"), json!("STRASSE"));
    assert_eq!(ev0("lower('ÀB')"), json!("àb"));
    assert_eq!(ev0("trim('  a b \\n')"), json!("a b"));
    assert_eq!(err0("upper(1)"), "upper(): argument 1 must be a string, got number");
    assert_eq!(err0("lower(true)"), "lower(): argument 1 must be a string, got boolean");
    assert_eq!(err0("trim(null)"), "trim(): argument 1 must be a string, got null");
}

#[test]
fn split_and_join() {
    let d = data();
    assert_eq!(ev0("split('a,b,,c', ',')"), json!(["a", "b", "", "c"]));
    assert_eq!(ev0("split('a::b', '::')"), json!(["a", "b"]));
    assert_eq!(ev0("split('añb', '')"), json!(["a", "ñ", "b"]));
    assert_eq!(ev0("split('', ',')"), json!([""]));
    assert_eq!(
        err0("split(1, ',')"),
        "split(): argument 1 must be a string, got number"
    );
    assert_eq!(
        err0("split('a', 1)"),
        "split(): argument 2 must be a string, got number"
    );
    assert_eq!(ev("join($.mixed, '-')", &d), json!(r#"1-a-true--[1]-{"k":"v"}"#));
    assert_eq!(ev("join($.empty, '-')", &d), json!(""));
    assert_eq!(ev("join(split('a b c', ' '), '+')", &d), json!("a+b+c"));
    assert_eq!(ev("join($.items[*].id, ', ')", &d), json!("x, y"));
    assert_eq!(
        err0("join('abc', '-')"),
        "join(): argument 1 must be an array, got string"
    );
    assert_eq!(
        eval_err("join($.arr, 0)", &d).message,
        "join(): argument 2 must be a string, got number"
    );
}

#[test]
fn contains_function() {
    let d = data();
    assert_eq!(ev0("contains('hello', 'ell')"), json!(true));
    assert_eq!(ev0("contains('hello', 'x')"), json!(false));
    assert_eq!(ev0("contains('hello', '')"), json!(true));
    assert_eq!(ev("contains($.arr, 2.0)", &d), json!(true));
    assert_eq!(ev("contains($.arr, '2')", &d), json!(false));
    assert_eq!(ev("contains($.mixed, $.obj)", &d), json!(false));
    assert_eq!(ev("contains($.mixed, null)", &d), json!(true));
    assert_eq!(ev("contains($.obj, 'a')", &d), json!(true));
    assert_eq!(ev("contains($.obj, 'z')", &d), json!(false));
    assert_eq!(
        err0("contains('a', 1)"),
        "contains(): argument 2 must be a string, got number"
    );
    assert_eq!(
        err0("contains(1, 'a')"),
        "contains(): argument 1 must be a string, array or object, got number"
    );
}

#[test]
fn replace_function() {
    assert_eq!(ev0("replace('a.b.c', '.', '/')"), json!("a/b/c"));
    assert_eq!(ev0("replace('aaa', 'a', '')"), json!(""));
    assert_eq!(ev0("replace('héé', 'é', 'e')"), json!("hee"));
    assert_eq!(
        err0("replace(1, 'a', 'b')"),
        "replace(): argument 1 must be a string, got number"
    );
    assert_eq!(
        err0("replace('a', 'a', 2)"),
        "replace(): argument 3 must be a string, got number"
    );
}

#[test]
fn substr_function() {
    assert_eq!(ev0("substr('hello', 1)"), json!("ello"));
    assert_eq!(ev0("substr('hello', 1, 3)"), json!("ell"));
    assert_eq!(ev0("substr('hello', 10)"), json!(""));
    assert_eq!(ev0("substr('hello', 3, 100)"), json!("lo"));
    assert_eq!(ev0("substr('hello', 2.0)"), json!("llo"));
    assert_eq!(ev0("substr('日本語テキスト', 2, 2)"), json!("語テ"));
    assert_eq!(
        err0("substr('hello', -1)"),
        "substr(): argument 2 must be a non-negative whole number, got -1"
    );
    assert_eq!(
        err0("substr('hello', 1, 1.5)"),
        "substr(): argument 3 must be a non-negative whole number, got 1.5"
    );
    assert_eq!(
        err0("substr(5, 1)"),
        "substr(): argument 1 must be a string, got number"
    );
    assert_eq!(
        err0("substr('a', 'b')"),
        "substr(): argument 2 must be a number, got string"
    );
}

#[test]
fn string_and_number() {
    let d = data();
    assert_eq!(ev0("string(5)"), json!("5"));
    assert_eq!(ev0("string(1.5)"), json!("1.5"));
    assert_eq!(ev0("string(true)"), json!("true"));
    assert_eq!(ev0("string(null)"), json!(""));
    assert_eq!(ev0("string('a')"), json!("a"));
    assert_eq!(ev("string($.obj)", &d), json!(r#"{"a":1,"b":2}"#));
    assert_eq!(ev0("number('42')"), json!(42));
    assert_eq!(ev0("number(' 1.5 ')"), json!(1.5));
    assert_eq!(ev0("number('-3')"), json!(-3));
    assert_eq!(ev0("number('1e3')"), json!(1000));
    assert_eq!(ev0("number(7)"), json!(7));
    assert_eq!(ev0("number(true)"), json!(1));
    assert_eq!(ev0("number(false)"), json!(0));
    assert_eq!(err0("number('abc')"), r#"number(): cannot parse "abc" as a number"#);
    assert_eq!(err0("number('')"), r#"number(): cannot parse "" as a number"#);
    assert_eq!(err0("number('inf')"), r#"number(): cannot parse "inf" as a number"#);
    assert_eq!(err0("number('NaN')"), r#"number(): cannot parse "NaN" as a number"#);
    assert_eq!(
        err0("number(null)"),
        "number(): argument 1 must be a string, number or boolean, got null"
    );
}

#[test]
fn now_function() {
    let d = data();
    let lower = 1_704_067_200; // 2024-01-01
    for src in ["now()", "now($)", "now($.missing)"] {
        let v = ev(src, &d);
        assert!(v.as_i64().is_some_and(|s| s > lower), "{src} gave {v}");
    }
    assert_eq!(
        parse_err("now(1, 2)").message,
        "function 'now' takes 0 or 1 arguments, got 2"
    );
    let r = ev("RFC3339(now())", &d);
    assert!(r.as_str().is_some_and(|s| s.ends_with('Z') && s.len() == 20), "{r}");
}

#[test]
fn rfc3339_function() {
    assert_eq!(ev0("RFC3339(1704164645)"), json!("2024-01-02T03:04:05Z"));
    assert_eq!(ev0("RFC3339(1704164645.9)"), json!("2024-01-02T03:04:05Z"));
    assert_eq!(ev0("RFC3339(0)"), json!("1970-01-01T00:00:00Z"));
    assert_eq!(ev0("RFC3339(-1)"), json!("1969-12-31T23:59:59Z"));
    assert_eq!(ev0("RFC3339(951782400)"), json!("2000-02-29T00:00:00Z"));
    assert_eq!(
        err0("RFC3339('x')"),
        "RFC3339(): argument 1 must be a number, got string"
    );
    assert_eq!(
        err0("RFC3339(300000000000)"),
        "RFC3339(): 300000000000 is outside the years 0000 to 9999"
    );
    // Names fold case, as ajson's do.
    assert_eq!(ev0("rfc3339(0)"), json!("1970-01-01T00:00:00Z"));
}

#[test]
fn base64_functions() {
    assert_eq!(ev0("b64encode('hello')"), json!("aGVsbG8="));
    assert_eq!(ev0("b64encode('héllo')"), json!("aMOpbGxv"));
    assert_eq!(ev0("b64encode('')"), json!(""));
    assert_eq!(ev0("b64decode('aGVsbG8=')"), json!("hello"));
    assert_eq!(ev0("b64decode(b64encode('日本 😀'))"), json!("日本 😀"));
    assert_eq!(
        err0("b64decode('!!')"),
        "b64decode(): invalid base64: Invalid symbol 33, offset 0."
    );
    assert_eq!(
        err0("b64decode('aGVsbG8')"),
        "b64decode(): invalid base64: Invalid padding"
    );
    assert_eq!(
        err0("b64decode('/w==')"),
        "b64decode(): decoded bytes are not valid UTF-8"
    );
    assert_eq!(
        err0("b64encode(1)"),
        "b64encode(): argument 1 must be a string, got number"
    );
    assert_eq!(
        err0("b64decode(null)"),
        "b64decode(): argument 1 must be a string, got null"
    );
}

#[test]
fn math_functions() {
    assert_eq!(ev0("abs(-5)"), json!(5));
    assert_eq!(ev0("abs(5)"), json!(5));
    assert_eq!(ev0("abs(-1.5)"), json!(1.5));
    assert_eq!(err0("abs('a')"), "abs(): argument 1 must be a number, got string");
    assert_eq!(ev0("ceil(1.2)"), json!(2));
    assert_eq!(ev0("ceil(-1.2)"), json!(-1));
    assert_eq!(ev0("floor(1.8)"), json!(1));
    assert_eq!(ev0("floor(-1.2)"), json!(-2));
    assert_eq!(ev0("round(2.5)"), json!(3));
    assert_eq!(ev0("round(-2.5)"), json!(-3));
    assert_eq!(ev0("round(2.4)"), json!(2));
    assert_eq!(ev0("round(7)"), json!(7));
    assert_eq!(err0("ceil('a')"), "ceil(): argument 1 must be a number, got string");
    assert_eq!(err0("floor(null)"), "floor(): argument 1 must be a number, got null");
    assert_eq!(
        eval_err("round($.a)", &json!({"a": []})).message,
        "round(): argument 1 must be a number, got array"
    );
    assert_eq!(ev0("sqrt(16)"), json!(4));
    assert_eq!(ev0("sqrt(2)"), json!(std::f64::consts::SQRT_2));
    assert_eq!(err0("sqrt(-1)"), "sqrt(): cannot take the square root of -1");
    assert_eq!(ev0("pow10(3)"), json!(1000));
    assert_eq!(ev0("pow10(-1)"), json!(0.1));
    assert_eq!(err0("pow10('a')"), "pow10(): argument 1 must be a number, got string");
}

#[test]
fn array_functions() {
    let d = data();
    assert_eq!(ev("first($.arr)", &d), json!(1));
    assert_eq!(ev("last($.arr)", &d), json!(3));
    assert_eq!(ev("first($.empty)", &d), json!(null));
    assert_eq!(ev("last($.empty) ?? 'none'", &d), json!("none"));
    assert_eq!(ev("first($.items[*].id)", &d), json!("x"));
    assert_eq!(ev("last(split('a/b/c', '/'))", &d), json!("c"));
    assert_eq!(err0("first('abc')"), "first(): argument 1 must be an array, got string");
    assert_eq!(err0("last(1)"), "last(): argument 1 must be an array, got number");
    assert_eq!(ev("sum($.arr)", &d), json!(6));
    assert_eq!(ev("sum($.floats)", &d), json!(3.5));
    assert_eq!(ev("sum($.empty)", &d), json!(0));
    assert_eq!(
        eval_err("sum($.bad)", &d).message,
        "sum(): element 1 of the array is string, not a number"
    );
    assert_eq!(err0("sum('1')"), "sum(): argument 1 must be an array, got string");
    assert_eq!(ev("avg($.arr)", &d), json!(2));
    assert_eq!(ev("avg($.floats)", &d), json!(1.75));
    // As ajson: the mean of nothing is 0.
    assert_eq!(ev("avg($.empty)", &d), json!(0));
    assert_eq!(
        eval_err("avg($.bad)", &d).message,
        "avg(): element 1 of the array is string, not a number"
    );
    assert_eq!(err0("avg('x')"), "avg(): argument 1 must be an array, got string");
}

#[test]
fn prefix_suffix_index() {
    let d = data();
    assert_eq!(ev0("hasprefix('hello', 'he')"), json!(true));
    assert_eq!(ev0("hasprefix('hello', 'lo')"), json!(false));
    assert_eq!(ev0("hassuffix('hello', 'lo')"), json!(true));
    assert_eq!(ev0("hassuffix('hello', 'he')"), json!(false));
    assert_eq!(
        err0("hasprefix(1, 'a')"),
        "hasprefix(): argument 1 must be a string, got number"
    );
    assert_eq!(
        err0("hassuffix('a', null)"),
        "hassuffix(): argument 2 must be a string, got null"
    );
    assert_eq!(ev0("index('hello', 'l')"), json!(2));
    assert_eq!(ev0("index('hello', 'z')"), json!(-1));
    assert_eq!(ev0("index('日本語', '語')"), json!(2));
    assert_eq!(ev("index($.arr, 2)", &d), json!(1));
    assert_eq!(ev("index($.arr, 9)", &d), json!(-1));
    assert_eq!(
        err0("index(5, 'a')"),
        "index(): argument 1 must be a string or an array, got number"
    );
    assert_eq!(
        err0("index('a', 5)"),
        "index(): argument 2 must be a string, got number"
    );
}

#[test]
fn not_and_reverse() {
    let d = data();
    assert_eq!(ev0("not(true)"), json!(false));
    assert_eq!(ev0("not(0)"), json!(true));
    assert_eq!(ev0("not('')"), json!(true));
    assert_eq!(ev0("not('a')"), json!(false));
    assert_eq!(ev("not($.empty)", &d), json!(true));
    assert_eq!(ev0("reverse('abc')"), json!("cba"));
    assert_eq!(ev0("reverse('añb')"), json!("bña"));
    assert_eq!(ev("reverse($.arr)", &d), json!([3, 2, 1]));
    assert_eq!(
        err0("reverse(1)"),
        "reverse(): argument 1 must be a string or an array, got number"
    );
}

#[test]
fn arity_and_names_are_checked_at_compile_time() {
    let cases = [
        ("upper()", 0, "function 'upper' takes 1 argument, got 0"),
        ("substr('a')", 0, "function 'substr' takes 2 or 3 arguments, got 1"),
        (
            "1 + replace('a', 'b')",
            4,
            "function 'replace' takes 3 arguments, got 2",
        ),
        ("len('a')", 0, "unknown function 'len'"),
    ];
    for (src, offset, message) in cases {
        let e = parse_err(src);
        assert_eq!((e.offset, e.message.as_str()), (offset, message), "{src}");
    }
}

#[test]
fn functions_compose() {
    let d = json!({"user": {"email": " Ann@Example.COM "}});
    assert_eq!(ev("lower(trim($.user.email))", &d), json!("ann@example.com"));
    assert_eq!(
        ev(
            "upper(substr(trim($.user.email), 0, 1)) + substr(lower(trim($.user.email)), 1)",
            &d
        ),
        json!("Ann@example.com")
    );
    assert_eq!(ev("length(split(trim($.user.email), '@')) == 2", &d), json!(true));
}

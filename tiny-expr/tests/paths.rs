//! JSONPath selection: forms, results, no-match errors and `??` fallbacks.

mod common;

use common::{ev, eval_err, parse_err};
use serde_json::{Value, json};

fn data() -> Value {
    json!({
        "a": {"b": {"c": 1}},
        "items": [{"x": 1, "tag": "p"}, {"x": 2, "tag": "q"}, {"x": 3}],
        "one": [{"id": 7}],
        "a b": "spaced",
        "名前": "太郎",
        "nul": null,
        "s": "text",
        "k-dash": 9
    })
}

#[test]
fn selecting_single_nodes() {
    let d = data();
    assert_eq!(ev("$", &d), d);
    assert_eq!(ev("$.a.b", &d), json!({"c": 1}));
    assert_eq!(ev("$.a.b.c", &d), json!(1));
    assert_eq!(ev("$.items[0].x", &d), json!(1));
    assert_eq!(ev("$.items[-1].x", &d), json!(3));
    assert_eq!(ev("$['a b']", &d), json!("spaced"));
    assert_eq!(ev("$[\"a b\"]", &d), json!("spaced"));
    assert_eq!(ev("$['a']['b']['c']", &d), json!(1));
    assert_eq!(ev("$['k-dash']", &d), json!(9));
    assert_eq!(ev("$.名前", &d), json!("太郎"));
    assert_eq!(ev("$['名前']", &d), json!("太郎"));
    assert_eq!(ev("$.nul", &d), json!(null));
}

#[test]
fn selecting_several_nodes() {
    let d = data();
    assert_eq!(ev("$.items[*].x", &d), json!([1, 2, 3]));
    assert_eq!(ev("$.items[0:2].x", &d), json!([1, 2]));
    assert_eq!(ev("$.items[?@.x > 1].x", &d), json!([2, 3]));
    assert_eq!(ev("$.items[?@.tag == 'q'].x", &d), json!(2));
    assert_eq!(ev("$..c", &d), json!(1));
    assert_eq!(ev("$..tag", &d), json!(["p", "q"]));
    assert_eq!(ev("$['s','nul']", &d), json!(["text", null]));
    assert_eq!(ev("$.a.*", &d), json!({"c": 1}));
    // One node is the node itself, even from a wildcard (as in the Go SDK).
    assert_eq!(ev("$.one[*]", &d), json!({"id": 7}));
}

#[test]
fn paths_combine_with_operators() {
    let d = data();
    assert_eq!(ev("$.a.b.c+1", &d), json!(2));
    assert_eq!(ev("$.items[0].x-1", &d), json!(0));
    assert_eq!(ev("$.items[1].x*$.items[2].x", &d), json!(6));
    assert_eq!(ev("($.a.b.c)", &d), json!(1));
    assert_eq!(ev("sum($.items[*].x) / length($.items)", &d), json!(2));
}

#[test]
fn no_match_is_an_error_with_a_reason() {
    let d = data();
    let cases = [
        (
            "$.missing",
            r#"path $.missing matched nothing ($ has no key "missing")"#,
        ),
        ("$.a.x.c", r#"path $.a.x.c matched nothing ($.a has no key "x")"#),
        (
            "$.items[5].x",
            "path $.items[5].x matched nothing ($.items has 3 elements, no index 5)",
        ),
        (
            "$.items[2].tag",
            r#"path $.items[2].tag matched nothing ($.items[2] has no key "tag")"#,
        ),
        (
            "$.s.len",
            "path $.s.len matched nothing ($.s is a string, not an object)",
        ),
        ("$.a[0]", "path $.a[0] matched nothing ($.a is an object, not an array)"),
        ("$.nul.x", "path $.nul.x matched nothing ($.nul is null, not an object)"),
        (
            "$['a b'].z",
            r#"path $['a b'].z matched nothing ($["a b"] is a string, not an object)"#,
        ),
        ("$.items[?@.x > 10]", "path $.items[?@.x > 10] matched nothing"),
        ("$..nothing", "path $..nothing matched nothing"),
    ];
    for (src, message) in cases {
        let e = eval_err(src, &d);
        assert_eq!(e.message, message, "{src}");
        assert_eq!(e.expression, src);
        assert_eq!(e.pointer, "");
    }
}

#[test]
fn no_match_falls_back_under_coalescing() {
    let d = data();
    assert_eq!(ev("$.missing ?? 'default'", &d), json!("default"));
    assert_eq!(ev("$.items[5].x ?? 0", &d), json!(0));
    assert_eq!(ev("$.items[?@.x > 10].x ?? []", &json!({"items": []})), json!([]));
    // A matched null also falls back; a matched value does not.
    assert_eq!(ev("$.nul ?? 'default'", &d), json!("default"));
    assert_eq!(ev("$.s ?? 'default'", &d), json!("text"));
}

#[test]
fn root_may_be_any_value() {
    assert_eq!(ev("$ + 1", &json!(41)), json!(42));
    assert_eq!(ev("$[1]", &json!(["a", "b"])), json!("b"));
    assert_eq!(
        eval_err("$.a", &json!("str")).message,
        "path $.a matched nothing ($ is a string, not an object)"
    );
}

#[test]
fn invalid_paths_are_compile_errors() {
    let e = parse_err("1 + $.a[?@.b ==]");
    assert_eq!(e.offset, 15);
    assert_eq!(e.message, r#"invalid JSONPath $.a[?@.b ==]: syntax error at "]""#);
    let e = parse_err("$.a.");
    assert_eq!(e.offset, 4);
    assert_eq!(
        e.message,
        "expected a member name or '*' after '.' in a path (use $['name'] for other keys)"
    );
    let e = parse_err("$.a[0");
    assert_eq!((e.offset, e.message.as_str()), (3, "'[' in a path is never closed"));
    let e = parse_err("$['a' 'b']");
    assert_eq!(e.offset, 1);
    assert_eq!(e.message, r#"invalid JSONPath $['a' 'b']: syntax error at "['a' 'b']""#);
}

//! Templates: type preservation, interpolation, nesting, escapes and errors.

mod common;

use common::render;
use serde_json::{Value, json};
use tiny_expr::{CompileError, EvalError, Template};

fn msg() -> Value {
    json!({
        "n": 5, "f": 1.5, "b": true, "nul": null, "s": "str",
        "o": {"k": "v"}, "arr": [1, 2], "big": u64::MAX,
        "user": {"first": "Ada", "last": "Lovelace", "名前": "太郎"}
    })
}

fn compile_err(config: &Value) -> CompileError {
    match Template::compile(config) {
        Ok(t) => panic!("expected a compile error, got {t:?}"),
        Err(e) => e,
    }
}

fn render_err(config: &Value, root: &Value) -> EvalError {
    let t = Template::compile(config).unwrap_or_else(|e| panic!("compile: {e}"));
    match t.render(root) {
        Ok(v) => panic!("expected a render error, got {v}"),
        Err(e) => e,
    }
}

#[test]
fn two_expressions_in_one_string_are_two_expressions() {
    // The Go SDK's greedy `^\{\{(.+)\}\}$` reads this as the single expression
    // `$.a}} {{$.b` and yields null.
    let root = json!({"a": 1, "b": "x"});
    assert_eq!(render(&json!("{{$.a}} {{$.b}}"), &root), json!("1 x"));
    assert_eq!(render(&json!("{{$.a}}{{$.b}}"), &root), json!("1x"));
    assert_eq!(render(&json!("{{ $.a }} and {{ $.b }}"), &root), json!("1 and x"));
}

#[test]
fn whole_expressions_keep_their_type() {
    let m = msg();
    let cases = [
        ("{{$.n}}", json!(5)),
        ("{{ $.n }}", json!(5)),
        ("{{\t$.f\n}}", json!(1.5)),
        ("{{$.b}}", json!(true)),
        ("{{$.nul}}", json!(null)),
        ("{{$.s}}", json!("str")),
        ("{{$.o}}", json!({"k": "v"})),
        ("{{$.arr}}", json!([1, 2])),
        ("{{$.big}}", json!(u64::MAX)),
        ("{{$.n * 2}}", json!(10)),
        ("{{$.n > 3}}", json!(true)),
        ("{{[$.n]}}", json!([5])),
        ("{{'}}'}}", json!("}}")),
    ];
    for (src, want) in cases {
        assert_eq!(render(&json!(src), &m), want, "{src}");
    }
    assert_eq!(render(&json!("{{$}}"), &m), m);
}

#[test]
fn interpolation_formats_each_type() {
    let m = msg();
    assert_eq!(
        render(
            &json!("n={{$.n}} f={{$.f}} b={{$.b}} z={{$.nul}} s={{$.s}} o={{$.o}} a={{$.arr}}"),
            &m
        ),
        json!(r#"n=5 f=1.5 b=true z= s=str o={"k":"v"} a=[1,2]"#)
    );
    // Whitespace outside the braces makes it an interpolation, hence a string.
    assert_eq!(render(&json!(" {{$.n}}"), &m), json!(" 5"));
    assert_eq!(render(&json!("{{$.n}} "), &m), json!("5 "));
    assert_eq!(render(&json!("{{$.nul}}{{$.nul}}"), &m), json!(""));
}

#[test]
fn values_without_expressions_pass_through() {
    let config = json!({
        "plain": "no braces here",
        "single": "{ not } an {expression}",
        "closing": "text }} more",
        "n": 3, "f": 2.5, "b": false, "nul": null,
        "arr": [1, "a", {"x": []}],
        "{{$.n}}": "keys are not templated"
    });
    let t = Template::compile(&config).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.is_constant());
    assert_eq!(t.render(&msg()), Ok(config.clone()));
    assert_eq!(t.render(&Value::Null), Ok(config));
}

#[test]
fn nested_objects_and_arrays() {
    let config = json!({
        "headers": [
            {"name": "X-User", "value": "{{$.user.first}}"},
            {"name": "X-Fixed", "value": "1"}
        ],
        "body": {
            "full": "{{$.user.first}} {{$.user.last}}",
            "meta": {"count": "{{length($.arr)}}", "items": ["{{$.arr[0]}}", 2, "{{$.o}}"]}
        },
        "fixed": {"deep": {"er": [true]}}
    });
    assert_eq!(
        render(&config, &msg()),
        json!({
            "headers": [
                {"name": "X-User", "value": "Ada"},
                {"name": "X-Fixed", "value": "1"}
            ],
            "body": {
                "full": "Ada Lovelace",
                "meta": {"count": 2, "items": [1, 2, {"k": "v"}]}
            },
            "fixed": {"deep": {"er": [true]}}
        })
    );
}

#[test]
fn key_order_is_preserved() {
    let config = json!({"z": "{{1}}", "a": 2, "m": "{{3}}"});
    let out = render(&config, &Value::Null);
    let keys: Vec<&str> = out
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys, ["z", "a", "m"]);
}

#[test]
fn root_may_be_any_value() {
    assert_eq!(render(&json!("{{$.n + 1}}"), &msg()), json!(6));
    assert_eq!(render(&json!(["{{$.s}}", 1]), &msg()), json!(["str", 1]));
    assert_eq!(render(&json!(7), &msg()), json!(7));
    assert_eq!(render(&json!(null), &msg()), json!(null));
}

#[test]
fn escaped_braces() {
    let m = msg();
    assert_eq!(render(&json!("\\{{$.n}}"), &m), json!("{{$.n}}"));
    assert_eq!(render(&json!("\\{{ {{$.n}}"), &m), json!("{{ 5"));
    assert_eq!(render(&json!("x\\{{"), &m), json!("x{{"));
    assert_eq!(render(&json!("a\\b {{$.n}}"), &m), json!("a\\b 5"));
    let t = Template::compile(&json!({"t": "\\{{raw}}"})).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.is_constant());
    assert_eq!(t.render(&m), Ok(json!({"t": "{{raw}}"})));
}

#[test]
fn unicode() {
    let m = msg();
    assert_eq!(render(&json!("{{ $.user.名前 }}様 😀"), &m), json!("太郎様 😀"));
    assert_eq!(
        render(&json!({"ключ": "{{upper('ñandú')}}"}), &m),
        json!({"ключ": "ÑANDÚ"})
    );
    assert_eq!(render(&json!("{{length('👍🏽')}}"), &m), json!(2));
    let e = compile_err(&json!({"é": "日本 {{1 +}}"}));
    assert_eq!(e.pointer, "/é");
    assert_eq!(e.offset, 8);
    assert_eq!(
        e.to_string(),
        "at /é, in \"日本 {{1 +\u{2038}}}\" (column 9): expected a value, found end of expression"
    );
}

#[test]
fn compile_errors_carry_pointer_and_offset() {
    let e = compile_err(&json!({"a": {"b": ["ok", "x {{ $.y "]}}));
    assert_eq!(e.pointer, "/a/b/1");
    assert_eq!(e.offset, 2);
    assert_eq!(e.expression, "x {{ $.y ");
    assert_eq!(e.message, "'{{' is never closed: missing '}}'");
    assert_eq!(
        e.to_string(),
        "at /a/b/1, in \"x \u{2038}{{ $.y \" (column 3): '{{' is never closed: missing '}}'"
    );

    let e = compile_err(&json!({"headers": [{"value": "{{$.a}} and {{1 + * 2}}"}]}));
    assert_eq!(
        (e.pointer.as_str(), e.offset, e.message.as_str()),
        ("/headers/0/value", 18, "expected a value, found '*'")
    );

    let e = compile_err(&json!({"a/b~c": "{{}}"}));
    assert_eq!((e.pointer.as_str(), e.offset), ("/a~1b~0c", 0));
    assert_eq!(e.message, "empty expression");

    let e = compile_err(&json!("{{ unknown($) }}"));
    assert_eq!((e.pointer.as_str(), e.offset), ("", 3));
    assert_eq!(
        e.to_string(),
        "in \"{{ \u{2038}unknown($) }}\" (column 4): unknown function 'unknown'"
    );

    let e = compile_err(&json!(["{{ \"unterminated }}"]));
    assert_eq!((e.offset, e.message.as_str()), (3, "string literal is never closed"));

    let e = compile_err(&json!(["{{ $.a }x}}"]));
    assert_eq!((e.offset, e.message.as_str()), (7, "unexpected character '}'"));
}

#[test]
fn eval_errors_carry_pointer_and_expression() {
    let config = json!({"x": ["ok", "{{$.n}} {{$.s * 2}}"]});
    let e = render_err(&config, &msg());
    assert_eq!(e.pointer, "/x/1");
    assert_eq!(e.expression, "{{$.s * 2}}");
    assert_eq!(e.message, "operator '*' cannot be applied to string and number");
    assert_eq!(
        e.to_string(),
        r#"at /x/1, in "{{$.s * 2}}": operator '*' cannot be applied to string and number"#
    );

    let e = render_err(&json!({"user": {"name": "{{$.user.nmae}}"}}), &msg());
    assert_eq!(
        e.to_string(),
        r#"at /user/name, in "{{$.user.nmae}}": path $.user.nmae matched nothing ($.user has no key "nmae")"#
    );

    let e = render_err(&json!("{{ 1 / ($.n - 5) }}"), &msg());
    assert_eq!(e.pointer, "");
    assert_eq!(
        e.to_string(),
        r#"in "{{ 1 / ($.n - 5) }}": operator '/': division by zero"#
    );
}

#[test]
fn first_failing_field_is_reported() {
    let config = json!({"a": "{{$.missing1}}", "b": "{{$.missing2}}"});
    assert_eq!(render_err(&config, &msg()).pointer, "/a");
}

#[test]
fn optional_fields_with_coalescing() {
    let config = json!({
        "nick": "{{ $.user.nick ?? $.user.first }}",
        "tags": "{{ $.tags ?? [] }}",
        "line": "Hi {{ $.user.nick ?? 'there' }}!"
    });
    assert_eq!(
        render(&config, &msg()),
        json!({"nick": "Ada", "tags": [], "line": "Hi there!"})
    );
}

#[test]
fn templates_are_reusable_and_shareable() {
    fn assert_traits<T: Clone + Send + Sync + std::fmt::Debug + 'static>() {}
    assert_traits::<Template>();
    assert_traits::<tiny_expr::Expr>();
    assert_traits::<CompileError>();
    assert_traits::<EvalError>();

    let t = std::sync::Arc::new(Template::compile(&json!({"v": "{{$.i * 2}}"})).unwrap_or_else(|e| panic!("{e}")));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let t = std::sync::Arc::clone(&t);
            std::thread::spawn(move || t.render(&json!({"i": i})))
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap_or_else(|_| panic!("thread panicked"));
        assert_eq!(out, Ok(json!({"v": i * 2})));
    }
    let copy = (*t).clone();
    assert_eq!(copy.render(&json!({"i": 21})), Ok(json!({"v": 42})));
}

#[test]
fn errors_are_std_errors() {
    let e: Box<dyn std::error::Error> = Box::new(compile_err(&json!("{{")));
    assert_eq!(
        e.to_string(),
        "in \"\u{2038}{{\" (column 1): '{{' is never closed: missing '}}'"
    );
}

#[test]
fn expr_keeps_its_source() {
    let e = tiny_expr::Expr::parse(" $.n + 1 ").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.source(), " $.n + 1 ");
    assert_eq!(e.to_string(), " $.n + 1 ");
    assert_eq!(e.eval(&msg()), Ok(json!(6)));
    let err = e.eval(&json!({})).err();
    assert_eq!(
        err.map(|e| e.to_string()),
        Some(r#"in " $.n + 1 ": path $.n matched nothing ($ has no key "n")"#.to_owned())
    );
}

/// `root_keys` names the top-level fields an expression can read, or gives up.
#[test]
fn root_keys_name_what_a_template_reads() {
    let keys = |config: Value| {
        Template::compile(&config)
            .expect("compiles")
            .root_keys()
            .map(|k| k.join(","))
    };
    assert_eq!(keys(json!({"a": 1, "b": [true, "x"]})), Some(String::new()));
    assert_eq!(keys(json!("{{$.body}}")), Some("body".into()));
    assert_eq!(keys(json!("{{$['body']}}")), Some("body".into()));
    assert_eq!(keys(json!("{{$.a.b[2].c}} and {{ $.a }}")), Some("a".into()));
    assert_eq!(
        keys(json!({"x": ["{{ upper($.n ?? $.m) }}", "{{$.c ? $.d : 'no'}}"], "y": "{{ $.e =~ $.f }}"})),
        Some("n,m,c,d,e,f".into())
    );
    // Anything that may read more than named fields: the whole message.
    for config in [
        json!("{{$}}"),
        json!({"all": "{{$}}", "one": "{{$.a}}"}),
        json!("{{$[0]}}"),
        json!("{{$.*}}"),
        json!("{{$..name}}"),
        json!("{{$.items[?(@.id == $.pick)]}}"),
        json!("{{root($.a)}}"),
        json!("{{parent($.a.b)}}"),
        json!("{{length($)}}"),
    ] {
        assert_eq!(keys(config.clone()), None, "{config}");
    }
}

/// Rendering against only the fields `root_keys` names gives what rendering against
/// the whole message gives, failures included.
#[test]
fn a_template_renders_the_same_from_its_root_keys() {
    let message = json!({
        "body": "hi", "n": 3, "m": null, "user": {"name": "ada", "tags": ["a", "b"]},
        "list": [1, 2, 3], "flag": false, "extra": {"deep": {"er": 1}}
    });
    for config in [
        json!({"statusCode": 200, "body": "{{$.body}}"}),
        json!("{{ $.user.tags[1] }}-{{ $.n * 2 }}-{{ $.missing }}"),
        json!({"k": "{{ upper($.user.name) }}", "s": "{{ sum($.list) + length($.user.tags) }}"}),
        json!({"c": "{{ $.flag ? $.extra.deep : $.m ?? 'none' }}", "x": "{{ $.nothing.here }}"}),
    ] {
        let t = Template::compile(&config).expect("compiles");
        let keys = t.root_keys().expect("named fields only");
        let projected: serde_json::Map<String, Value> = message
            .as_object()
            .expect("an object")
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let projected = Value::Object(projected);
        let (mut whole_failures, mut projected_failures) = (Vec::new(), Vec::new());
        assert_eq!(
            t.render_lenient(&message, &mut whole_failures),
            t.render_lenient(&projected, &mut projected_failures),
            "{config}"
        );
        let texts = |f: &[tiny_expr::EvalError]| f.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(texts(&whole_failures), texts(&projected_failures), "{config}");
    }
}

/// `render_taking` and `render_lenient_taking` give what `render` and
/// `render_lenient` give, and move out of `$` exactly the paths placed whole that no
/// other expression reads.
#[test]
fn placed_fields_are_top_level_fields_placed_whole() {
    let t = Template::compile(&json!({"who": "{{$.user}}", "first": "{{$.o.k}}", "n": "{{$.n + 1}}", "s": "{{$.s}}"}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.placed_fields(), vec![Some("user"), None, None, Some("s")]);
    // Read again elsewhere: not placed.
    let t =
        Template::compile(&json!({"who": "{{$.user}}", "first": "{{$.user.first}}"})).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.placed_fields(), vec![None, None]);
    assert!(Template::compile(&json!("{{$.user}}")).is_ok_and(|t| t.placed_fields().is_empty()));
}

#[test]
fn rendering_by_taking_moves_only_what_nothing_else_reads() {
    let cases = [
        // Moved: placed whole, read by nothing else.
        (json!({"who": "{{$.user}}", "n": "{{$.n + 1}}"}), vec!["/user"]),
        (
            json!({"a": ["{{$.o.k}}", "{{$.arr[1]}}"], "s": "x {{$.s}}"}),
            vec!["/o/k", "/arr/1"],
        ),
        // Read again by another expression: copied.
        (json!({"who": "{{$.user}}", "first": "{{$.user.first}}"}), vec![]),
        (json!({"a": "{{$.o}}", "b": "{{$.o}}"}), vec![]),
        (json!({"a": "{{$.s}}", "b": "{{ length($.s) }}"}), vec![]),
        (json!({"a": "{{$.arr[0]}}", "b": "{{$.arr[1]}}"}), vec![]),
        // An expression that may read anything: nothing moves.
        (json!({"a": "{{$.user}}", "b": "{{$..k}}"}), vec![]),
        (json!({"a": "{{$.user}}", "b": "{{ root($.n) }}"}), vec![]),
        // A path that selects nothing moves nothing and fails as before.
        (json!({"a": "{{$.missing}}", "b": "{{$.n}}"}), vec!["/n"]),
    ];
    for (config, moved) in cases {
        let t = Template::compile(&config).unwrap_or_else(|e| panic!("compile {config}: {e}"));
        assert_eq!(t.moves_values(), !moved.is_empty(), "{config}");
        let mut root = msg();
        assert_eq!(
            t.render_taking(&mut root).map_err(|e| e.to_string()),
            t.render(&msg()).map_err(|e| e.to_string()),
            "{config}"
        );
        let (mut failed, mut failed_taking) = (Vec::new(), Vec::new());
        let mut again = msg();
        assert_eq!(
            t.render_lenient_taking(&mut again, &mut failed_taking),
            t.render_lenient(&msg(), &mut failed),
            "{config}"
        );
        assert_eq!(failed_taking, failed, "{config}");
        // The fields alone are the object's values, in its order.
        let names = t.fields().unwrap_or_else(|| panic!("{config} makes an object"));
        let whole = t.render_lenient(&msg(), &mut Vec::new());
        let values: Vec<Value> = names.iter().map(|n| whole[*n].clone()).collect();
        let mut failed_fields = Vec::new();
        assert_eq!(
            t.render_fields(&msg(), Some(&mut failed_fields)),
            Ok(values.clone()),
            "{config}"
        );
        assert_eq!(failed_fields, failed, "{config}");
        assert_eq!(
            t.render_fields_taking(&mut msg(), Some(&mut Vec::new())),
            Ok(values.clone()),
            "{config}"
        );
        // The fields placed whole, made apart from `$` (here: taken out of it first).
        let mut rest = msg();
        let placed: Vec<Option<Value>> = t
            .placed_fields()
            .iter()
            .map(|name| name.and_then(|n| rest.as_object_mut().and_then(|m| m.remove(n))))
            .collect();
        let mut failed_placed = Vec::new();
        assert_eq!(
            t.render_fields_placed(&mut rest, placed, Some(&mut failed_placed)),
            Ok(values),
            "{config}"
        );
        assert_eq!(failed_placed, failed, "{config}");
        assert_eq!(
            t.render_fields(&msg(), None).map_err(|e| e.to_string()),
            t.render(&msg())
                .map(|v| names.iter().map(|n| v[*n].clone()).collect())
                .map_err(|e| e.to_string()),
            "{config}"
        );
        // What was moved is null in the root; everything else is as it was.
        let mut expected = msg();
        for pointer in &moved {
            *expected.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer}")) = Value::Null;
        }
        assert_eq!(again, expected, "{config}: moved {moved:?}");
    }
}

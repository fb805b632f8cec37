//! One expression, or one message, cannot take a module down: long and deep expressions
//! are refused or evaluated without recursion, and what a render may build is bounded
//! (`tiny_expr::limits`).

use serde_json::{Value, json};
use tiny_expr::limits::{MAX_RENDER_BYTES, MAX_SOURCE_BYTES, MAX_TERMS};
use tiny_expr::{Expr, Template};

/// Runs `f` on a thread with `stack` bytes of stack: an expression that recursed once per
/// term would overflow it and abort the test binary, which no `catch_unwind` can stop.
fn on_small_stack<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    match std::thread::Builder::new().stack_size(stack).spawn(f) {
        Ok(handle) => match handle.join() {
            Ok(v) => v,
            Err(_) => panic!("the thread panicked"),
        },
        Err(e) => panic!("no thread: {e}"),
    }
}

fn chain(op: &str, terms: usize) -> String {
    vec!["1"; terms].join(op)
}

#[test]
fn a_chain_of_ten_thousand_terms_evaluates_on_a_small_stack() {
    // 256 KiB: an eighth of a tokio worker's stack, in a debug build.
    let out = on_small_stack(256 * 1024, || {
        let sum = Template::compile(&json!({"n": format!("{{{{{}}}}}", chain("+", MAX_TERMS))}))
            .map_err(|e| e.to_string())?;
        let all = Expr::parse(&chain(" && ", MAX_TERMS)).map_err(|e| e.to_string())?;
        let eq = Expr::parse(&chain(" == ", MAX_TERMS)).map_err(|e| e.to_string())?;
        let r = (
            sum.render(&json!({})).map_err(|e| e.to_string())?,
            all.eval(&json!({})).map_err(|e| e.to_string())?,
            eq.eval(&json!({})).map_err(|e| e.to_string())?,
        );
        // Dropping the trees must not recurse either.
        drop((sum, all, eq));
        Ok::<_, String>(r)
    });
    assert_eq!(out, Ok((json!({"n": MAX_TERMS}), json!(true), json!(false))));
}

#[test]
fn more_terms_than_the_limit_is_a_compile_error_naming_it() {
    let src = chain("+", MAX_TERMS + 1);
    let err = on_small_stack(256 * 1024, move || Expr::parse(&src).map(|_| ()));
    let Err(err) = err else {
        panic!("{} terms compiled", MAX_TERMS + 1);
    };
    assert_eq!(err.message, format!("expression has more than {MAX_TERMS} terms"));
}

#[test]
fn a_hundred_thousand_term_expression_is_refused_for_its_length() {
    let src = format!("{{{{{}}}}}", chain("+", 100_000));
    let len = src.len();
    let err = on_small_stack(256 * 1024, move || {
        Template::compile(&json!({"x": {"y": src}})).map(|_| ())
    });
    let Err(err) = err else {
        panic!("a 100k-term expression compiled");
    };
    assert_eq!(err.pointer, "/x/y");
    assert_eq!(err.offset, 0);
    assert_eq!(
        err.message,
        format!("expression is {len} bytes long, more than the limit of {MAX_SOURCE_BYTES}")
    );
}

/// The deepest expression the parser accepts, each level going through the conditional,
/// `??`, `+`, `*`, a prefix minus and `**` on the way to the next (and through every
/// logical and comparison level in its condition), evaluated on a tokio worker's 2 MiB
/// stack.
#[test]
fn the_deepest_accepted_expression_fits_a_worker_stack() {
    let mut src = String::from("$.n");
    let mut levels = 0;
    loop {
        let next = format!("(1 == 1 && 1 < 2 || false ? null ?? 1 + 1 * -({src}) ** 1 : 0)");
        if Expr::parse(&next).is_err() {
            break;
        }
        src = next;
        levels += 1;
    }
    assert!(levels >= 10, "only {levels} levels parse");
    // Each level is 1 - its inner value, from $.n = 1.
    let want = json!((0..levels).fold(1, |x, _| 1 - x));
    let out = on_small_stack(2 * 1024 * 1024, move || {
        let e = Expr::parse(&src).map_err(|e| e.to_string())?;
        e.eval(&json!({"n": 1})).map_err(|e| e.to_string())
    });
    assert_eq!(out, Ok(want));
}

#[test]
fn replace_that_would_build_more_than_the_budget_fails_before_building() {
    let t = Template::compile(&json!({"s": "{{replace($.s, '', $.t)}}"})).unwrap_or_else(|e| panic!("{e}"));
    // 100k chars × 1 KiB = 100 MB.
    let msg = json!({"s": "a".repeat(100_000), "t": "b".repeat(1024)});
    let err = t.render(&msg).err().unwrap_or_else(|| panic!("rendered 100 MB"));
    assert_eq!(err.pointer, "/s");
    assert_eq!(
        err.message,
        format!("the render would build more than {MAX_RENDER_BYTES} bytes (the limit for one message)")
    );
    // Small products still work.
    let small = json!({"s": "ab", "t": "-"});
    assert_eq!(t.render(&small).ok(), Some(json!({"s": "-a-b-"})));
}

#[test]
fn join_of_split_squares_the_message_and_is_stopped() {
    let e = Expr::parse("join(split($.s, ''), $.s)").unwrap_or_else(|e| panic!("{e}"));
    let err = e.eval(&json!({"s": "x".repeat(20_000)})).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| e.message.contains("more than 67108864 bytes")),
        "{err:?}"
    );
    assert_eq!(e.eval(&json!({"s": "ab"})).ok(), Some(json!("aabb")));
}

#[test]
fn a_long_concatenation_of_the_message_is_stopped_and_a_short_one_is_exact() {
    let body = "z".repeat(1024 * 1024);
    let src = vec!["$.s"; 100].join(" + ");
    let e = Expr::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    assert!(e.eval(&json!({"s": body})).is_err(), "100 MiB built");
    let out = e.eval(&json!({"s": "ab"})).ok();
    assert_eq!(out, Some(Value::String("ab".repeat(100))));
    // Time arithmetic still applies inside a chain.
    let t = Expr::parse("'x' + '2024-01-01T00:00:00Z' + '1h'").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.eval(&json!({})).ok(), Some(json!("x2024-01-01T00:00:00Z1h")));
    let t = Expr::parse("'2024-01-01T00:00:00Z' + '1h' + '30m'").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.eval(&json!({})).ok(), Some(json!("2024-01-01T01:30:00Z")));
}

#[test]
fn a_template_copying_a_big_value_many_times_is_stopped() {
    let fields: serde_json::Map<String, Value> = (0..100).map(|i| (format!("f{i}"), json!("{{$.body}}"))).collect();
    let t = Template::compile(&Value::Object(fields)).unwrap_or_else(|e| panic!("{e}"));
    let msg = json!({"body": {"text": "q".repeat(1024 * 1024)}});
    assert!(t.render(&msg).is_err(), "100 copies of 1 MiB rendered");
    let mut failures = Vec::new();
    let out = t.render_lenient(&msg, &mut failures);
    assert!(!failures.is_empty());
    assert!(out.get("f0").is_some_and(|v| v == &msg["body"]));
    // The next render has its whole budget again.
    assert!(t.render(&json!({"body": 1})).is_ok());
    // Interpolation is counted too.
    let interp =
        Template::compile(&json!(vec!["{{$.body.text}}{{$.body.text}}"; 40])).unwrap_or_else(|e| panic!("{e}"));
    assert!(interp.render(&msg).is_err());
}

#[test]
fn a_regex_from_the_message_is_bounded() {
    let e = Expr::parse("$.s =~ $.re").unwrap_or_else(|e| panic!("{e}"));
    let huge = "\\w{100}".repeat(200);
    let err = e.eval(&json!({"s": "a", "re": huge})).err();
    assert!(
        err.as_ref()
            .is_some_and(|e| e.message.starts_with("invalid regular expression")),
        "{err:?}"
    );
    for _ in 0..3 {
        assert_eq!(e.eval(&json!({"s": "abc", "re": "^a.c$"})).ok(), Some(json!(true)));
    }
    // A literal pattern over the limit is a compile error.
    assert!(Expr::parse(&format!("'a' =~ '{huge}'")).is_err());
}

#[test]
fn a_deep_path_filter_is_refused_not_a_crash() {
    let deep = format!("$[?{}@.a == 1{}]", "(".repeat(5000), ")".repeat(5000));
    let out = on_small_stack(2 * 1024 * 1024, move || {
        Expr::parse(&deep).map(|_| ()).map_err(|e| e.message)
    });
    assert!(out.is_err(), "a 5000-deep filter parsed");
}

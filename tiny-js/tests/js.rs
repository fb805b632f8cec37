//! The `js` runtime through the engine: the same reshaping in `js` and `expr` gives the
//! same outputs, a looping script is stopped by the watchdog (its node reports it, other
//! nodes go on), each node has an interpreter of its own, and what cannot run is refused
//! when the definition is installed.

use std::time::Duration;

use serde_json::{Value, json};
use tiny_js::JsRuntime;
use tiny_sdk::{
    engine::{DefineError, Definition, Engine, ExprRuntime},
    error::code,
    flow::FlowBuilder,
};
use tiny_testkit::components::Answer;

fn def(name: &str, script: &str) -> Definition {
    Definition {
        name: name.into(),
        script: script.into(),
        input: json!({"type": "object"}),
        output: json!({"type": "object"}),
        ..Definition::default()
    }
}

/// An engine serving `js` (with a short watchdog) and `expr`, with one node of each
/// component in `components`, each answered by a sink.
async fn engine(defs: &[(&str, &str, &str)]) -> Engine {
    engine_with(Duration::from_millis(300), defs).await
}

async fn engine_with(timeout: Duration, defs: &[(&str, &str, &str)]) -> Engine {
    let engine = Engine::builder()
        .register::<Answer>()
        .runtime(JsRuntime::default().timeout(timeout))
        .runtime(ExprRuntime)
        .build();
    let mut flow = FlowBuilder::new().node("sink", "answer");
    for (runtime, name, script) in defs {
        engine.install(runtime, def(name, script)).await.expect("installs");
        flow = flow
            .node(&format!("{name}-1"), name)
            .node(&format!("{name}-2"), name)
            .edge(&format!("{name}-1:response"), "sink:input", json!("{{$.outputData}}"))
            .edge(&format!("{name}-2:response"), "sink:input", json!("{{$.outputData}}"));
    }
    for node in flow.build().nodes {
        engine.apply(node).await.expect("loads");
    }
    engine
}

async fn ask(engine: &Engine, node: &str, data: Value) -> tiny_sdk::Result<Value> {
    let reply = engine
        .send(&format!("{node}:request"), json!({"context": null, "inputData": data}))
        .await?;
    Ok(reply.into_value().unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_same_reshaping_in_js_and_expr_gives_the_same_outputs() {
    let engine = engine(&[
        (
            "js",
            "js_shape",
            "export default (input) => ({name: input.user.name, shout: input.user.name.toUpperCase(), \
             adult: input.user.age >= 18, tags: input.tags.join(','), n: input.tags.length})",
        ),
        (
            "expr",
            "expr_shape",
            r#"{"name": "{{$.user.name}}", "shout": "{{upper($.user.name)}}", "adult": "{{$.user.age >= 18}}",
                "tags": "{{join($.tags, ',')}}", "n": "{{length($.tags)}}"}"#,
        ),
    ])
    .await;
    for input in [
        json!({"user": {"name": "Ada", "age": 36}, "tags": ["math", "engines"]}),
        json!({"user": {"name": "bo", "age": 7}, "tags": []}),
    ] {
        let js = ask(&engine, "js_shape-1", input.clone()).await.expect("js answers");
        let expr = ask(&engine, "expr_shape-1", input.clone()).await.expect("expr answers");
        assert_eq!(js, expr, "for {input}");
        assert!(js["name"].is_string(), "{js}");
    }
}

#[tokio::test]
async fn a_looping_script_is_stopped_and_other_nodes_go_on() {
    // A watchdog long enough that the other nodes answer while the loop runs.
    let engine = engine_with(
        Duration::from_secs(3),
        &[
            (
                "js",
                "spin",
                "export default (input) => { if (input.spin) { while (true) {} } return {ok: true}; }",
            ),
            ("js", "count", "let n = 0;\nexport default (input) => ({n: ++n})"),
        ],
    )
    .await;
    // Polled once, the call reaches the node's interpreter (nothing on its way waits),
    // and the loop starts.
    let mut spinning = std::pin::pin!(ask(&engine, "spin-1", json!({"spin": true})));
    assert!(futures::poll!(&mut spinning).is_pending(), "the loop ended at once");
    // While `spin-1` loops, its sibling and another component answer.
    let (sibling, other) = tokio::join!(ask(&engine, "spin-2", json!({})), ask(&engine, "count-1", json!({})));
    assert_eq!(sibling.expect("answers"), json!({"ok": true}));
    assert_eq!(other.expect("answers"), json!({"n": 1}));
    assert!(
        futures::poll!(&mut spinning).is_pending(),
        "the loop ended before the others answered"
    );
    let err = spinning.await.expect_err("stopped");
    assert_eq!(err.code(), Some(code::TIMEOUT), "{err}");
    assert!(err.message().contains("was stopped"), "{err}");
    // The same node answers the next message; its sibling and other components too.
    assert_eq!(
        ask(&engine, "spin-1", json!({})).await.expect("answers"),
        json!({"ok": true})
    );
    assert_eq!(
        ask(&engine, "spin-2", json!({})).await.expect("answers"),
        json!({"ok": true})
    );
    // Each node has an interpreter of its own: module state is not shared.
    assert_eq!(
        ask(&engine, "count-1", json!({})).await.expect("answers"),
        json!({"n": 2})
    );
    assert_eq!(
        ask(&engine, "count-2", json!({})).await.expect("answers"),
        json!({"n": 1})
    );
}

#[tokio::test]
async fn what_cannot_run_is_refused_at_install() {
    let engine = Engine::builder()
        .runtime(JsRuntime::default().timeout(Duration::from_millis(300)))
        .build();
    let err = engine
        .install("js", def("a", "export default (x) => {\n  return x +;\n}"))
        .await
        .expect_err("syntax");
    assert!(
        matches!(
            err,
            DefineError::Script {
                line: Some(2),
                column: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    let err = engine
        .install(
            "js",
            def(
                "b",
                "import pad from 'https://cdn.test/pad.js';\nexport default (x) => pad(x)",
            ),
        )
        .await
        .expect_err("import");
    assert!(
        matches!(&err, DefineError::Import { specifier, .. } if specifier == "https://cdn.test/pad.js"),
        "{err:?}"
    );
    assert!(err.to_string().contains("no network access"), "{err}");
    let err = engine
        .install("js", def("c", "export const x = 1;"))
        .await
        .expect_err("no default");
    assert!(err.to_string().contains("default export"), "{err}");
    let err = engine
        .install("js", def("d", "while (true) {}\nexport default (x) => x"))
        .await
        .expect_err("top level loops");
    assert!(err.to_string().contains("time limit"), "{err}");
    // A script that throws fails its message, naming the error.
    engine
        .install(
            "js",
            def("e", "export default (x) => { throw new Error('no ' + x.what) }"),
        )
        .await
        .expect("installs");
    let node = FlowBuilder::new().node("e-1", "e").build().nodes;
    for n in node {
        engine.apply(n).await.expect("loads");
    }
    let err = ask(&engine, "e-1", json!({"what": "luck"})).await.expect_err("throws");
    assert!(err.message().contains("no luck"), "{err}");
}

#[tokio::test]
async fn limits_that_cannot_hold_are_refused_and_no_timeout_is_no_deadline() {
    assert_eq!(
        JsRuntime::default().stack_limit(0).err(),
        Some(tiny_js::LimitError::ZeroStack)
    );
    assert!(matches!(
        JsRuntime::default().stack_limit(usize::MAX),
        Err(tiny_js::LimitError::StackTooLarge { .. })
    ));
    // A larger stack than the default: its interpreter's thread is sized for it, and
    // deep recursion fails as a script error, not a crash.
    let deep = JsRuntime::default().stack_limit(8 << 20).expect("a stack limit");
    let engine = Engine::builder()
        .register::<Answer>()
        .runtime(deep.timeout(Duration::MAX))
        .build();
    engine
        .install(
            "js",
            def(
                "deep",
                "const f = (n) => n === 0 ? 0 : 1 + f(n - 1);\nexport default (input) => ({d: f(input.n)})",
            ),
        )
        .await
        .expect("installs");
    let flow = FlowBuilder::new().node("deep-1", "deep").node("sink", "answer").edge(
        "deep-1:response",
        "sink:input",
        json!("{{$.outputData}}"),
    );
    for n in flow.build().nodes {
        engine.apply(n).await.expect("loads");
    }
    assert_eq!(
        ask(&engine, "deep-1", json!({"n": 1000})).await.expect("answers"),
        json!({"d": 1000})
    );
    let err = ask(&engine, "deep-1", json!({"n": 100_000_000}))
        .await
        .expect_err("too deep");
    assert!(err.message().contains("stack"), "{err}");
}

#[tokio::test]
async fn an_import_named_in_a_comment_or_string_is_not_one() {
    let engine = Engine::builder().runtime(JsRuntime::default()).build();
    engine
        .install(
            "js",
            def(
                "quiet",
                "// no need to import 'lodash' here\nconst note = \"import 'x'\";\nexport default (input) => ({note})",
            ),
        )
        .await
        .expect("installs");
}

// The default, current-thread runtime: a compile holding the worker would hold every
// other task too.
#[tokio::test]
async fn a_compile_does_not_hold_the_callers_worker() {
    let engine = engine_with(
        Duration::from_secs(3),
        &[("js", "count", "let n = 0;\nexport default (input) => ({n: ++n})")],
    )
    .await;
    // Its top-level code loops until the watchdog stops it.
    let mut install = std::pin::pin!(engine.install("js", def("slow", "while (true) {}\nexport default (x) => x")));
    tokio::select! {
        biased;
        done = &mut install => panic!("the compile ran on the caller's worker and ended first: {done:?}"),
        answer = ask(&engine, "count-1", json!({})) => assert_eq!(answer.expect("answers"), json!({"n": 1})),
    }
    let err = install.await.expect_err("loops");
    assert!(err.to_string().contains("time limit"), "{err}");
}

//! Runs without a durable transport (the harness, core NATS, gRPC): a run's id is
//! minted and its hops go as classic ones, as on Go's core transport; what needs the
//! run ledger says so.

use serde_json::{Value, json};
use tiny_sdk::{error::code, flow::FlowBuilder, harness::Harness, prelude::*};
use tiny_testkit::components::Answer;

/// Begins a run, sends its input down it, and answers with the run id, what came
/// back, and whether run state is there.
#[derive(Debug, Component, Default)]
#[component(name = "begin")]
struct Begin {
    input: Input<Value>,
    #[port(position = Right)]
    out: Output<Value>,
}

impl Begin {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let (run, id) = ctx.begin_run();
        let (again, same) = run.begin_run();
        assert_eq!(same, id, "in a run, begin_run returns that run");
        assert_eq!(again.run_id(), Some(id.as_str()));
        let back = self.out.emit(&run, msg).await?.into_value();
        let state = run.run_state().expect_err("no ledger here");
        let answered = ctx
            .begin_run_answered("x.y.z-1:response", std::time::Duration::from_secs(1))
            .await
            .expect_err("no inbox here");
        Ok(Reply::value(json!({
            "run": id,
            "back": back,
            "state": [state.code(), state.to_string().contains("TINY_NATS_TRANSPORT=jetstream")],
            "answered": answered.code(),
        })))
    }
}

#[tokio::test]
async fn without_a_durable_transport_a_run_goes_as_a_classic_chain_and_its_ledger_is_refused_by_name() {
    let flow = FlowBuilder::new()
        .module("m")
        .node("f.m.begin-1", "begin")
        .node("f.m.answer-1", "answer")
        .edge("f.m.begin-1:out", "f.m.answer-1:input", json!("{{$}}"))
        .build();
    let h = Harness::builder()
        .register::<Begin>()
        .register::<Answer>()
        .flow(flow)
        .build()
        .await
        .expect("loads");
    let reply = h
        .send("f.m.begin-1:input", json!({"k": 1}))
        .await
        .expect("answers")
        .into_value()
        .expect("a value");
    assert_eq!(
        reply["back"],
        json!({"k": 1}),
        "the classic chain's answer came back: {reply}"
    );
    assert_eq!(reply["run"].as_str().map(str::len), Some(36), "{reply}");
    assert_eq!(reply["state"], json!([code::NO_RUN, true]), "{reply}");
    assert_eq!(reply["answered"], json!(code::NO_RUN), "{reply}");
}

/// A durable transport whose broker is away: every stored hop fails, transiently.
struct Away;

impl tiny_sdk::engine::RemoteRouter for Away {
    fn route(
        &self,
        module: &str,
        _: tiny_sdk::engine::Delivery<'_>,
    ) -> futures::future::BoxFuture<'static, Result<Reply>> {
        let e = Error::transient(format!("module `{module}`: the broker is away")).with_code(code::UNREACHABLE);
        Box::pin(std::future::ready(Err(e)))
    }
}

/// Fails permanently on `bad`, passes `input` on.
#[derive(Debug, Component, Default)]
#[component(name = "pass")]
struct Pass {
    input: Input<Value>,
    bad: Input<Value>,
    #[port(position = Right)]
    out: Output<Value>,
}

impl Pass {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }

    async fn on_bad(&self, _: &Ctx<Self>, _: Value) -> Result<Reply> {
        Err(Error::permanent("no good"))
    }
}

#[tokio::test]
async fn a_step_whose_hops_cannot_be_stored_is_not_recorded_and_a_failed_one_is() {
    use std::sync::Arc;
    use tiny_sdk::{
        engine::{EXECUTION_MODE_LABEL, Engine},
        run::{MemoryRunStore, RunStore as _, StepRecord},
    };
    let store = Arc::new(MemoryRunStore::new());
    let engine = Engine::builder()
        .module("m")
        .register::<Pass>()
        .router(Arc::new(Away))
        .runs(store.clone())
        .build();
    let mut flow = FlowBuilder::new()
        .module("m")
        .node("f.m.pass-1", "pass")
        .node("f.m.pass-2", "pass")
        .edge("f.m.pass-1:out", "f.m.pass-2:input", json!("{{$}}"))
        .build();
    flow.nodes[0]
        .labels
        .insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
    for node in flow.nodes {
        engine.apply(node).await.expect("loads");
    }
    let e = engine.send("f.m.pass-1:input", json!(1)).await.expect_err("not stored");
    assert_eq!(e.code(), Some(code::UNREACHABLE), "{e}");
    assert!(e.is_retryable(), "the transport redelivers: {e}");
    // Step records only: each run's first message has a key of its own.
    let records = || async {
        let keys = store.keys("").await.expect("keys");
        keys.into_iter().filter(|k| k.contains("/step/")).collect::<Vec<_>>()
    };
    assert!(
        records().await.is_empty(),
        "no record: the step runs again when its message comes back"
    );
    let e = engine.send("f.m.pass-1:bad", json!(1)).await.expect_err("fails");
    assert_eq!(e.message(), "no good");
    let keys = records().await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let record =
        StepRecord::from_json_slice(&store.get(&keys[0]).await.expect("get").expect("a record")).expect("reads");
    assert!(
        record.is_failed() && record.error.as_deref() == Some("no good"),
        "{record:?}"
    );
    assert!(keys[0].ends_with(".root"), "a run minted at the node: {}", keys[0]);
}

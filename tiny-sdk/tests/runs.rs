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

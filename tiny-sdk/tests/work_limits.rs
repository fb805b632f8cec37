//! Work one message may cause is bounded: the hop budget of a root message, and
//! retries that wait at least a floor and are spread at random (issue 48).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tiny_sdk::{
    engine::MIN_RETRY_DELAY,
    error::code,
    flow::{FlowBuilder, RetryPolicy},
    harness::{Harness, Relay},
    prelude::*,
};

#[tokio::test]
async fn a_two_edge_loop_stops_at_the_hop_budget() {
    // `a` sends to itself and to `b`, which sends back to `a`: every message at `a`
    // makes two, so the work doubles at each round while the depth grows by one.
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "relay")
        .edge("a:out", "a:input", json!("{{$}}"))
        .edge("a:out", "b:input", json!("{{$}}"))
        .edge("b:out", "a:input", json!("{{$}}"))
        .build();
    let budget = 2_000;
    let h = Harness::builder()
        .register::<Relay>()
        .hop_budget(budget)
        .flow(flow)
        .build()
        .await
        .expect("loads");
    let err = h.send("a:input", json!(1)).await.expect_err("stopped by the budget");
    assert_eq!(err.code(), Some(code::HOP_BUDGET), "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("made {budget} hops (the limit)")), "{text}");
    assert!(text.contains("`a:out`") || text.contains("`b:out`"), "{text}");
    // Every hop the budget allowed arrived, and none past it (the root's own
    // delivery to `a` is not a hop of an edge).
    let hops = h.arrivals("a:input").len() + h.arrivals("b:input").len() - 1;
    assert!(
        (budget as usize - 1..=budget as usize).contains(&hops),
        "{hops} hops made under a budget of {budget}"
    );
}

#[tokio::test]
async fn a_long_chain_within_the_budget_is_not_stopped() {
    // 100 nodes in a line: 99 hops, under a budget of 99.
    let mut flow = FlowBuilder::new();
    for i in 0..100 {
        flow = flow.node(&format!("n{i}"), "relay");
    }
    for i in 0..99 {
        flow = flow.edge(&format!("n{i}:out"), &format!("n{}:input", i + 1), json!("{{$}}"));
    }
    let h = Harness::builder()
        .register::<Relay>()
        .hop_budget(99)
        .flow(flow.build())
        .build()
        .await
        .expect("loads");
    h.send("n0:input", json!(1)).await.expect("within the budget");
    assert_eq!(h.arrivals("n99:input").len(), 1);
    // A second message is a root of its own, with a budget of its own.
    h.send("n0:input", json!(2)).await.expect("a fresh budget");
}

/// When each second attempt arrived, since the test began (paused time).
static RETRIED_AT: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

/// `once`: fails its first message (retryable), records when the next one came and
/// answers it.
#[derive(Debug, Default, Component)]
#[component(name = "once")]
struct Once {
    input: Input<Value>,
    failed: std::sync::atomic::AtomicBool,
    start: Arc<Mutex<Option<tokio::time::Instant>>>,
}

impl Once {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let now = tokio::time::Instant::now();
        if !self.failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            *self.start.lock().expect("lock") = Some(now);
            return Err(Error::transient("first attempt fails"));
        }
        let first = self.start.lock().expect("lock").unwrap_or(now);
        RETRIED_AT.lock().expect("lock").push(now - first);
        Ok(Reply::value(msg))
    }
}

#[tokio::test(start_paused = true)]
async fn retries_of_branches_that_failed_together_are_spread() {
    let policy = Some(RetryPolicy {
        max_attempts: Some(2),
        initial_delay_ms: Some(1_000),
        ..Default::default()
    });
    let mut flow = FlowBuilder::new().node("a", "relay");
    let branches = 24;
    for i in 0..branches {
        flow = flow.node(&format!("o{i}"), "once").edge_with(
            "a:out",
            &format!("o{i}:input"),
            json!("{{$}}"),
            policy.clone(),
        );
    }
    let h = Harness::builder()
        .register::<Relay>()
        .register::<Once>()
        .flow(flow.build())
        .build()
        .await
        .expect("loads");
    h.send("a:input", json!(1))
        .await
        .expect("every branch succeeds on its retry");
    let waits = RETRIED_AT.lock().expect("lock").clone();
    assert_eq!(waits.len(), branches, "{waits:?}");
    // Each waited between the floor and the policy's delay, and not all the same.
    assert!(
        waits
            .iter()
            .all(|w| (MIN_RETRY_DELAY..=Duration::from_secs(1)).contains(w)),
        "{waits:?}"
    );
    let distinct: std::collections::HashSet<_> = waits.iter().collect();
    assert!(distinct.len() > branches / 2, "retries came back together: {waits:?}");
}

/// `scoper`: emits what it receives through a scoped context (a child cancellation,
/// as a server gives each request), and answers with the downstream reply.
#[derive(Debug, Default, Component)]
#[component(name = "scoper")]
struct Scoper {
    input: Input<Value>,
    out: Output<Value>,
}

impl Scoper {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let (scoped, _token) = ctx.scoped();
        self.out.emit(&scoped, msg).await
    }
}

#[tokio::test]
async fn a_scoped_context_spends_its_roots_budget() {
    // A loop of one node, each emit through a scoped context: its own cancellation,
    // the root's count. Were the count its own, the loop would run to the cycle guard.
    let flow = FlowBuilder::new()
        .node("a", "scoper")
        .edge("a:out", "a:input", json!("{{$}}"))
        .build();
    let h = Harness::builder()
        .register::<Scoper>()
        .hop_budget(50)
        .flow(flow)
        .build()
        .await
        .expect("loads");
    let err = h.send("a:input", json!(1)).await.expect_err("stopped by the budget");
    assert_eq!(err.code(), Some(code::HOP_BUDGET), "{err}");
    // The root's own delivery, and the 50 hops the budget allowed.
    assert_eq!(h.arrivals("a:input").len(), 51);
}

/// What each emit of [`Burst`]'s work answered, in order.
static BURST: Mutex<Option<tokio::sync::mpsc::UnboundedSender<Result<Reply>>>> = Mutex::new(None);

/// `burst`: on a message, starts work that emits 20 messages on `out`, one after
/// the other (a ticker's way), and hands each emit's answer to the test.
#[derive(Debug, Default, Component)]
#[component(name = "burst")]
struct Burst {
    input: Input<Value>,
    out: Output<Value>,
}

impl Burst {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let out = self.out;
        let answers = BURST.lock().expect("lock").clone();
        ctx.spawn("burst", move |ctx| async move {
            for n in 0..20 {
                let answer = out.emit(&ctx, json!(n)).await;
                if let Some(answers) = &answers {
                    let _ = answers.send(answer);
                }
            }
            Ok(())
        });
        Ok(Reply::empty())
    }
}

#[tokio::test]
async fn each_emit_of_work_is_a_root_with_a_budget_of_its_own() {
    // 20 emits of the same work's context, each two hops long, under a budget of 5:
    // were they one root, the third would be stopped.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    *BURST.lock().expect("lock") = Some(tx);
    let flow = FlowBuilder::new()
        .node("burst", "burst")
        .node("r1", "relay")
        .node("r2", "relay")
        .edge("burst:out", "r1:input", json!("{{$}}"))
        .edge("r1:out", "r2:input", json!("{{$}}"))
        .build();
    let h = Harness::builder()
        .register::<Burst>()
        .register::<Relay>()
        .hop_budget(5)
        .flow(flow)
        .build()
        .await
        .expect("loads");
    h.send("burst:input", json!("go")).await.expect("work started");
    for n in 0..20 {
        let answer = rx.recv().await.expect("the work answers each emit");
        answer.unwrap_or_else(|e| panic!("emit {n} failed: {e}"));
    }
    assert_eq!(h.arrivals("r2:input").len(), 20);
}

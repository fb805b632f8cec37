//! A hop finds its target through the target's cell, which the engine keeps in step
//! with its node table: a node reloaded, removed or made again is found as it is now,
//! with the input and mapping it has now (which an edge remembers per runner), and an
//! engine that goes lets go of its components, even when its flow is a cycle.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tiny_sdk::{
    engine::Engine,
    flow::{FlowBuilder, Node},
    harness::Relay,
    prelude::*,
};

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Tag {
    #[serde(default)]
    tag: String,
}

/// `tagged`: answers `{"tag": <its settings' tag>}`.
#[derive(Debug, Default, Component)]
#[component(name = "tagged", settings = Tag)]
struct Tagged {
    input: Input<Value>,
}

impl Tagged {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Reply {
        Reply::value(json!({"tag": ctx.settings().tag}))
    }
}

/// How many `Counted` instances are alive.
static ALIVE: AtomicUsize = AtomicUsize::new(0);

/// Counts itself in [`ALIVE`] while it lives.
#[derive(Debug)]
struct Alive;

impl Default for Alive {
    fn default() -> Self {
        ALIVE.fetch_add(1, Ordering::SeqCst);
        Alive
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        ALIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `counted`: a relay that counts its instances.
#[derive(Debug, Component)]
#[component(name = "counted")]
struct Counted {
    input: Input<Value>,
    out: Output<Value>,
    _alive: Alive,
}

impl Counted {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

fn engine() -> Engine {
    Engine::builder()
        .register::<Relay>()
        .register::<Tagged>()
        .register::<Counted>()
        .node_wait(std::time::Duration::from_millis(50))
        .build()
}

/// `b`, a `tagged` node with `tag`.
fn b(tag: &str) -> Node {
    FlowBuilder::new()
        .node("b", "tagged")
        .settings(json!({"tag": tag}))
        .build()
        .nodes
        .remove(0)
}

async fn tag_via_a(e: &Engine) -> tiny_sdk::Result<Value> {
    let reply = e.send("a:input", json!({"n": 1})).await?;
    Ok(reply.into_value().unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_target_reloaded_removed_and_made_again_is_found_as_it_is_now() {
    let e = engine();
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .edge("a:out", "b:input", json!("{{$}}"))
        .build();
    for node in flow.nodes {
        e.apply(node).await.expect("loads");
    }
    // Not loaded yet: the hop goes the general way, and fails.
    let err = tag_via_a(&e).await.expect_err("no b yet");
    assert!(err.to_string().contains("`b`"), "{err}");
    e.apply(b("one")).await.expect("loads");
    assert_eq!(tag_via_a(&e).await.expect("b answers"), json!({"tag": "one"}));
    // A new spec: a new runner in the same cell.
    e.apply(b("two")).await.expect("reloads");
    assert_eq!(tag_via_a(&e).await.expect("b answers"), json!({"tag": "two"}));
    e.remove("b", true).await.expect("removed");
    let err = tag_via_a(&e).await.expect_err("b is gone");
    assert!(err.to_string().contains("`b`"), "{err}");
    e.apply(b("three")).await.expect("made again");
    assert_eq!(tag_via_a(&e).await.expect("b answers"), json!({"tag": "three"}));
}

/// `two`: answers which of its inputs a message came in on, and the message.
#[derive(Debug, Default, Component)]
#[component(name = "two")]
struct Two {
    left: Input<Value>,
    right: Input<Value>,
}

impl Two {
    async fn on_left(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(json!({"port": "left", "got": msg}))
    }

    async fn on_right(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(json!({"port": "right", "got": msg}))
    }
}

/// A flow where the relays `a` and `c` send to `b:right` (`b` a `two`): one edge per
/// `(sender, mapping)`, in that order, so `b`'s mappings are listed in that order.
fn fed_into_b(edges: &[(&str, Value)]) -> Vec<Node> {
    let mut flow = FlowBuilder::new()
        .node("a", "relay")
        .node("c", "relay")
        .node("b", "two");
    for (from, mapping) in edges {
        flow = flow.edge(&format!("{from}:out"), "b:right", mapping.clone());
    }
    flow.build().nodes
}

/// The node `b` of [`fed_into_b`]'s flow.
fn b_fed(edges: &[(&str, Value)]) -> Node {
    fed_into_b(edges)
        .into_iter()
        .find(|n| n.name == "b")
        .unwrap_or_else(|| panic!("the flow has b"))
}

#[tokio::test]
async fn a_reloaded_target_takes_each_message_with_the_mapping_it_has_now() {
    let e = Engine::builder().register::<Relay>().register::<Two>().build();
    let from_c = ("c", json!({"from": "c"}));
    for node in fed_into_b(&[("a", json!({"from": "a", "n": "{{$.n}}"})), from_c.clone()]) {
        e.apply(node).await.expect("loads");
    }
    let via = |from: &'static str| {
        let e = &e;
        async move {
            let reply = e
                .send(&format!("{from}:input"), json!({"n": 1}))
                .await
                .expect("b answers");
            reply.into_value().unwrap_or(Value::Null)
        }
    };
    // Twice each: the second hop along an edge reads where it lands from the edge.
    for _ in 0..2 {
        assert_eq!(via("a").await, json!({"port": "right", "got": {"from": "a", "n": 1}}));
        assert_eq!(via("c").await, json!({"port": "right", "got": {"from": "c"}}));
    }
    // `b` again, its mappings listed the other way round and `a`'s changed: each
    // sender's messages take its own mapping as it is now.
    e.apply(b_fed(&[
        from_c.clone(),
        ("a", json!({"from": "a", "twice": "{{$.n * 2}}"})),
    ]))
    .await
    .expect("reloads");
    for _ in 0..2 {
        assert_eq!(
            via("a").await,
            json!({"port": "right", "got": {"from": "a", "twice": 2}})
        );
        assert_eq!(via("c").await, json!({"port": "right", "got": {"from": "c"}}));
    }
    // And without `a`'s edge: `b:right` gets the port's default from `a` (the Go
    // SDK's rule for an edge without a mapping), `c`'s mapping still from `c`.
    e.apply(b_fed(&[from_c])).await.expect("reloads");
    assert_eq!(via("c").await, json!({"port": "right", "got": {"from": "c"}}));
    assert_eq!(via("a").await, json!({"port": "right", "got": null}));
}

#[tokio::test]
async fn an_engine_whose_flow_is_a_cycle_lets_go_of_its_components_when_it_goes() {
    let before = ALIVE.load(Ordering::SeqCst);
    {
        let e = engine();
        let flow = FlowBuilder::new()
            .node("x", "counted")
            .node("y", "counted")
            .edge("x:out", "y:input", json!("{{$}}"))
            .edge("y:out", "x:input", json!("{{$}}"))
            .build();
        for node in flow.nodes {
            e.apply(node).await.expect("loads");
        }
        assert_eq!(ALIVE.load(Ordering::SeqCst), before + 2);
        // Round and round until the cycle guard: every route has found its target.
        let err = e.send("x:input", json!(1)).await.expect_err("the cycle guard");
        assert_eq!(err.code(), Some(tiny_sdk::error::code::CYCLE), "{err}");
    }
    assert_eq!(
        ALIVE.load(Ordering::SeqCst),
        before,
        "x and y lead to each other; with the engine gone, both are dropped"
    );
}

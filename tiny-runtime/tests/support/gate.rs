//! What the flood tests share (`flood.rs` on core NATS, `flood_jetstream.rs` on
//! JetStream): a slow `gate` component, whose handlers wait until the test opens the
//! gate, and what it counts. They differ in where a message is recorded:
//! [`record_at`] says.

use std::sync::{
    Mutex, OnceLock,
    atomic::{AtomicUsize, Ordering},
};

use tiny_sdk::{engine::Engine, flow::FlowBuilder, prelude::*};
use tokio::sync::watch;

/// Opened by the test: until then every handler waits (a slow handler, without a clock).
pub fn gate() -> &'static watch::Sender<bool> {
    static GATE: OnceLock<watch::Sender<bool>> = OnceLock::new();
    GATE.get_or_init(|| watch::channel(false).0)
}

/// Handlers running now.
pub fn live() -> &'static watch::Sender<usize> {
    static LIVE: OnceLock<watch::Sender<usize>> = OnceLock::new();
    LIVE.get_or_init(|| watch::channel(0).0)
}

/// The most handlers that ran at once.
pub static MOST_LIVE: AtomicUsize = AtomicUsize::new(0);
/// The numbers the handler calls got, recorded where [`record_at`] says.
pub static HANDLED: Mutex<Vec<i64>> = Mutex::new(Vec::new());

/// Where the `gate` records a message's number in [`HANDLED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// As the handler starts: every message taken, answered or not.
    BeforeTheGate,
    /// Once the gate let it through: every message handled to its end.
    AfterTheGate,
}

static RECORDED: OnceLock<Recorded> = OnceLock::new();

/// Says where the `gate` records, before any message comes (unsaid: before the gate).
pub fn record_at(point: Recorded) {
    let _ = RECORDED.set(point);
}

/// Module `b`'s engine with one `gate` node, `f.b.gate-1`, at most `cap` messages in
/// its handlers at once.
pub async fn gate_module(cap: usize) -> Engine {
    let engine = Engine::builder()
        .module("b")
        .register::<Gate>()
        .max_in_flight(cap)
        .build();
    let flow = FlowBuilder::new().module("b").node("f.b.gate-1", "gate").build();
    for node in flow.nodes {
        engine.apply(node).await.expect("loads");
    }
    engine
}

/// `gate`: waits for the test's gate, then answers its number.
#[derive(Debug, Component, Default)]
#[component(name = "gate")]
pub struct Gate {
    input: Input<i64>,
}

impl Gate {
    async fn on_input(&self, _: &Ctx<Self>, n: i64) -> Reply {
        let point = RECORDED.get().copied().unwrap_or(Recorded::BeforeTheGate);
        live().send_modify(|l| {
            *l += 1;
            MOST_LIVE.fetch_max(*l, Ordering::SeqCst);
        });
        if point == Recorded::BeforeTheGate {
            HANDLED.lock().expect("lock").push(n);
        }
        let _ = gate().subscribe().wait_for(|open| *open).await;
        if point == Recorded::AfterTheGate {
            HANDLED.lock().expect("lock").push(n);
        }
        live().send_modify(|l| *l -= 1);
        Reply::value(serde_json::json!(n))
    }
}

//! Allocations per hop, counted: a same-type `{{$}}` edge hands the typed value over.
//!
//! A counting global allocator (this test binary only) measures a 1-node and an
//! 11-node chain; the difference over 10 hops is the cost of a hop, without what a
//! send itself costs.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::atomic::{AtomicU64, Ordering},
};

use serde_json::json;
use tiny_sdk::{
    Hop, Msg,
    engine::Engine,
    flow::{FlowBuilder, RetryPolicy},
    prelude::*,
};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds
// `GlobalAlloc`'s contract; the counter is only an atomic add on the side.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same layout as given to us, per the caller's contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The flow benchmark's payload (bench/node-red/README.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Payload {
    n: u64,
    v: i64,
    user: User,
    text: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct User {
    name: String,
    tags: Vec<String>,
}

/// `v = n`, and on.
#[derive(Debug, Component, Default)]
#[component(name = "step")]
struct Step {
    input: Input<Payload>,
    out: Output<Payload>,
}

impl Step {
    async fn on_input(&self, ctx: &Ctx<Self>, mut msg: Payload) -> Result<Reply> {
        msg.v = msg.n as i64;
        self.out.emit(ctx, msg).await
    }
}

async fn chain(hops: usize, retry: Option<RetryPolicy>) -> Engine {
    let e = Engine::builder().register::<Step>().build();
    let mut b = FlowBuilder::new();
    for i in 0..=hops {
        b = b.node(&format!("s{i}"), "step");
    }
    for i in 0..hops {
        b = b.edge_with(
            &format!("s{i}:out"),
            &format!("s{}:input", i + 1),
            json!("{{$}}"),
            retry.clone(),
        );
    }
    for node in b.build().nodes {
        e.apply(node).await.expect("loads");
    }
    e
}

fn payload(n: u64) -> Payload {
    Payload {
        n,
        v: 0,
        user: User {
            name: "ada".into(),
            tags: vec!["a".into(), "b".into()],
        },
        text: "hello world".into(),
    }
}

/// Allocations of `n` typed sends into `e`.
async fn count(e: &Engine, n: u64) -> u64 {
    let hop = Hop::default();
    let before = ALLOCS.load(Ordering::Relaxed);
    for i in 0..n {
        let msg = Msg::new(payload(i));
        e.send_msg("s0:input", msg, hop.clone()).await.expect("arrives");
    }
    ALLOCS.load(Ordering::Relaxed) - before
}

async fn per_hop(retry: Option<RetryPolicy>) -> f64 {
    const N: u64 = 2000;
    let (short, long) = (chain(0, retry.clone()).await, chain(10, retry).await);
    count(&short, 100).await; // warm-up
    count(&long, 100).await;
    let a = count(&short, N).await;
    let b = count(&long, N).await;
    (b as f64 - a as f64) / (10 * N) as f64
}

#[test]
fn a_same_type_hop_allocates_at_most_twice() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let moved = rt.block_on(per_hop(Some(RetryPolicy {
        max_attempts: Some(1),
        ..RetryPolicy::default()
    })));
    let kept = rt.block_on(per_hop(None));
    eprintln!(
        "allocations per same-type {{{{$}}}} hop: {moved:.2} (no retries: moved), {kept:.2} (default retries: cloned)"
    );
    assert!(moved <= 2.0, "{moved} allocations per hop");
    // The copy an edge that may retry keeps costs what cloning the payload does (five
    // heap blocks here), and still no JSON.
    assert!(kept <= 2.0 + 5.0, "{kept} allocations per hop");
}

//! Allocations per hop, counted: a same-type `{{$}}` edge hands the typed value over.
//!
//! A counting global allocator (this test binary only) measures a 1-node and an
//! 11-node chain; the difference over 10 hops is the cost of a hop, without what a
//! send itself costs. Likewise a fan-out to 1 and to 11 receivers gives the cost of a
//! branch, for receivers that borrow the message and for ones that take it.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};
use tiny_testkit::components::{Payload, Step, User};

use serde_json::json;
use tiny_sdk::{
    Hop, Msg,
    engine::{Delivery, Engine, HopEvent, HopKind, Observer},
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

/// The counter is global: the tests of this file take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn runtime() -> (std::sync::MutexGuard<'static, ()>, tokio::runtime::Runtime) {
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    (turn, rt)
}

/// The end of a fan-out, borrowing the message.
#[derive(Debug, Component, Default)]
#[component(name = "lend")]
struct Lend {
    input: Input<Payload>,
}

impl Lend {
    async fn on_input(&self, _: &Ctx<Self>, msg: &Payload) -> Reply {
        std::hint::black_box(msg.v);
        Reply::empty()
    }
}

/// The end of a fan-out, taking the message.
#[derive(Debug, Component, Default)]
#[component(name = "own")]
struct Own {
    input: Input<Payload>,
}

impl Own {
    async fn on_input(&self, _: &Ctx<Self>, msg: Payload) -> Reply {
        std::hint::black_box(msg.v);
        Reply::empty()
    }
}

/// Counts deliveries, as the runtime's metrics do; `data` says whether it reads them.
struct Counter {
    data: bool,
    delivered: AtomicU64,
    with_data: AtomicU64,
}

impl Observer for Counter {
    fn on_hop(&self, event: &HopEvent<'_>) {
        if event.kind == HopKind::Delivered {
            self.delivered.fetch_add(1, Ordering::Relaxed);
            if event.data.is_some() {
                self.with_data.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn wants_data(&self, _: &str) -> bool {
        self.data
    }
}

async fn chain(hops: usize, retry: Option<RetryPolicy>, observer: Option<Arc<Counter>>) -> Engine {
    let mut b = Engine::builder().register::<Step>();
    if let Some(o) = observer {
        b = b.observer(o);
    }
    let e = b.build();
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
        e.deliver(Delivery::to("s0:input", msg).expect("an address").hop(hop.clone()))
            .await
            .expect("arrives");
    }
    ALLOCS.load(Ordering::Relaxed) - before
}

/// Allocations per message that `large` makes beyond `small`, per one of the `extra`
/// hops or branches it has more.
async fn per_extra(small: &Engine, large: &Engine, extra: u64) -> f64 {
    const N: u64 = 2000;
    count(small, 100).await; // warm-up
    count(large, 100).await;
    let a = count(small, N).await;
    let b = count(large, N).await;
    (b as f64 - a as f64) / (extra * N) as f64
}

async fn per_hop(retry: Option<RetryPolicy>, observer: Option<Arc<Counter>>) -> f64 {
    let (short, long) = (
        chain(0, retry.clone(), observer.clone()).await,
        chain(10, retry, observer).await,
    );
    per_extra(&short, &long, 10).await
}

fn no_retries() -> Option<RetryPolicy> {
    Some(RetryPolicy {
        max_attempts: Some(1),
        ..RetryPolicy::default()
    })
}

#[test]
fn a_same_type_hop_allocates_at_most_twice() {
    let (_turn, rt) = runtime();
    let moved = rt.block_on(per_hop(no_retries(), None));
    let kept = rt.block_on(per_hop(None, None));
    eprintln!(
        "allocations per same-type {{{{$}}}} hop: {moved:.2} (no retries: moved), {kept:.2} (default retries: cloned)"
    );
    assert!(moved <= 2.0, "{moved} allocations per hop");
    // The copy an edge that may retry keeps costs what cloning the payload does (five
    // heap blocks here), and still no JSON.
    assert!(kept <= 2.0 + 5.0, "{kept} allocations per hop");
}

#[test]
fn an_observer_that_only_counts_leaves_the_value_to_the_handler() {
    let (_turn, rt) = runtime();
    let counting = Arc::new(Counter {
        data: false,
        delivered: AtomicU64::new(0),
        with_data: AtomicU64::new(0),
    });
    let moved = rt.block_on(per_hop(no_retries(), Some(counting.clone())));
    assert!(moved <= 2.0, "{moved} allocations per hop with a counting observer");
    assert!(
        counting.delivered.load(Ordering::Relaxed) > 0,
        "the observer saw the hops"
    );
    assert_eq!(counting.with_data.load(Ordering::Relaxed), 0, "and no payload");
    // An observer that reads the payload keeps a reference: the handler gets a copy.
    let reading = Arc::new(Counter {
        data: true,
        delivered: AtomicU64::new(0),
        with_data: AtomicU64::new(0),
    });
    let copied = rt.block_on(per_hop(no_retries(), Some(reading.clone())));
    assert!(
        copied >= moved + 5.0,
        "{copied} allocations per hop with a reading observer"
    );
    assert_eq!(
        reading.with_data.load(Ordering::Relaxed),
        reading.delivered.load(Ordering::Relaxed)
    );
    eprintln!("allocations per hop: {moved:.2} with a counting observer, {copied:.2} with one that reads the payload");
}

/// `s0` feeding `width` receivers of component `sink` on edges with the default
/// retry policy (each keeps the message for a retry).
async fn fan(width: usize, sink: &str) -> Engine {
    let e = Engine::builder()
        .register::<Step>()
        .register::<Lend>()
        .register::<Own>()
        .build();
    let mut b = FlowBuilder::new().node("s0", "step");
    for i in 0..width {
        b = b
            .node(&format!("t{i}"), sink)
            .edge("s0:out", &format!("t{i}:input"), json!("{{$}}"));
    }
    for node in b.build().nodes {
        e.apply(node).await.expect("loads");
    }
    e
}

async fn per_branch(sink: &str) -> f64 {
    let (one, eleven) = (fan(1, sink).await, fan(11, sink).await);
    per_extra(&one, &eleven, 10).await
}

#[test]
fn a_borrowing_receiver_costs_a_fan_out_no_copy() {
    let (_turn, rt) = runtime();
    let lent = rt.block_on(per_branch("lend"));
    let owned = rt.block_on(per_branch("own"));
    eprintln!(
        "allocations per fan-out branch on a retrying edge: {lent:.2} (borrowing receiver), {owned:.2} (receiver taking the value)"
    );
    // The branch's hop future, and a tenth of the fan-out's own three (its future, the
    // branches', their results); the message is shared, not copied.
    assert!(lent <= 1.3 + 0.01, "{lent} allocations per branch");
    // A receiver that takes the value gets a copy (five heap blocks here).
    assert!(owned >= lent + 5.0, "{owned} allocations per branch");
}

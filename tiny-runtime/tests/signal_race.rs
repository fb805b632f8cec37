//! Two replicas that both believe they lead (a lease handover: the old holder has not
//! yet noticed it lost the lease) race on the same TinySignals, on a real API server,
//! and each signal's flow runs exactly once: only the replica whose claim the API
//! server accepted runs it.
//!
//! Both replicas are modules in this process that always lead. Their API server
//! clients pass through a gate that holds each replica's claim on a signal (its first
//! status write to it) until the other replica has read the same version and tried
//! its own claim too, then lets one claim through and the other after the first's
//! answer: the order at a handover when both saw the signal before either's claim
//! landed. The second claim is refused (409), so a replica that ran the flow before
//! its claim was confirmed would be seen here running it a second time.

use std::{
    collections::{HashMap, HashSet},
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use kube::{Api, Client, api::PostParams, client::ClientBuilder};
use serde_json::{Value, json};
use tiny_runtime::{
    config::ModuleConfig,
    crd::{TinySignal, TinySignalSpec},
    runtime::{Options, Runtime},
};
use tiny_sdk::{flow::RawJson, prelude::*};
use tiny_testkit::{
    cluster::{SIGNAL_WAIT, apply_yaml, delivered, env},
    eventually, seen,
};
use tokio::sync::{Barrier, Semaphore};

const MODULE: &str = "race-module-v0";
const NS: &str = "race";
const NODE: &str = "f.race-module-v0.count-1";

/// `count` on replica `a`: records that `a` ran the flow for the message, and answers.
#[derive(Debug, Component, Default)]
#[component(name = "count")]
struct CountA {
    input: Input<Value>,
}

impl CountA {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        seen::record(NODE, format!("a:{msg}"));
        Reply::value(json!("a"))
    }
}

/// `count` on replica `b`, the same as [`CountA`] but recording `b`.
#[derive(Debug, Component, Default)]
#[component(name = "count")]
struct CountB {
    input: Input<Value>,
}

impl CountB {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        seen::record(NODE, format!("b:{msg}"));
        Reply::value(json!("b"))
    }
}

/// What both replicas' gates share: for each signal, a meeting point for the two
/// claims and the second claim's turn.
#[derive(Default)]
struct Meeting {
    signals: Mutex<HashMap<String, Arc<Turn>>>,
}

struct Turn {
    /// How many claims came to the meeting.
    arrived: AtomicUsize,
    /// Both claims are here: neither has reached the API server yet.
    both: Barrier,
    /// Given once the first claim has its answer.
    second: Semaphore,
}

impl Meeting {
    fn turn(&self, signal: &str) -> Arc<Turn> {
        let mut signals = self.signals.lock().unwrap_or_else(|e| e.into_inner());
        signals
            .entry(signal.to_owned())
            .or_insert_with(|| {
                Arc::new(Turn {
                    arrived: AtomicUsize::new(0),
                    both: Barrier::new(2),
                    second: Semaphore::new(0),
                })
            })
            .clone()
    }
}

/// One replica's gate ([`tower::Layer`]): it holds the replica's first status write to
/// each TinySignal (its claim) at the [`Meeting`].
#[derive(Clone)]
struct Gate {
    meeting: Arc<Meeting>,
    /// Signals this replica has written to once already.
    claimed: Arc<Mutex<HashSet<String>>>,
}

impl<S> tower::Layer<S> for Gate {
    type Service = Gated<S>;
    fn layer(&self, inner: S) -> Gated<S> {
        Gated {
            inner,
            gate: self.clone(),
        }
    }
}

struct Gated<S> {
    inner: S,
    gate: Gate,
}

/// The signal a request writes the status of: `PATCH .../tinysignals/<name>/status`.
fn signal_status_write<B>(req: &http::Request<B>) -> Option<String> {
    if req.method() != http::Method::PATCH {
        return None;
    }
    let path = req.uri().path();
    let rest = path.split_once("/tinysignals/")?.1;
    Some(rest.strip_suffix("/status")?.to_owned())
}

impl<S, B> tower::Service<http::Request<B>> for Gated<S>
where
    S: tower::Service<http::Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let first_write = signal_status_write(&req).filter(|signal| {
            let mut claimed = self.gate.claimed.lock().unwrap_or_else(|e| e.into_inner());
            claimed.insert(signal.clone())
        });
        // The request is sent when this future is first polled, after the wait.
        let sent = self.inner.call(req);
        let Some(signal) = first_write else {
            return Box::pin(sent);
        };
        let turn = self.gate.meeting.turn(&signal);
        turn.arrived.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if turn.both.wait().await.is_leader() {
                let answer = sent.await;
                turn.second.add_permits(1);
                answer
            } else {
                let _turn = turn.second.acquire().await;
                sent.await
            }
        })
    }
}

/// A client of the test's API server whose claims go through `gate`.
fn gated_client(env: &tiny_testenv::TestEnv, gate: &Gate) -> Client {
    ClientBuilder::try_from(env.config().clone())
        .expect("a client of the test API server")
        .with_layer(gate)
        .build()
}

async fn replica(client: Client, identity: &str, registry: tiny_sdk::engine::Registry) -> Runtime {
    Runtime::start(
        client,
        Options::new(ModuleConfig::new(MODULE, "0.1.0", NS, identity), registry),
    )
    .await
    .expect("the module starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_leaders_racing_on_a_signal_run_its_flow_once() {
    let env = env().await;
    let admin = env.client();
    env.create_namespace(NS).await.expect("namespace");
    apply_yaml(
        &admin,
        NS,
        &format!(
            "apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
             metadata: {{ name: {NODE}, labels: {{ tinysystems.io/flow-name: f }} }}\n\
             spec: {{ module: {MODULE}, component: count }}\n"
        ),
    )
    .await;

    let meeting = Arc::new(Meeting::default());
    let gate = || Gate {
        meeting: meeting.clone(),
        claimed: Arc::default(),
    };
    let mut registry_a = tiny_sdk::engine::Registry::default();
    registry_a.register::<CountA>();
    let mut registry_b = tiny_sdk::engine::Registry::default();
    registry_b.register::<CountB>();
    let a = replica(gated_client(&env, &gate()), "replica-a", registry_a).await;
    let b = replica(gated_client(&env, &gate()), "replica-b", registry_b).await;
    assert!(a.is_leader() && b.is_leader(), "both replicas believe they lead");
    // Both deliver on sight, the way that ran the flow before the claim landed.
    eventually("both replicas to load the node", Duration::from_secs(60), || async {
        (a.engine().has_node(NODE) && b.engine().has_node(NODE)).then_some(())
    })
    .await;

    // One at a time: what a loser does with a signal after its refused claim is done
    // before the next signal finishes, so every race but the marker's is counted.
    let signals: Api<TinySignal> = Api::namespaced(admin.clone(), NS);
    let races = ["race-1", "race-2", "race-3"];
    let mut winners = Vec::new();
    for (n, name) in races.iter().chain(["marker"].iter()).enumerate() {
        let spec = TinySignalSpec {
            node: NODE.into(),
            port: "input".into(),
            data: Some(RawJson(json!(n))),
            ..Default::default()
        };
        signals
            .create(&PostParams::default(), &TinySignal::new(name, spec))
            .await
            .expect("signal created");
        let finished = eventually(&format!("signal {name} to finish"), SIGNAL_WAIT, || {
            let signals = signals.clone();
            async move {
                let s = signals.get(name).await.ok()?;
                s.status.as_ref()?.signal_phase()?.is_final().then_some(s)
            }
        })
        .await;
        let reply = delivered(&finished);
        // The replica that ran the flow is the one whose claim stands.
        let by = finished
            .status
            .clone()
            .unwrap_or_default()
            .claimed_by
            .unwrap_or_default();
        assert_eq!(
            reply.map(|r| format!("replica-{}", r.as_str().unwrap_or_default())),
            Some(by.clone()),
            "{name}: the reply comes from the claimer"
        );
        // Both replicas met at the gate: each tried to claim the signal.
        assert_eq!(meeting.turn(name).arrived.load(Ordering::SeqCst), 2, "{name}");
        winners.push(by);
    }

    let runs = seen::take(NODE);
    for (n, name) in races.iter().enumerate() {
        let of_it: Vec<_> = runs.iter().filter(|r| r.ends_with(&format!(":{n}"))).collect();
        assert_eq!(
            of_it.len(),
            1,
            "{name}'s flow ran once, on the replica whose claim won ({}): {of_it:?}",
            winners[n]
        );
    }
    a.stop().await;
    b.stop().await;
}

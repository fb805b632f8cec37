//! Listening as one transport shape: the module binary starts the transports it is
//! configured with through `Listen` and `listen_all` alone. Two written here (one
//! served as a future, one on tasks of its own) are started, served, failed and
//! stopped as the built-in ones are; and gRPC with core NATS, started that way on a
//! real socket and a real `nats-server`, answer until stopped, each handler told
//! whether its replica leads.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use async_nats::HeaderMap;
use futures::future::BoxFuture;
use serde_json::json;
use tiny_runtime::{
    carrier::{Listen, Serving, listen_all},
    grpc::{Grpc, Pool, PoolOptions},
    leader::Leadership,
    nats::{Link, Subscriptions},
};
use tiny_sdk::{engine::Engine, flow::FlowBuilder};
use tiny_testkit::{
    NatsServer,
    components::{Echo, Whoami},
};
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(20);

/// What the test listeners did, in order.
type Log = Arc<Mutex<Vec<String>>>;

fn said(log: &Log, what: String) {
    if let Ok(mut log) = log.lock() {
        log.push(what);
    }
}

fn read(log: &Log) -> Vec<String> {
    log.lock().map(|l| l.clone()).unwrap_or_default()
}

/// Says when the future holding it is dropped.
struct Dropped(&'static str, Log);

impl Drop for Dropped {
    fn drop(&mut self) {
        said(&self.1, format!("{} dropped", self.0));
    }
}

/// How a test listener behaves.
#[derive(Debug)]
enum Kind {
    /// Serves as a future, which ends with the error sent on the channel (if any).
    Future(Option<oneshot::Receiver<tiny_runtime::Error>>),
    /// Runs on a task of its own, ended by its stop.
    Tasks,
    /// Cannot start.
    Refuses,
}

/// A transport written after gRPC, NATS and JetStream.
#[derive(Debug)]
struct Later {
    name: &'static str,
    kind: Kind,
    log: Log,
}

impl Later {
    fn boxed(name: &'static str, kind: Kind, log: &Log) -> Box<dyn Listen> {
        Box::new(Self {
            name,
            kind,
            log: log.clone(),
        })
    }
}

impl Listen for Later {
    fn name(&self) -> &'static str {
        self.name
    }

    fn listen(
        self: Box<Self>,
        engine: Engine,
        leadership: Leadership,
    ) -> BoxFuture<'static, Result<Serving, tiny_runtime::Error>> {
        let Self { name, kind, log } = *self;
        said(
            &log,
            format!(
                "{name} started for {} (leads: {})",
                engine.module(),
                leadership.is_leader()
            ),
        );
        Box::pin(async move {
            match kind {
                Kind::Future(failure) => {
                    let guard = Dropped(name, log);
                    Ok(Serving::future(name, async move {
                        let _guard = guard;
                        match failure {
                            Some(failure) => match failure.await {
                                Ok(e) => Err(e),
                                Err(_) => std::future::pending().await,
                            },
                            None => std::future::pending().await,
                        }
                    }))
                }
                Kind::Tasks => Ok(Serving::tasks(
                    name,
                    async move { said(&log, format!("{name} stopped")) },
                )),
                Kind::Refuses => Err(refused(name)),
            }
        })
    }
}

fn refused(name: &str) -> tiny_runtime::Error {
    tiny_runtime::Error::Nats(tiny_sdk::Error::permanent(format!("{name} refuses")))
}

fn engine(module: &str) -> Engine {
    Engine::builder().module(module).build()
}

#[tokio::test]
async fn transports_written_later_start_serve_and_stop_through_the_one_shape() {
    let log = Log::default();
    let listeners = vec![
        Later::boxed("wire", Kind::Future(None), &log),
        Later::boxed("bus", Kind::Tasks, &log),
        Later::boxed("queue", Kind::Tasks, &log),
    ];
    let mut serving = listen_all(listeners, &engine("m"), &Leadership::fixed(true))
        .await
        .expect("all start");
    assert_eq!(serving.names().collect::<Vec<_>>(), ["wire", "bus", "queue"]);
    assert_eq!(
        read(&log),
        [
            "wire started for m (leads: true)",
            "bus started for m (leads: true)",
            "queue started for m (leads: true)"
        ]
    );
    // Serving goes on until the shutdown comes.
    serving.until(std::future::ready(())).await.expect("shut down");
    assert_eq!(read(&log).len(), 3, "nothing stopped before `stop`");
    serving.stop().await;
    // The future served is dropped first, then the ones on tasks, the last started first.
    assert_eq!(read(&log)[3..], ["wire dropped", "queue stopped", "bus stopped"]);
}

#[tokio::test]
async fn a_failing_listener_ends_serving_with_its_error() {
    let log = Log::default();
    let (fail, failure) = oneshot::channel();
    let listeners = vec![
        Later::boxed("bus", Kind::Tasks, &log),
        Later::boxed("wire", Kind::Future(Some(failure)), &log),
    ];
    let mut serving = listen_all(listeners, &engine("m"), &Leadership::fixed(false))
        .await
        .expect("all start");
    fail.send(refused("wire")).expect("the serving future waits");
    let ended = serving.until(std::future::pending()).await;
    assert!(
        matches!(&ended, Err(tiny_runtime::Error::Nats(e)) if e.message() == "wire refuses"),
        "{ended:?}"
    );
    serving.stop().await;
    assert_eq!(read(&log)[2..], ["wire dropped", "bus stopped"]);
}

#[tokio::test]
async fn a_listener_that_cannot_start_stops_the_ones_started_before_it() {
    let log = Log::default();
    let listeners = vec![
        Later::boxed("bus", Kind::Tasks, &log),
        Later::boxed("wire", Kind::Future(None), &log),
        Later::boxed("broken", Kind::Refuses, &log),
        Later::boxed("never", Kind::Tasks, &log),
    ];
    let started = listen_all(listeners, &engine("m"), &Leadership::fixed(false)).await;
    assert!(
        matches!(&started, Err(tiny_runtime::Error::Nats(e)) if e.message() == "broken refuses"),
        "{started:?}"
    );
    assert_eq!(
        read(&log),
        [
            "bus started for m (leads: false)",
            "wire started for m (leads: false)",
            "broken started for m (leads: false)",
            "wire dropped",
            "bus stopped"
        ]
    );
}

/// Module `a`, which reaches module `b` over gRPC at `addr`.
fn caller(addr: &str) -> Engine {
    let pool = Arc::new(Pool::new(PoolOptions::default()));
    pool.register("b", addr).expect("an address");
    Engine::builder().module("a").router(pool).build()
}

fn headers(to: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-to", to);
    h.insert("x-from", "");
    h.insert("x-edge-id", "");
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_nats_started_as_listeners_answer_until_stopped() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects");
    // Module `b` listens on both; module `a` calls it over gRPC.
    let b = Engine::builder()
        .module("b")
        .register::<Echo>()
        .register::<Whoami>()
        .build();
    let flow = FlowBuilder::new()
        .module("b")
        .node("f.b.echo-1", "echo")
        .node("f.b.whoami-1", "whoami")
        .build();
    for node in flow.nodes {
        b.apply(node).await.expect("loads");
    }
    let grpc = Grpc::bind(([127, 0, 0, 1], 0).into()).await.expect("binds");
    let grpc_addr = grpc.local_addr().to_string();
    let listeners: Vec<Box<dyn Listen>> = vec![Box::new(grpc), Box::new(Subscriptions::new(link.clone()))];
    let mut serving = listen_all(listeners, &b, &Leadership::fixed(true))
        .await
        .expect("both start");
    assert_eq!(serving.names().collect::<Vec<_>>(), ["grpc", "nats"]);
    let (shutdown, shut) = oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        let ended = serving.until(async { shut.await.unwrap_or_default() }).await;
        serving.stop().await;
        ended
    });

    let a = caller(&grpc_addr);
    let over_grpc = a.send("f.b.echo-1:input", json!({"q": 1})).await.expect("gRPC answers");
    assert_eq!(over_grpc.into_value(), Some(json!({"q": 1})));
    let leads = a.send("f.b.whoami-1:input", json!({})).await.expect("gRPC answers");
    assert_eq!(
        leads.into_value(),
        Some(json!({"leader": true})),
        "the leadership given reaches handlers"
    );
    let sender = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(sender.wait_up(WAIT).await, "connects");
    let over_nats = tokio::time::timeout(
        WAIT,
        sender
            .client()
            .request_with_headers("tinymodule.b.msg", headers("f.b.echo-1:input"), "{\"q\":2}".into()),
    )
    .await
    .expect("in time")
    .expect("NATS answers");
    assert_eq!(over_nats.payload.as_ref(), b"{\"q\":2}");

    shutdown.send(()).expect("serving waits");
    served.await.expect("joins").expect("shut down, not failed");
    // Stopped: gRPC refuses, and nobody listens on the subject any more.
    // A new connection: one made before may outlive the server it came to.
    let after = caller(&grpc_addr).send("f.b.echo-1:input", json!({"q": 3})).await;
    assert!(after.is_err(), "gRPC still answers after stop: {after:?}");
    let after = sender
        .client()
        .request_with_headers("tinymodule.b.msg", headers("f.b.echo-1:input"), "{}".into())
        .await;
    assert!(
        matches!(&after, Err(e) if e.kind() == async_nats::client::RequestErrorKind::NoResponders),
        "NATS still answers after stop: {after:?}"
    );
}

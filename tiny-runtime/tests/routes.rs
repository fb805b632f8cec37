//! `Routes` over carriers it knows only by the `Carrier` trait: a transport added
//! later (here two written in the test, each answering with its own name) fits in
//! without touching gRPC, NATS or JetStream, and the choice among carriers is the
//! one the built-in ones get (a module with a direct address is reached there, any
//! other through the broker, a claimed hop always through the broker), for two
//! carriers or three. What the module advertises comes from a broker it knows only as
//! a `Presence`.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use serde_json::json;
use tiny_runtime::{
    carrier::{Carrier, Down, Presence},
    runtime::Discovery,
    transport::Routes,
};
use tiny_sdk::{
    Msg, Reply, Result,
    engine::{Delivery, RemoteRouter, Source},
};

/// A carrier that answers every hop with its name and the module it was for.
#[derive(Debug)]
struct Named {
    name: &'static str,
    /// The address scheme it listens at (`tcp://`, `bus://`).
    scheme: &'static str,
    /// A broker reaches every module; a direct carrier the ones registered with it.
    broker: bool,
    /// Hops to this port are always its own (as JetStream claims a durable run's).
    claimed_port: Option<&'static str>,
    known: Mutex<HashMap<String, String>>,
}

impl Named {
    fn direct(name: &'static str, scheme: &'static str) -> Arc<Self> {
        Arc::new(Self {
            name,
            scheme,
            broker: false,
            claimed_port: None,
            known: Mutex::default(),
        })
    }

    fn broker(name: &'static str, scheme: &'static str, claimed_port: Option<&'static str>) -> Arc<Self> {
        Arc::new(Self {
            name,
            scheme,
            broker: true,
            claimed_port,
            known: Mutex::default(),
        })
    }

    fn knows(&self, module: &str) -> bool {
        self.known.lock().is_ok_and(|k| k.contains_key(module))
    }
}

impl RemoteRouter for Named {
    fn route(&self, module: &str, _d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        let answer = json!({"carrier": self.name, "module": module});
        Box::pin(std::future::ready(Ok(Reply::value(answer))))
    }
}

impl Discovery for Named {
    fn register(&self, module: &str, addr: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.insert(module.to_owned(), addr.to_owned());
        }
    }

    fn deregister(&self, module: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.remove(module);
        }
    }
}

impl Carrier for Named {
    fn name(&self) -> &'static str {
        self.name
    }

    fn listens_at(&self, addr: &str) -> bool {
        addr.starts_with(self.scheme)
    }

    fn reaches(&self, module: &str) -> bool {
        self.broker || self.knows(module)
    }

    fn claims(&self, delivery: &Delivery<'_>) -> bool {
        self.claimed_port == Some(delivery.port)
    }
}

/// Where a hop for `node`'s `port` went: the carrier's name, or the error.
async fn carried(routes: &Routes, node: &str, port: &str) -> std::result::Result<String, tiny_sdk::Error> {
    let module = tiny_sdk::flow::parse_node_name(node)
        .map(|(m, _)| m.to_owned())
        .expect("a node name");
    let d = Delivery::new(node, port, Source::Signal, Msg::from_json(json!({})));
    let reply = routes.route(&module, d).await?;
    let value = reply.into_value().expect("an answer");
    assert_eq!(value["module"], json!(module), "{value}");
    Ok(value["carrier"].as_str().expect("a name").to_owned())
}

#[tokio::test]
async fn each_hop_takes_the_carrier_its_peer_listens_on() {
    let direct = Named::direct("direct", "tcp://");
    let bus = Named::broker("bus", "bus://", Some("durable"));
    let routes = Routes::over([direct.clone() as Arc<dyn Carrier>, bus.clone()]);
    routes.register("a-v0", "tcp://10.0.0.1:50051");
    routes.register("b-v0", "bus://tinymodule.b-v0.msg");
    // A module that advertised a direct address is reached there; the direct carrier
    // learnt it, the broker needs no address.
    assert_eq!(carried(&routes, "f.a-v0.x-1", "in").await.expect("carried"), "direct");
    assert!(direct.knows("a-v0") && !direct.knows("b-v0"));
    // A module on the broker, and one never heard of, go through the broker.
    assert_eq!(carried(&routes, "f.b-v0.x-1", "in").await.expect("carried"), "bus");
    assert_eq!(carried(&routes, "f.c-v0.x-1", "in").await.expect("carried"), "bus");
    // A hop the broker claims goes there even for a module with a direct address.
    assert_eq!(carried(&routes, "f.a-v0.x-1", "durable").await.expect("carried"), "bus");
    // A module that moves to the broker is no longer reached directly.
    routes.register("a-v0", "bus://tinymodule.a-v0.msg");
    assert!(!direct.knows("a-v0"));
    assert_eq!(carried(&routes, "f.a-v0.x-1", "in").await.expect("carried"), "bus");
    // Back at a direct address, then gone.
    routes.register("a-v0", "tcp://10.0.0.2:50051");
    assert_eq!(carried(&routes, "f.a-v0.x-1", "in").await.expect("carried"), "direct");
    routes.deregister("a-v0");
    assert!(!direct.knows("a-v0"));
    assert_eq!(carried(&routes, "f.a-v0.x-1", "in").await.expect("carried"), "bus");
    // The whole is a carrier too: healthy, named after the broker that carries.
    assert_eq!(Carrier::name(&routes), "bus");
    assert!(Carrier::health(&routes).is_ok());
}

#[tokio::test]
async fn a_peer_on_a_wire_this_module_lacks_is_refused_by_name() {
    let direct = Named::direct("direct", "tcp://");
    let routes = Routes::over([direct.clone() as Arc<dyn Carrier>]);
    routes.register("a-v0", "tcp://10.0.0.1:50051");
    routes.register("b-v0", "bus://tinymodule.b-v0.msg");
    assert_eq!(carried(&routes, "f.a-v0.x-1", "in").await.expect("carried"), "direct");
    let e = carried(&routes, "f.b-v0.x-1", "in")
        .await
        .expect_err("no carrier here reaches b-v0");
    assert_eq!(e.code(), Some(tiny_sdk::error::code::UNREACHABLE), "{e}");
    assert!(
        e.to_string().contains("`b-v0`") && e.to_string().contains("bus://tinymodule.b-v0.msg"),
        "{e}"
    );
    // Once it advertises a direct address, it is reached there.
    routes.register("b-v0", "tcp://10.0.0.3:50051");
    assert_eq!(carried(&routes, "f.b-v0.x-1", "in").await.expect("carried"), "direct");
}

#[tokio::test]
async fn what_the_module_advertises_comes_from_its_carrier() {
    use tiny_runtime::transport::Transport;
    // Without a transport of its own, the carrier advertises nothing: the module's
    // config says its address.
    let bare = Routes::over([Named::direct("direct", "tcp://") as Arc<dyn Carrier>]);
    assert_eq!((bare.advertised(), bare.condition().is_none()), (None, true));
    // On gRPC: its address, no condition, ready.
    let grpc = Routes::over([Named::direct("direct", "tcp://") as Arc<dyn Carrier>])
        .advertising(Arc::new(Transport::grpc("10.0.0.9:50051")));
    assert_eq!(grpc.advertised().as_deref(), Some("10.0.0.9:50051"));
    assert!(grpc.condition().is_none() && grpc.health().is_ok());
    // Told to use a broker that cannot be used: gRPC's address, and the condition
    // and readiness say why, in the broker's own words.
    let wire = Arc::new(Wire::default());
    *wire.state.lock().expect("state") = Err(Down::Unusable("no host".into()));
    let on_wire = Routes::over([Named::direct("direct", "tcp://") as Arc<dyn Carrier>])
        .advertising(Arc::new(Transport::beside("10.0.0.9:50051", wire.clone())));
    assert_eq!(on_wire.advertised().as_deref(), Some("10.0.0.9:50051"));
    let condition = on_wire.condition().expect("a Transport condition");
    assert_eq!(
        (
            condition.type_.as_str(),
            condition.status.as_str(),
            condition.reason.as_str()
        ),
        ("Transport", "False", "BusUnusable")
    );
    let why = on_wire.health().expect_err("not ready");
    assert!(
        why.contains("no host") && why.contains("10.0.0.9:50051") && why.starts_with("Bus: "),
        "{why}"
    );
    // Unreachable for now: the same, with the reason that says it may come back.
    *wire.state.lock().expect("state") = Err(Down::Unreachable("gone".into()));
    let condition = on_wire.condition().expect("a Transport condition");
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "BusUnreachable")
    );
    // Up: the module is advertised on it, ready.
    *wire.state.lock().expect("state") = Ok(());
    assert_eq!(on_wire.advertised().as_deref(), Some("bus://m-v0"));
    let condition = on_wire.condition().expect("a Transport condition");
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        ("True", "Bus", "on Bus: bus://m-v0")
    );
    assert!(on_wire.health().is_ok());
}

/// A broker the module is told to use, in the test's hands: its state is what the
/// test sets.
#[derive(Debug)]
struct Wire {
    state: Mutex<std::result::Result<(), Down>>,
}

impl Default for Wire {
    fn default() -> Self {
        Self {
            state: Mutex::new(Ok(())),
        }
    }
}

impl Presence for Wire {
    fn name(&self) -> &'static str {
        "bus"
    }

    fn reason(&self) -> &'static str {
        "Bus"
    }

    fn label(&self) -> &'static str {
        "Bus"
    }

    fn address(&self) -> String {
        "bus://m-v0".into()
    }

    fn state(&self) -> std::result::Result<(), Down> {
        self.state.lock().map_or(Ok(()), |s| s.clone())
    }

    fn changes(&self) -> Option<futures::stream::BoxStream<'static, ()>> {
        None
    }
}

#[tokio::test]
async fn a_third_carrier_beside_the_two_takes_the_modules_at_its_addresses() {
    // Two carriers that reach only the modules they learnt of (as gRPC does), then a
    // broker: each module is reached on the carrier that listens at its address.
    let direct = Named::direct("direct", "tcp://");
    let tools = Named::direct("tools", "rpc://");
    let bus = Named::broker("bus", "bus://", Some("durable"));
    let routes = Routes::over([direct.clone() as Arc<dyn Carrier>, tools.clone(), bus.clone()]);
    routes.register("a-v0", "tcp://10.0.0.1:50051");
    routes.register("t-v0", "rpc://tools.t-v0");
    routes.register("b-v0", "bus://tinymodule.b-v0.msg");
    assert_eq!(carried(&routes, "f.a-v0.x-1", "in").await.expect("carried"), "direct");
    assert_eq!(carried(&routes, "f.t-v0.x-1", "in").await.expect("carried"), "tools");
    assert_eq!(carried(&routes, "f.b-v0.x-1", "in").await.expect("carried"), "bus");
    assert!(tools.knows("t-v0") && !direct.knows("t-v0") && !tools.knows("a-v0"));
    // A hop the broker claims still goes there, whatever carrier its module is on.
    assert_eq!(carried(&routes, "f.t-v0.x-1", "durable").await.expect("carried"), "bus");
    // A module that moves from the third carrier to the first is forgotten by it.
    routes.register("t-v0", "tcp://10.0.0.4:50051");
    assert!(direct.knows("t-v0") && !tools.knows("t-v0"));
    assert_eq!(carried(&routes, "f.t-v0.x-1", "in").await.expect("carried"), "direct");
    // Without the broker, a module at an address none of them listens at is refused.
    let no_bus = Routes::over([direct.clone() as Arc<dyn Carrier>, tools.clone()]);
    no_bus.register("t-v0", "rpc://tools.t-v0");
    no_bus.register("b-v0", "bus://tinymodule.b-v0.msg");
    assert_eq!(carried(&no_bus, "f.t-v0.x-1", "in").await.expect("carried"), "tools");
    let e = carried(&no_bus, "f.b-v0.x-1", "in")
        .await
        .expect_err("nothing here reaches b-v0");
    assert_eq!(e.code(), Some(tiny_sdk::error::code::UNREACHABLE), "{e}");
}

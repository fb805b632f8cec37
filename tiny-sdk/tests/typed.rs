//! Typed messages: what a receiver sees is what it would have decoded from the
//! sender's JSON, on every kind of edge (same type moved, same type shared by a
//! fan-out, an edge that may retry, an observer; another type; a template; no mapping;
//! from the wire's bytes), including types whose serde round trip is lossy, whether
//! the receiver takes the value (`msg: T`) or borrows it (`msg: &T`).

use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tiny_sdk::{
    Msg, RoundTrip,
    engine::{Engine, HopEvent, Observer},
    flow::{FlowBuilder, RetryPolicy},
    prelude::*,
};
use tiny_testkit::seen;

/// Round-trips exactly: moved or cloned on a same-type edge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
struct Exact {
    n: u64,
    user_name: String,
    tags: Vec<String>,
    #[serde(rename = "inner")]
    nested: Inner,
    maybe: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
struct Inner {
    ok: bool,
    extra: Value,
}

/// Loses things on the way through JSON: a skipped field, a field read under another
/// name than it is written, `Some(null)`, a float.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
struct Lossy {
    n: u64,
    #[serde(skip_serializing, default)]
    secret: String,
    #[serde(rename(serialize = "written", deserialize = "read"), default)]
    renamed: u32,
    maybe: Option<Value>,
    ratio: f32,
}

/// Leaves out what its own field default brings back: exact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
struct SkipsDefaults {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    list: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    maybe: Option<u32>,
}

/// Leaves out an empty list with no default of the field's own (the container's
/// `Default` may fill it otherwise), and one with a predicate the derive cannot read.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(default)]
struct SkipsOtherwise {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    list: Vec<String>,
}

impl Default for SkipsOtherwise {
    fn default() -> Self {
        SkipsOtherwise { list: vec!["x".into()] }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct SkipsByOwnRule {
    #[serde(default, skip_serializing_if = "is_zero")]
    n: u32,
}

/// Carries a message of any shape inside.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
struct Envelope {
    inner: Msg,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A hand-written serde impl the derive cannot see: the author says `lossy`.
#[derive(Debug, Clone, Default, PartialEq, Schema)]
#[tiny(lossy)]
struct Shouting {
    word: String,
}

impl Serialize for Shouting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.word.to_uppercase())
    }
}

impl<'de> Deserialize<'de> for Shouting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d).map(|word| Shouting { word })
    }
}

/// Another type, meeting `Exact` through serde.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
struct Other {
    n: u64,
    #[serde(rename = "userName")]
    user: String,
}

fn exact() -> Exact {
    Exact {
        n: 7,
        user_name: "ada".into(),
        tags: vec!["a".into(), "b".into()],
        nested: Inner {
            ok: true,
            extra: json!({"k": [1, 2.5, null]}),
        },
        maybe: Some("x".into()),
    }
}

fn lossy() -> Lossy {
    Lossy {
        n: 1,
        secret: "hidden".into(),
        renamed: 9,
        maybe: Some(Value::Null),
        ratio: 0.1,
    }
}

fn shouting() -> Shouting {
    Shouting { word: "quiet".into() }
}

/// What JSON makes of `v` for a receiver of type `U`.
fn via_json<T: Serialize, U: DeserializeOwned>(v: &T) -> U {
    serde_json::from_value(serde_json::to_value(v).expect("encodes")).expect("decodes")
}

macro_rules! components {
    ($($send:ident / $recv:ident / $lend:ident: $t:ty = $sample:expr, $sname:literal, $rname:literal, $lname:literal;)*) => {$(
        /// Emits the sample value on any input.
        #[derive(Debug, Component, Default)]
        #[component(name = $sname)]
        struct $send {
            go: Input<Value>,
            out: Output<$t>,
        }

        impl $send {
            async fn on_go(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
                self.out.emit(ctx, $sample).await
            }
        }

        /// Records what it received, as `Debug`.
        #[derive(Debug, Component, Default)]
        #[component(name = $rname)]
        struct $recv {
            input: Input<$t>,
        }

        impl $recv {
            async fn on_input(&self, ctx: &Ctx<Self>, msg: $t) -> Reply {
                seen::record(ctx.node_name(), format!("{msg:?}"));
                Reply::value(json!("ok"))
            }
        }

        /// The same, borrowing the message.
        #[derive(Debug, Component, Default)]
        #[component(name = $lname)]
        struct $lend {
            input: Input<$t>,
        }

        impl $lend {
            async fn on_input(&self, ctx: &Ctx<Self>, msg: &$t) -> Reply {
                seen::record(ctx.node_name(), format!("{msg:?}"));
                Reply::value(json!("ok"))
            }
        }
    )*};
}

components! {
    SendExact / RecvExact / LendExact: Exact = exact(), "send_exact", "recv_exact", "lend_exact";
    SendLossy / RecvLossy / LendLossy: Lossy = lossy(), "send_lossy", "recv_lossy", "lend_lossy";
    SendShouting / RecvShouting / LendShouting: Shouting = shouting(), "send_shouting", "recv_shouting", "lend_shouting";
    SendOther / RecvOther / LendOther: Other = Other::default(), "send_other", "recv_other", "lend_other";
    SendValue / RecvValue / LendValue: Value = json!({"n": 7, "userName": "ada", "inner": {"ok": true}}), "send_value", "recv_value", "lend_value";
}

fn engine(observer: Option<Arc<dyn Observer>>) -> Engine {
    let mut b = Engine::builder()
        .register::<SendExact>()
        .register::<RecvExact>()
        .register::<SendLossy>()
        .register::<RecvLossy>()
        .register::<SendShouting>()
        .register::<RecvShouting>()
        .register::<SendOther>()
        .register::<RecvOther>()
        .register::<SendValue>()
        .register::<RecvValue>()
        .register::<LendExact>()
        .register::<LendLossy>()
        .register::<LendShouting>()
        .register::<LendOther>()
        .register::<LendValue>();
    if let Some(o) = observer {
        b = b.observer(o);
    }
    b.build()
}

fn no_retry() -> Option<RetryPolicy> {
    Some(RetryPolicy {
        max_attempts: Some(1),
        ..RetryPolicy::default()
    })
}

/// One sender, `receivers` of component `recv`, all on edges with `mapping` (`null`:
/// none) and `retry`.
async fn run(
    sender: &str,
    recv: &str,
    receivers: usize,
    retry: Option<RetryPolicy>,
    mapping: Value,
    observer: Option<Arc<dyn Observer>>,
) -> Vec<String> {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let e = engine(observer);
    let prefix = format!("run{}", RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut b = FlowBuilder::new().node("src", sender);
    let mut names = Vec::new();
    for i in 0..receivers {
        let name = format!("{prefix}-r{i}");
        b = b
            .node(&name, recv)
            .edge_with("src:out", &format!("{name}:input"), mapping.clone(), retry.clone());
        names.push(name);
    }
    for mut node in b.build().nodes {
        if mapping.is_null() {
            // An edge without a mapping.
            node.spec.ports.clear();
        }
        e.apply(node).await.expect("loads");
    }
    e.send("src:go", json!({})).await.expect("delivered");
    names.iter().flat_map(|n| seen::take(n)).collect()
}

fn dbg<T: std::fmt::Debug>(v: &T) -> String {
    format!("{v:?}")
}

#[tokio::test]
async fn the_derive_knows_which_types_round_trip_exactly() {
    assert!(Exact::round_trip_exact(0));
    assert!(Inner::round_trip_exact(0));
    assert!(Other::round_trip_exact(0));
    assert!(
        !Lossy::round_trip_exact(0),
        "skip_serializing, a split rename, Option<Value>, f32"
    );
    assert!(!Shouting::round_trip_exact(0), "#[tiny(lossy)]");
    assert!(
        SkipsDefaults::round_trip_exact(0),
        "skips what its own default brings back"
    );
    let empty = SkipsDefaults::default();
    assert_eq!(via_json::<_, SkipsDefaults>(&empty), empty);
    // The container's `Default` gives `["x"]` for the list left out: not exact.
    assert!(!SkipsOtherwise::round_trip_exact(0));
    let list = via_json::<_, SkipsOtherwise>(&SkipsOtherwise { list: vec![] }).list;
    assert_eq!(list, ["x"]);
    assert!(
        !SkipsByOwnRule::round_trip_exact(0),
        "a predicate the derive cannot read"
    );
    assert!(
        !Envelope::round_trip_exact(0),
        "a Msg inside comes back from JSON untyped"
    );
    assert!(!Option::<Value>::round_trip_exact(0), "Some(null) comes back as None");
    assert!(Option::<String>::round_trip_exact(0));
}

#[tokio::test]
async fn same_type_edges_give_what_json_would() {
    let want = dbg(&via_json::<_, Exact>(&exact()));
    assert_eq!(want, dbg(&exact()), "an exact type is its own round trip");
    for recv in ["recv_exact", "lend_exact"] {
        for (receivers, retry) in [(1, no_retry()), (1, None), (3, no_retry()), (3, None)] {
            let got = run("send_exact", recv, receivers, retry.clone(), json!("{{$}}"), None).await;
            assert_eq!(
                got,
                vec![want.clone(); receivers],
                "{recv}: {receivers} receivers, retry {retry:?}"
            );
        }
    }
}

#[tokio::test]
async fn lossy_types_travel_through_json_even_on_same_type_edges() {
    let want = dbg(&via_json::<_, Lossy>(&lossy()));
    assert_ne!(want, dbg(&lossy()), "the sample must show the loss");
    let want_shout = dbg(&via_json::<_, Shouting>(&shouting()));
    assert_eq!(want_shout, r#"Shouting { word: "QUIET" }"#);
    for (lossy, shouting) in [("recv_lossy", "recv_shouting"), ("lend_lossy", "lend_shouting")] {
        for (receivers, retry) in [(1, no_retry()), (1, None), (3, no_retry())] {
            let got = run("send_lossy", lossy, receivers, retry.clone(), json!("{{$}}"), None).await;
            assert_eq!(
                got,
                vec![want.clone(); receivers],
                "{lossy}: {receivers} receivers, retry {retry:?}"
            );
            let got = run(
                "send_shouting",
                shouting,
                receivers,
                retry.clone(),
                json!("{{$}}"),
                None,
            )
            .await;
            assert_eq!(got, vec![want_shout.clone(); receivers], "{shouting}");
        }
    }
}

#[tokio::test]
async fn other_types_meet_through_serde() {
    let want = dbg(&via_json::<_, Other>(&exact()));
    assert_eq!(want, r#"Other { n: 7, user: "ada" }"#);
    for (other, value) in [("recv_other", "recv_value"), ("lend_other", "lend_value")] {
        let got = run("send_exact", other, 1, no_retry(), json!("{{$}}"), None).await;
        assert_eq!(got, std::slice::from_ref(&want), "{other}");
        // A `Value` sender and a typed receiver, and the other way round.
        let got = run("send_value", other, 2, None, json!("{{$}}"), None).await;
        assert_eq!(got, [want.clone(), want.clone()], "{other}");
        let got = run("send_exact", value, 1, no_retry(), json!("{{$}}"), None).await;
        assert_eq!(got, [dbg(&serde_json::to_value(exact()).expect("encodes"))], "{value}");
    }
}

#[tokio::test]
async fn templates_and_unmapped_edges_see_the_json() {
    let mapping = json!({"n": "{{$.n + 1}}", "userName": "{{$.userName}}", "tags": [], "inner": "{{$.inner}}"});
    let mut sent = serde_json::to_value(exact()).expect("encodes");
    sent["n"] = json!(8);
    sent["tags"] = json!([]);
    sent.as_object_mut().map(|o| o.remove("maybe"));
    let want = dbg(&serde_json::from_value::<Exact>(sent).expect("decodes"));
    for recv in ["recv_exact", "lend_exact"] {
        let got = run("send_exact", recv, 1, no_retry(), mapping.clone(), None).await;
        assert_eq!(got, std::slice::from_ref(&want), "{recv}");
        // No mapping: the port's default configuration, as in the Go SDK.
        let got = run("send_exact", recv, 1, no_retry(), Value::Null, None).await;
        assert_eq!(got, [dbg(&Exact::default())], "{recv}");
    }
}

/// Reads every payload as JSON, as TinyTracker does.
#[derive(Debug, Default)]
struct Reader(Mutex<Vec<Value>>);

impl Observer for Reader {
    fn on_hop(&self, event: &HopEvent<'_>) {
        if let (Some(Ok(v)), Ok(mut seen)) = (event.data.map(Msg::json), self.0.lock()) {
            seen.push(v.clone());
        }
    }
}

#[tokio::test]
async fn an_observer_sees_json_and_the_receiver_still_gets_the_value() {
    let reader = Arc::new(Reader::default());
    let got = run(
        "send_exact",
        "recv_exact",
        1,
        no_retry(),
        json!("{{$}}"),
        Some(reader.clone()),
    )
    .await;
    assert_eq!(got, [dbg(&exact())]);
    let json = serde_json::to_value(exact()).expect("encodes");
    let seen = reader.0.lock().map(|s| s.clone()).unwrap_or_default();
    assert!(seen.contains(&json), "{seen:?}");
}

#[tokio::test]
async fn bytes_from_the_wire_decode_straight_into_the_port_type() {
    let e = engine(None);
    let flow = FlowBuilder::new()
        .node("wire-r", "recv_exact")
        .node("wire-l", "lend_exact")
        .build();
    for node in flow.nodes {
        e.apply(node).await.expect("loads");
    }
    // A receiver that takes the value, and one that borrows it.
    for node in ["wire-r", "wire-l"] {
        let to = tiny_sdk::flow::PortAddress::parse(&format!("{node}:input")).expect("address");
        let deliver = |bytes: Vec<u8>| {
            e.deliver(tiny_sdk::engine::Delivery::new(
                &to.node,
                &to.port,
                tiny_sdk::engine::Source::Signal,
                Msg::from_json_bytes(bytes),
            ))
        };
        deliver(serde_json::to_vec(&exact()).expect("encodes"))
            .await
            .expect("delivered");
        assert_eq!(seen::take(node), [dbg(&exact())], "{node}");
        let err = deliver(br#"{"n":"seven"}"#.to_vec())
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("field `n` does not decode"), "{node}: {err}");
    }
}

/// Where the sender's and the receiver's strings live: the same heap block when the
/// value was handed over, not copied.
static ADDRESSES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Big {
    text: String,
}

#[derive(Debug, Component, Default)]
#[component(name = "send_big")]
struct SendBig {
    go: Input<Value>,
    out: Output<Big>,
}

impl SendBig {
    async fn on_go(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let big = Big { text: "x".repeat(64) };
        if let Ok(mut a) = ADDRESSES.lock() {
            a.push(big.text.as_ptr() as usize);
        }
        self.out.emit(ctx, big).await
    }
}

#[derive(Debug, Component, Default)]
#[component(name = "recv_big")]
struct RecvBig {
    input: Input<Big>,
}

impl RecvBig {
    async fn on_input(&self, _: &Ctx<Self>, msg: Big) -> Reply {
        if let Ok(mut a) = ADDRESSES.lock() {
            a.push(msg.text.as_ptr() as usize);
        }
        Reply::empty()
    }
}

#[tokio::test]
async fn a_lone_receiver_on_an_edge_without_retries_gets_the_value_itself() {
    let e = Engine::builder().register::<SendBig>().register::<RecvBig>().build();
    for (retry, moved) in [(no_retry(), true), (None, false)] {
        let flow = FlowBuilder::new()
            .node("big-src", "send_big")
            .node("big-dst", "recv_big")
            .edge_with("big-src:out", "big-dst:input", json!("{{$}}"), retry)
            .build();
        for node in flow.nodes {
            e.apply(node).await.expect("loads");
        }
        e.send("big-src:go", json!({})).await.expect("delivered");
        let a = ADDRESSES
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[0] == a[1],
            moved,
            "moved: {moved} (an edge that may retry keeps the message)"
        );
    }
}

/// Where the borrowing test's strings live (apart from [`ADDRESSES`]: the tests run at
/// once).
static LENT: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// [`RecvBig`] borrowing the message; fails its first delivery (transient, so the
/// edge retries) when the text says `retry`.
#[derive(Debug, Component, Default)]
#[component(name = "lend_big")]
struct LendBig {
    input: Input<Big>,
    failed: std::sync::atomic::AtomicBool,
}

impl LendBig {
    async fn on_input(&self, _: &Ctx<Self>, msg: &Big) -> Result<Reply> {
        if let Ok(mut a) = LENT.lock() {
            a.push(msg.text.as_ptr() as usize);
        }
        if msg.text.starts_with("retry") && !self.failed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::transient("not yet"));
        }
        Ok(Reply::empty())
    }
}

/// Sends a [`Big`] whose text starts with the signal's `prefix`.
#[derive(Debug, Component, Default)]
#[component(name = "send_lent")]
struct SendLent {
    go: Input<Value>,
    out: Output<Big>,
}

impl SendLent {
    async fn on_go(&self, ctx: &Ctx<Self>, go: Value) -> Result<Reply> {
        let prefix = go["prefix"].as_str().unwrap_or_default();
        let big = Big {
            text: format!("{prefix}{}", "x".repeat(64)),
        };
        if let Ok(mut a) = LENT.lock() {
            a.push(big.text.as_ptr() as usize);
        }
        self.out.emit(ctx, big).await
    }
}

fn lent() -> Vec<usize> {
    LENT.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default()
}

#[tokio::test]
async fn a_borrowing_receiver_is_lent_the_senders_value_on_any_edge() {
    let e = Engine::builder().register::<SendLent>().register::<LendBig>().build();
    // An edge that may retry keeps the message, a fan-out shares it: a borrowing
    // receiver reads the sender's value in place either way.
    for (retry, receivers) in [(None, 1), (no_retry(), 1), (None, 3)] {
        let mut b = FlowBuilder::new().node("lend-src", "send_lent");
        for i in 0..receivers {
            let name = format!("lend-dst{i}");
            b = b.node(&name, "lend_big").edge_with(
                "lend-src:out",
                &format!("{name}:input"),
                json!("{{$}}"),
                retry.clone(),
            );
        }
        for node in b.build().nodes {
            e.apply(node).await.expect("loads");
        }
        e.send("lend-src:go", json!({})).await.expect("delivered");
        let a = lent();
        assert_eq!(a.len(), 1 + receivers);
        assert!(
            a.iter().all(|p| *p == a[0]),
            "retry {retry:?}, {receivers} receivers: every receiver reads the sender's string: {a:?}"
        );
        for i in 0..receivers {
            e.remove(&format!("lend-dst{i}"), true).await.expect("removed");
        }
    }
    // A retried delivery lends the kept message again.
    let flow = FlowBuilder::new()
        .node("retry-src", "send_lent")
        .node("retry-dst", "lend_big")
        .edge("retry-src:out", "retry-dst:input", json!("{{$}}"))
        .build();
    for node in flow.nodes {
        e.apply(node).await.expect("loads");
    }
    e.send("retry-src:go", json!({"prefix": "retry"}))
        .await
        .expect("the second attempt succeeds");
    let a = lent();
    assert_eq!(a.len(), 3, "sent once, delivered twice: {a:?}");
    assert!(a.iter().all(|p| *p == a[0]), "{a:?}");
}

/// How many times [`Wide::rest`] was serialised.
static REST_WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_rest<S: serde::Serializer>(rest: &[String], s: S) -> Result<S::Ok, S::Error> {
    REST_WRITTEN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    s.collect_seq(rest)
}

/// A message with a field an edge may not need (an HTTP request's headers, say).
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
struct Wide {
    keep: u32,
    #[serde(serialize_with = "count_rest")]
    rest: Vec<String>,
}

#[derive(Debug, Component, Default)]
#[component(name = "send_wide")]
struct SendWide {
    go: Input<Value>,
    out: Output<Wide>,
}

impl SendWide {
    async fn on_go(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let wide = Wide {
            keep: 7,
            rest: vec!["a".into(); 3],
        };
        self.out.emit(ctx, wide).await
    }
}

/// An edge template that names the fields it reads makes a typed message write only
/// those; what the receiver gets is what the whole message's JSON would give it.
#[tokio::test]
async fn a_template_reads_only_the_fields_it_names() {
    let e = Engine::builder().register::<SendWide>().register::<RecvValue>().build();
    let written = || REST_WRITTEN.load(std::sync::atomic::Ordering::SeqCst);
    for (i, (mapping, want, writes)) in [
        (json!({"n": "{{$.keep + 1}}"}), json!({"n": 8}), 0),
        (
            json!({"n": "{{$['keep']}}", "c": "{{ length($.rest) }}"}),
            json!({"n": 7, "c": 3}),
            1,
        ),
        // `$` itself: the whole message.
        (
            json!({"all": "{{$}}"}),
            json!({"all": {"keep": 7, "rest": ["a", "a", "a"]}}),
            1,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let flow = FlowBuilder::new()
            .node(&format!("wide{i}"), "send_wide")
            .node(&format!("seen{i}"), "recv_value")
            .edge_with(
                &format!("wide{i}:out"),
                &format!("seen{i}:input"),
                mapping.clone(),
                no_retry(),
            )
            .build();
        for node in flow.nodes {
            e.apply(node).await.expect("loads");
        }
        let before = written();
        e.send(&format!("wide{i}:go"), json!({})).await.expect("delivered");
        assert_eq!(seen::take(&format!("seen{i}")), [format!("{want:?}")], "{mapping}");
        assert_eq!(written() - before, writes, "times `rest` was written for {mapping}");
    }
}

/// Sends on whatever it is sent, as it came.
#[derive(Debug, Component, Default)]
#[component(name = "relay_msg")]
struct RelayMsg {
    input: Input<Msg>,
    out: Output<Msg>,
}

impl RelayMsg {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Msg) -> Result<Reply> {
        seen::record(ctx.node_name(), msg.type_name().to_owned());
        self.out.emit(ctx, msg).await
    }
}

/// Answers with what it is lent, as it came, after reading one field of it.
#[derive(Debug, Component, Default)]
#[component(name = "answer_msg")]
struct AnswerMsg {
    input: Input<Msg>,
}

impl AnswerMsg {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: &Msg) -> Result<Reply> {
        let n = msg.json()?["n"].clone();
        seen::record(ctx.node_name(), format!("{} n={n}", msg.type_name()));
        Ok(Reply::msg(msg.clone()))
    }
}

/// A port of `Msg` takes the message as it came (typed, JSON or bytes), decodes
/// nothing, and an `Output<Msg>` sends it on as it is: the typed value reaches a typed
/// receiver without a trip through JSON.
#[tokio::test]
async fn a_msg_port_carries_the_message_as_it_came() {
    let e = Engine::builder()
        .register::<SendExact>()
        .register::<RecvExact>()
        .register::<RelayMsg>()
        .register::<AnswerMsg>()
        .build();
    let flow = FlowBuilder::new()
        .node("m-src", "send_exact")
        .node("m-relay", "relay_msg")
        .node("m-dst", "recv_exact")
        .edge_with("m-src:out", "m-relay:input", json!("{{$}}"), no_retry())
        .edge_with("m-relay:out", "m-dst:input", json!("{{$}}"), no_retry())
        .node("m-answer", "answer_msg")
        .build();
    for node in flow.nodes {
        e.apply(node).await.expect("loads");
    }
    e.send("m-src:go", json!({})).await.expect("delivered");
    assert_eq!(
        seen::take("m-relay"),
        [std::any::type_name::<Exact>()],
        "the typed value itself"
    );
    assert_eq!(seen::take("m-dst"), [dbg(&exact())]);

    // JSON in, the same JSON back, whatever its shape.
    for sent in [json!({"n": 1, "x": [true]}), json!("text"), json!(null)] {
        let reply = e.send("m-answer:input", sent.clone()).await.expect("answered");
        assert_eq!(reply.as_value(), Some(&sent));
    }
    // Bytes in (as from the wire): answered as the same bytes, never parsed into the
    // reply; the handler's own read parses them once.
    let bytes = br#"{"n": 2,  "spacing": "kept"}"#.to_vec();
    let reply = e
        .deliver(tiny_sdk::engine::Delivery::new(
            "m-answer",
            "input",
            tiny_sdk::engine::Source::Signal,
            Msg::from_json_bytes(bytes.clone()),
        ))
        .await
        .expect("answered");
    let got = reply.as_msg().expect("a reply").to_json_bytes().expect("bytes");
    assert_eq!(got, bytes, "the very bytes that came");
    let seen = seen::take("m-answer");
    assert_eq!(seen.last().map(String::as_str), Some("JSON bytes n=2"), "{seen:?}");
}

fn refuse<S: serde::Serializer>(_: &u32, _: S) -> Result<S::Ok, S::Error> {
    Err(serde::ser::Error::custom("never written"))
}

/// A message with a field that cannot be written.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
struct Fragile {
    keep: u32,
    #[serde(serialize_with = "refuse")]
    bad: u32,
}

#[derive(Debug, Component, Default)]
#[component(name = "send_fragile")]
struct SendFragile {
    go: Input<Value>,
    out: Output<Fragile>,
}

impl SendFragile {
    async fn on_go(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        self.out.emit(ctx, Fragile { keep: 7, bad: 0 }).await
    }
}

/// A template that names its fields never needs the one that cannot be written, even
/// when one of its expressions fails: the hop goes on with `null` there, as in Go.
#[tokio::test]
async fn a_failing_expression_does_not_need_the_fields_it_did_not_read() {
    let e = Engine::builder()
        .register::<SendFragile>()
        .register::<RecvValue>()
        .build();
    let flow = FlowBuilder::new()
        .node("fragile", "send_fragile")
        .node("fragile-seen", "recv_value")
        .edge_with(
            "fragile:out",
            "fragile-seen:input",
            json!({"n": "{{$.keep}}", "m": "{{$.missing}}"}),
            no_retry(),
        )
        .build();
    for node in flow.nodes {
        e.apply(node).await.expect("loads");
    }
    e.send("fragile:go", json!({})).await.expect("delivered");
    assert_eq!(
        seen::take("fragile-seen"),
        [format!("{:?}", json!({"n": 7, "m": null}))]
    );
}

/// A message with a field it may leave out.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
struct Sparse {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    tags: Vec<String>,
}

#[derive(Debug, Component, Default)]
#[component(name = "send_sparse")]
struct SendSparse {
    go: Input<Value>,
    out: Output<Sparse>,
}

impl SendSparse {
    async fn on_go(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let sparse = Sparse {
            name: "ada".into(),
            note: None,
            tags: vec!["a".into(), "b".into()],
        };
        self.out.emit(ctx, sparse).await
    }
}

/// An object template over a typed message: the fields it places whole are made
/// apart from the tree its other expressions read, and the input is what the JSON
/// message would have given, a field the value leaves out included (`null`, as a
/// failed expression gives).
#[tokio::test]
async fn an_object_template_over_a_typed_message_gives_what_json_gives() {
    let e = Engine::builder()
        .register::<SendSparse>()
        .register::<RecvValue>()
        .build();
    let mapping =
        json!({"who": "{{$.name}}", "note": "{{$.note}}", "tags": "{{$.tags}}", "first": "{{$.tags[0]}}", "k": 1});
    let flow = FlowBuilder::new()
        .node("sparse", "send_sparse")
        .node("sparse-seen", "recv_value")
        .edge_with("sparse:out", "sparse-seen:input", mapping.clone(), no_retry())
        .build();
    for node in flow.nodes {
        e.apply(node).await.expect("loads");
    }
    for _ in 0..2 {
        e.send("sparse:go", json!({})).await.expect("delivered");
        let expected = json!({"who": "ada", "note": null, "tags": ["a", "b"], "first": "a", "k": 1});
        assert_eq!(seen::take("sparse-seen"), [format!("{expected:?}")]);
    }
}

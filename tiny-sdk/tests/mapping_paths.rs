//! Every way an edge renders its template gives what the reference gives.
//!
//! An edge renders a typed message from a tree of its own (fields it does not read
//! left out, values it places whole moved or made apart) and keeps an object's values
//! beside its names; a JSON message lends the tree it keeps. Whatever the path, the
//! receiver must get what `Template::render_lenient` gives over the message's whole
//! JSON, and a typed receiver must decode (or fail to) the same way. Each template
//! below runs over one message sent typed and sent as JSON, on edges that keep the
//! message for a retry and on edges that hand it over, and along a fan-out whose other
//! edge reads the fields this one may move.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tiny_sdk::{
    engine::Engine,
    expr::Template,
    flow::{FlowBuilder, RetryPolicy},
    prelude::*,
};
use tiny_testkit::{
    components::{Forward, Record},
    seen,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Inner {
    name: String,
    tags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
enum Shape {
    Circle { r: f64 },
    Square(u32),
    Empty,
}

/// A struct whose flattened map may write one of its fields' names again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Flat {
    a: u32,
    #[serde(flatten)]
    rest: BTreeMap<String, u32>,
}

/// A struct in a struct: a field placed whole is kept as its fields, and so is a
/// struct inside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Outer {
    k: u32,
    inner: Inner,
    #[serde(skip_serializing_if = "Option::is_none")]
    gone: Option<Inner>,
}

/// A struct whose hand-written `Serialize` writes one field's name twice: its JSON
/// tree keeps the second value in the first place, and so must a field placed whole.
#[derive(Debug, Clone, PartialEq, Deserialize, Schema)]
#[tiny(lossy)]
struct Twice {
    a: u32,
    b: u32,
}

impl Serialize for Twice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut st = s.serialize_struct("Twice", 3)?;
        st.serialize_field("a", &self.a)?;
        st.serialize_field("b", &self.b)?;
        st.serialize_field("a", &(self.a + 10))?;
        st.end()
    }
}

/// A message with most of what serde can write: a skipped `None`, a written one, a
/// renamed field, a map, a list of structs, an enum, numbers of three kinds, and a
/// struct that writes a key twice (its JSON tree keeps the last value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Rich {
    n: u64,
    v: i64,
    f: f64,
    flag: bool,
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    maybe: Option<String>,
    user: Inner,
    #[serde(rename = "x-y")]
    dashed: String,
    map: BTreeMap<String, i64>,
    list: Vec<Inner>,
    shape: Shape,
    square: Shape,
    empty: Shape,
    flat: Flat,
    outer: Outer,
    twice: Twice,
}

fn sample() -> Rich {
    let inner = |name: &str, tags: &[&str]| Inner {
        name: name.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
    };
    Rich {
        n: 7,
        v: -3,
        f: 1.5,
        flag: true,
        text: "hello world".into(),
        note: None,
        maybe: None,
        user: inner("ada", &["a", "b"]),
        dashed: "dash".into(),
        map: BTreeMap::from([("k1".into(), 1), ("k2".into(), 2)]),
        list: vec![inner("a", &[]), inner("b", &["x"])],
        shape: Shape::Circle { r: 2.0 },
        square: Shape::Square(4),
        empty: Shape::Empty,
        flat: Flat {
            a: 1,
            rest: BTreeMap::from([("a".into(), 2), ("b".into(), 3)]),
        },
        outer: Outer {
            k: 9,
            inner: inner("in", &["t"]),
            gone: None,
        },
        twice: Twice { a: 1, b: 2 },
    }
}

/// What a typed receiver may be handed: every field optional, so that most templates
/// decode, and those that give a field of the wrong type fail.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
struct Wide {
    n: Option<u64>,
    text: Option<String>,
    user: Option<Inner>,
    name: Option<String>,
    tags: Option<Vec<String>>,
    note: Option<String>,
    shape: Option<Shape>,
    list: Option<Vec<Inner>>,
    map: Option<BTreeMap<String, i64>>,
    outer: Option<Outer>,
    twice: Option<Twice>,
}

/// Every entry of an object, in order, a key written twice included: what a reader
/// that keeps all it is offered sees.
#[derive(Debug, PartialEq)]
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct All;
        impl<'de> serde::de::Visitor<'de> for All {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Entries, A::Error> {
                let mut all = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    all.push(entry);
                }
                Ok(Entries(all))
            }
        }
        d.deserialize_map(All)
    }
}

/// The input as [`Entries`] of its `flat` field.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FlatEntries {
    flat: Option<Entries>,
    twice: Option<Entries>,
    outer: Option<Entries>,
}

/// `typed`: emits [`sample`] as its Rust type, whatever it is sent.
#[derive(Debug, Component, Default)]
#[component(name = "typed")]
struct Typed {
    input: Input<Value>,
    out: Output<Rich>,
}

impl Typed {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        self.out.emit(ctx, sample()).await
    }
}

/// `wide`: records the input decoded as [`Wide`].
#[derive(Debug, Component, Default)]
#[component(name = "wide")]
struct RecordWide {
    input: Input<Wide>,
}

impl RecordWide {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Wide) -> Reply {
        seen::record(ctx.node_name(), format!("{msg:?}"));
        Reply::empty()
    }
}

/// `entries`: records the input's `flat` as [`Entries`] (decoded from the message as
/// it came).
#[derive(Debug, Component, Default)]
#[component(name = "entries")]
struct RecordEntries {
    input: Input<tiny_sdk::Msg>,
}

impl RecordEntries {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: tiny_sdk::Msg) -> Reply {
        seen::record(
            ctx.node_name(),
            format!("{:?}", msg.decode::<FlatEntries>("input").ok()),
        );
        Reply::empty()
    }
}

/// The templates: objects whose fields are placed whole, read inside, read twice,
/// beside `$` itself, interpolated, missing, nested, in arrays, past the key-by-key
/// size, through filters, descent and functions; and templates that are not objects.
fn templates() -> Vec<Value> {
    vec![
        json!({"n": "{{$.n}}", "v": "{{$.v + 1}}", "user": "{{$.user}}", "text": "{{$.text}}"}),
        json!({"flat": "{{$.flat}}", "user": "{{$.user}}", "list": "{{$.list}}"}),
        json!({"flat": "{{$.flat.a}}", "map": "{{$.map}}"}),
        json!({"user": "{{$.user}}", "name": "{{$.user.name}}"}),
        json!({"name": "{{$.user.name}}", "user": "{{$.user}}"}),
        json!({"a": "{{$.user}}", "user": "{{$.user}}"}),
        json!({"user": "{{$.user}}", "all": "{{$}}"}),
        json!({"note": "{{$.note}}", "maybe": "{{$.maybe}}", "text": "{{$.text}}"}),
        json!({"d": "{{$['x-y']}}", "map": "{{$.map}}", "k": "{{$.map.k1}}"}),
        json!({"list": "{{$.list}}", "name": "{{$.list[0].name}}", "tags": "{{$.list[1].tags}}"}),
        json!({"shape": "{{$.shape}}", "text": "hello {{$.text}}!", "square": "{{$.square}}", "empty": "{{$.empty}}"}),
        json!({"nested": {"user": "{{$.user}}"}, "text": "{{$.text}}", "user": "{{$.user}}"}),
        json!(["{{$.user}}", "{{$.text}}", {"u": "{{$.user}}"}]),
        json!("{{$.user}}"),
        json!("{{$.text}} and {{$.n}}"),
        json!({"missing": "{{$.nope}}", "bad": "x {{$.nope.deeper}} y", "text": "{{$.text}}"}),
        json!({"tags": "{{$.user.tags}}", "n": "{{length($.user.tags)}}", "user": "{{$.user}}"}),
        json!({"n": "{{$.n}}", "n2": "{{$.n * 2}}", "flag": "{{$.flag}}", "f": "{{$.f}}", "text": 5}),
        json!({
            "user": "{{$.user}}", "shape": "{{$.shape}}", "list": "{{$.list}}", "text": "{{$.text}}",
            "n": "{{$.n}}", "v": "{{$.v}}", "f": "{{$.f}}", "flag": "{{$.flag}}", "map": "{{$.map}}",
            "x-y": "{{$['x-y']}}", "note": "{{$.note}}"
        }),
        json!({"names": "{{$..name}}", "user": "{{$.user}}"}),
        json!({"b": "{{$.list[?(@.name == 'b')]}}", "list": "{{$.list}}"}),
        json!({"user": "{{$.user.tags[0]}}", "text": "{{upper($.text)}}"}),
        json!({"user": "{{root($.text)}}", "name": "{{$.user}}", "p": "{{parent($.user.name)}}"}),
        json!({"n": "{{$.user}}", "text": "{{$.shape.Circle.r}}"}),
        json!({"outer": "{{$.outer}}", "twice": "{{$.twice}}", "v": "{{$.v + 1}}"}),
        json!({"twice": "{{$.twice}}", "outer": "{{$.outer}}", "k": "{{$.outer.inner.name}}"}),
        json!({"text": "{{$.outer}}", "user": "{{$.user}}", "n": "{{$.n}}"}),
    ]
}

/// The edge policy: `None` keeps the default (the message kept for a retry).
fn policy(retries: bool) -> Option<RetryPolicy> {
    (!retries).then(|| RetryPolicy {
        max_attempts: Some(1),
        ..RetryPolicy::default()
    })
}

/// What each of `value` and `wide` got from `source` (`typed` or `forward`) over
/// `template`, on an edge of `retries`, the `value` edge with a second edge beside it
/// when `fan_out` (whose receiver reads every field the template may move).
async fn deliver(source: &str, template: &Value, retries: bool, fan_out: bool) -> Vec<Vec<String>> {
    let e = Engine::builder()
        .register::<Typed>()
        .register::<Forward>()
        .register::<Record>()
        .register::<RecordWide>()
        .register::<RecordEntries>()
        .build();
    let tag = format!("{source}-{retries}-{fan_out}");
    let (to_value, to_wide, beside) = (format!("v-{tag}"), format!("w-{tag}"), format!("b-{tag}"));
    let to_entries = format!("e-{tag}");
    let mut flow = FlowBuilder::new()
        .node("src", source)
        .node(&to_value, "record")
        .node("fan", source)
        .node(&to_wide, "wide")
        .edge_with(
            "src:out",
            &format!("{to_value}:input"),
            template.clone(),
            policy(retries),
        )
        .edge_with(
            "fan:out",
            &format!("{to_wide}:input"),
            template.clone(),
            policy(retries),
        )
        .node("ent", source)
        .node(&to_entries, "entries")
        .edge_with(
            "ent:out",
            &format!("{to_entries}:input"),
            template.clone(),
            policy(retries),
        );
    if fan_out {
        flow = flow.node(&beside, "record").edge_with(
            "src:out",
            &format!("{beside}:input"),
            json!({"user": "{{$.user.name}}", "all": "{{$}}"}),
            policy(retries),
        );
    }
    for node in flow.build().nodes {
        e.apply(node).await.expect("the flow loads");
    }
    let message = serde_json::to_value(sample()).expect("the sample serialises");
    e.send("src:input", message.clone()).await.expect("delivered");
    // Fails when the input does not decode as `Wide`: then nothing is recorded.
    let decoded = e.send("fan:input", message.clone()).await.is_ok();
    e.send("ent:input", message).await.expect("delivered");
    let mut got = vec![seen::take(&to_value), seen::take(&to_wide), seen::take(&to_entries)];
    assert_eq!(
        decoded,
        !got[1].is_empty(),
        "a hop fails exactly when its input does not decode"
    );
    if fan_out {
        got.push(seen::take(&beside));
    }
    got
}

#[tokio::test]
async fn every_rendering_path_gives_the_reference_input() {
    let message = serde_json::to_value(sample()).expect("the sample serialises");
    for template in templates() {
        let compiled = Template::compile(&template).expect("the template compiles");
        let mut failures = Vec::new();
        let reference = compiled.render_lenient(&message, &mut failures);
        let wide = match serde_json::from_value::<Wide>(reference.clone()) {
            Ok(w) => vec![format!("{w:?}")],
            // A receiver that cannot decode its input fails the hop: nothing recorded.
            Err(_) => vec![],
        };
        let entries = format!("{:?}", serde_json::from_value::<FlatEntries>(reference.clone()).ok());
        let expected = [vec![reference.to_string()], wide, vec![entries]];
        for source in ["typed", "forward"] {
            for retries in [false, true] {
                for fan_out in [false, true] {
                    let got = deliver(source, &template, retries, fan_out).await;
                    let case = format!("template {template}, {source} in, retries {retries}, fan-out {fan_out}");
                    assert_eq!(got[..3], expected[..], "{case}");
                    if fan_out {
                        let beside = json!({"user": "ada", "all": message}).to_string();
                        assert_eq!(got[3], [beside], "{case}: the edge beside");
                    }
                }
            }
        }
    }
}

/// With strict expressions a failing expression fails the hop: every path fails with
/// the reference's error, and renders what it renders otherwise.
#[tokio::test]
async fn strict_rendering_paths_fail_as_the_reference_does() {
    let message = serde_json::to_value(sample()).expect("the sample serialises");
    for template in templates() {
        let compiled = Template::compile(&template).expect("the template compiles");
        let expected = match compiled.render(&message) {
            Ok(value) => Ok(vec![value.to_string()]),
            Err(e) => Err(e.to_string()),
        };
        for source in ["typed", "forward"] {
            let e = Engine::builder()
                .strict_expressions(true)
                .register::<Typed>()
                .register::<Forward>()
                .register::<Record>()
                .build();
            let to = format!("strict-{source}");
            let flow = FlowBuilder::new()
                .node("src", source)
                .node(&to, "record")
                .edge_with("src:out", &format!("{to}:input"), template.clone(), policy(false))
                .build();
            for node in flow.nodes {
                e.apply(node).await.expect("the flow loads");
            }
            let got = match e.send("src:input", message.clone()).await {
                Ok(_) => Ok(seen::take(&to)),
                Err(err) => {
                    assert!(seen::take(&to).is_empty(), "a failed hop reaches no handler");
                    assert_eq!(err.code(), Some("MAPPING"), "{err}");
                    // The reference's words, after what says where it failed.
                    let text = err.to_string();
                    Err(expected
                        .as_ref()
                        .err()
                        .filter(|e| text.contains(e.as_str()))
                        .cloned()
                        .unwrap_or(text))
                }
            };
            assert_eq!(got, expected, "template {template}, {source} in");
        }
    }
}

//! The derives through a renamed SDK: the components register, take messages and
//! reply, and their ports carry the schemas `#[tiny(...)]` asked for.

use sdk::{Component, harness::Harness};
use serde_json::json;
use tiny_example_renamed::{Loud, Shout, Whisper};

const FLOW: &str = r#"
kind: TinyNode
metadata: { name: s }
spec:
  module: renamed
  component: shout
  ports:
    - { port: _settings, configuration: { suffix: "!", enableErrorPort: true } }
---
kind: TinyNode
metadata: { name: w }
spec:
  module: renamed
  component: whisper
"#;

#[tokio::test]
async fn renamed_sdk_components_run() {
    let h = Harness::builder()
        .register::<Shout>()
        .register::<Whisper>()
        .yaml(FLOW)
        .build()
        .await
        .expect("the nodes load");

    let reply = h.send("s:input", json!({"text": "hi"})).await.expect("handled");
    assert_eq!(reply.into_value(), Some(json!({"shouted": "HI!"})));
    let emitted = h.emitted("s:out");
    assert_eq!(emitted, vec![json!({"Shouted": {"text": "HI!"}})]);
    let loud: Loud = serde_json::from_value(emitted[0].clone()).expect("a Loud");
    assert_eq!(loud, Loud::Shouted { text: "HI!".into() });

    // A failure with no edge leaving the catch port fails the message (errors never
    // vanish), with the component's words.
    let err = h.send("s:input", json!({"text": ""})).await.expect_err("refused");
    assert!(err.to_string().contains("nothing to shout"), "{err}");

    h.send("w:input", json!({"text": "QUIET"})).await.expect("handled");
    assert_eq!(h.emitted("w:out"), vec![json!({"text": "quiet"})]);
}

#[test]
fn renamed_sdk_port_schemas() {
    let ports: Vec<&str> = Shout::ports().iter().map(|p| p.name).collect();
    assert_eq!(ports, ["_settings", "input", "out", "error"]);
    let input = (Shout::ports()[1].schema)().to_string();
    assert!(input.contains(r#""title":"Text""#), "{input}");
    let info = Shout::info();
    assert_eq!(info.name, "shout");
    assert_eq!(info.description, "Shouts its input.");
}

//! Steps the tests of modules with NATS users of their own share (`identity.rs`,
//! `nkeys.rs`): modules seen on the broker, a hop sent as the platform, the broker's
//! users; a client whose subscriptions the broker may refuse is tiny-testkit's.

use std::time::Duration;

use kube::Api;
use serde_json::{Value, json};
use tiny_runtime::{
    crd::TinyModule,
    nats::{Link, SendOptions, send},
};
pub use tiny_testkit::nats::{broker_error, refused_subscription, watched};

use super::eventually;

/// Waits until each of `modules` advertises a NATS address: it connected to the broker
/// with the credentials it was given.
pub async fn advertise_nats(client: &kube::Client, ns: &str, modules: &[&str]) {
    let api: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    for module in modules {
        eventually(
            &format!("{module} to advertise NATS"),
            Duration::from_secs(60),
            || async {
                let m = api.get(module).await.ok()?;
                m.status.filter(|s| s.addr.starts_with("nats://")).map(|_| ())
            },
        )
        .await;
    }
}

/// `{"name": name}` into `node`'s `input`, sent over `platform` and waited for: the
/// answer's value.
pub async fn greet(platform: &Link, node: &str, name: &str) -> Option<Value> {
    send(
        platform.client(),
        node,
        "input",
        serde_json::to_vec(&json!({ "name": name })).unwrap_or_default(),
        &SendOptions::default().wait(),
    )
    .await
    .expect("answers")
    .and_then(|r| r.into_value())
}

/// The broker's `authorization` block: the platform a user (`platform`, password
/// `platform_password`) with every subject, then `others` as written, then each module
/// (`(name, identity)`, the identity a user and password or an nkey) allowed to publish
/// to modules and subscribe to its own subjects and inboxes only, as the README's
/// "Security" gives.
pub fn broker_config(platform_password: &str, others: &[String], modules: &[(&str, String)]) -> String {
    let mut out = String::from("authorization {\n  users = [\n");
    out.push_str(&format!(
        "    {{ user: \"platform\", password: \"{platform_password}\", permissions: {{ publish: \">\", subscribe: \">\" }} }}\n"
    ));
    for other in others {
        out.push_str(&format!("    {other}\n"));
    }
    for (module, identity) in modules {
        out.push_str(&format!(
            r#"    {{ {identity}, permissions: {{
        publish: {{ allow: ["tinymodule.*.msg", "$JS.API.STREAM.INFO.module-edges"] }}
        subscribe: {{ allow: ["tinymodule.{module}.msg {module}", "tinymodule.{module}.sysmsg", "_INBOX.{module}.>"] }}
        allow_responses: true
    }} }}
"#
        ));
    }
    out.push_str("  ]\n}\n");
    out
}

//! A module is who it says it is, by nkey (issue 48), on a real control plane and a real
//! `nats-server` whose users are nkeys with the subject permissions the README's
//! "Security" gives: alpha reads its seed from `TINY_NATS_NKEY_SEED`, beta from a file
//! (`TINY_NATS_NKEY_SEED_FILE`, as the chart mounts it); a hop goes alpha -> beta ->
//! alpha, and a client holding alpha's seed is refused beta's subject by the broker.
//! alpha takes system port messages from the platform only (`TINY_SYSTEM_PORTS_FROM`):
//! beta's user, which may publish only on `.msg` subjects, cannot reach alpha's
//! `_settings` there (FORBIDDEN, whatever `x-from` says) nor on alpha's `.sysmsg` (the
//! broker's permissions violation); the platform's `_settings` is taken.

mod common;

use std::time::Duration;

use common::{
    create_flow, env, hello,
    nats::{advertise_nats, broker_config, broker_error, greet, refused_subscription, watched},
    nodes_ready, round_trip,
};
use serde_json::json;
use tiny_runtime::nats::{Link, SendOptions, send, wire, with_user};
use tiny_sdk::error::code;
use tiny_testenv::NatsServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_with_nkeys_of_their_own_answer_and_cannot_subscribe_to_each_other() {
    let env = env().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let alpha = nkeys::KeyPair::new_user();
    let beta = nkeys::KeyPair::new_user();
    let alpha_seed = alpha.seed().expect("alpha's seed");
    let beta_seed = beta.seed().expect("beta's seed");
    let beta_seed_file = dir.path().join("beta.nk");
    std::fs::write(&beta_seed_file, format!("{beta_seed}\n")).expect("seed file");
    let config = dir.path().join("nats.conf");
    let keys = [("alpha-v0", alpha.public_key()), ("beta-v0", beta.public_key())];
    let operator = nkeys::KeyPair::new_user();
    // The platform a user, a person (`operator`) an nkey with every subject, each module
    // an nkey (its public key) allowed its own subjects and inboxes only.
    let person = format!(
        r#"{{ nkey: "{}", permissions: {{ publish: ">", subscribe: ">" }} }}"#,
        operator.public_key()
    );
    let identities = keys
        .clone()
        .map(|(module, public)| (module, format!(r#"nkey: "{public}""#)));
    std::fs::write(&config, broker_config("platform-pass", &[person], &identities)).expect("config");
    let broker = NatsServer::start_with_config(&config)
        .await
        .expect("nats-server starts");
    let url = format!("nats://127.0.0.1:{}", broker.port());
    let ns = "own-nkeys";
    env.create_namespace(ns).await.expect("namespace");
    let client = env.client();
    let logs = |module: &str| dir.path().join(format!("{module}.log"));
    let seed_file = beta_seed_file.display().to_string();
    let _modules = [
        hello(&env, ns, "alpha-v0-0", "alpha-v0")
            .nats(&url)
            .env("TINY_NATS_NKEY_SEED", &alpha_seed)
            .env("TINY_SYSTEM_PORTS_FROM", "platform")
            .env("RUST_LOG", "info")
            .logs(logs("alpha-v0"))
            .start(),
        hello(&env, ns, "beta-v0-0", "beta-v0")
            .nats(&url)
            .env("TINY_NATS_NKEY_SEED_FILE", &seed_file)
            .env("RUST_LOG", "info")
            .logs(logs("beta-v0"))
            .start(),
    ];
    let flow = create_flow(&client, ns, &round_trip(ns, None)).await;
    let names: Vec<String> = flow.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_ready(&client, ns, &names).await;
    // Both advertise NATS: the broker took each one's nkey.
    advertise_nats(&client, ns, &["alpha-v0", "beta-v0"]).await;

    let platform = Link::connect(&with_user(&url, "platform", "platform-pass"))
        .await
        .expect("a URL");
    assert!(platform.wait_up(Duration::from_secs(10)).await, "the platform connects");
    let hello_1 = format!("{ns}.alpha-v0.hello-1");
    // alpha -> beta -> alpha, each hop under its module's nkey and permissions.
    assert_eq!(
        greet(&platform, &hello_1, "ada").await,
        Some(json!({ "answer": "HELLO, ADA!" }))
    );

    // A client holding alpha's seed: beta's subject is refused by the broker (a
    // permissions violation, sent as the subscription is made).
    let (spy, mut seen) = watched(
        async_nats::ConnectOptions::with_nkey(alpha_seed.clone()),
        &url,
        "alpha's nkey",
    )
    .await;
    let _theirs = spy.subscribe("tinymodule.beta-v0.msg").await.expect("SUB sent");
    refused_subscription(&mut seen, "tinymodule.beta-v0.msg").await;
    // A key the broker does not know is not let in at all.
    let stranger = async_nats::ConnectOptions::with_nkey(nkeys::KeyPair::new_user().seed().expect("seed"))
        .connect(&url)
        .await;
    assert!(
        matches!(&stranger, Err(e) if e.kind() == async_nats::ConnectErrorKind::AuthorizationViolation),
        "{:?}",
        stranger.err()
    );
    // alpha's `_settings` from beta's user: on alpha's business subject, refused by alpha
    // whether `x-from` names beta's node or claims the platform.
    let (beta_client, mut beta_events) = watched(
        async_nats::ConnectOptions::with_nkey(beta_seed.clone()).custom_inbox_prefix("_INBOX.beta-v0"),
        &url,
        "beta's nkey",
    )
    .await;
    let settings_of_alpha = format!("{ns}.alpha-v0.hello-1:_settings");
    for from in [format!("{ns}.beta-v0.shout-1:output"), "signal".to_owned()] {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(wire::header::TO, settings_of_alpha.as_str());
        headers.insert(wire::header::FROM, from.as_str());
        let answer = tokio::time::timeout(
            Duration::from_secs(30),
            beta_client.request_with_headers(
                wire::subject("alpha-v0"),
                headers,
                br#"{"greetingWord":"Bye"}"#.to_vec().into(),
            ),
        )
        .await
        .expect("answered in time")
        .expect("answered");
        assert_eq!(
            wire::get(answer.headers.as_ref(), wire::header::ERROR_CODE),
            Some(code::FORBIDDEN),
            "from {from}"
        );
    }
    // On alpha's system subject, the broker refuses beta's user.
    beta_client
        .publish(wire::system_subject("alpha-v0"), b"{}".to_vec().into())
        .await
        .expect("PUB sent");
    let refused = broker_error(&mut beta_events, "beta's publish on alpha's system subject").await;
    assert!(
        refused.to_lowercase().contains("permissions violation") && refused.contains("tinymodule.alpha-v0.sysmsg"),
        "{refused}"
    );
    // The platform's `_settings` is taken.
    let taken = send(
        platform.client(),
        &format!("{ns}.alpha-v0.hello-1"),
        "_settings",
        br#"{"greetingWord":"Hello"}"#.to_vec(),
        &SendOptions::default().wait(),
    )
    .await;
    assert!(taken.is_ok(), "{:?}", taken.err());

    // The command line sends with an nkey of its own too (here a person's, with every
    // subject), and shows no seed.
    let operator_seed = operator.seed().expect("seed");
    let out = std::process::Command::new(common::HELLO)
        .args([
            "send",
            &format!("{ns}.alpha-v0.hello-1"),
            "input",
            r#"{"name":"cy"}"#,
            "--wait",
        ])
        .env("TINY_NATS_URL", &url)
        .env("TINY_NATS_NKEY_SEED", &operator_seed)
        .output()
        .expect("hello-module send");
    let (printed, said) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && printed.contains("HELLO, CY!"),
        "{printed}\n{said}"
    );
    assert!(!printed.contains(&operator_seed) && !said.contains(&operator_seed));

    // The modules' own traffic goes on, and the seeds are in no log.
    assert_eq!(
        greet(&platform, &hello_1, "bob").await,
        Some(json!({ "answer": "HELLO, BOB!" }))
    );
    for (module, _) in &keys {
        let log = std::fs::read_to_string(logs(module)).expect("the module's log");
        assert!(
            !log.contains("Permissions Violation") && log.contains("NATS broker connected"),
            "{module}:\n{log}"
        );
        assert!(
            !log.contains(&alpha_seed) && !log.contains(&beta_seed),
            "{module}'s log shows a seed"
        );
    }
}

//! A module's `.creds` file (issue 48) on a real `nats-server` in operator mode: an
//! operator, an account and a user made here with the `nkeys` crate, their JWTs signed
//! as `nsc` signs them; the user's permissions are the README's for module `alpha-v0`.
//! `Credentials::creds_file` connects with the file; the broker refuses that user a
//! subscription to another module's subject; a file whose JWT another account signed
//! is not let in.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tiny_runtime::nats::{Credentials, Link};
use tiny_testkit::{
    NatsServer,
    nats::{refused_subscription, watched},
};

const WAIT: Duration = Duration::from_secs(10);

/// A JWT of `claims` about `subject`, signed by `issuer` (NATS's `ed25519-nkey`).
fn jwt(issuer: &nkeys::KeyPair, subject: &str, name: &str, nats: Value) -> String {
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let header = b64(&json!({ "typ": "JWT", "alg": "ed25519-nkey" }));
    let claims = b64(&json!({
        "jti": format!("{name}-{subject}"),
        "iat": 1_700_000_000,
        "iss": issuer.public_key(),
        "name": name,
        "sub": subject,
        "nats": nats,
    }));
    let signing = format!("{header}.{claims}");
    let signature = issuer.sign(signing.as_bytes()).expect("signs");
    format!(
        "{signing}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature)
    )
}

/// A `.creds` file, as `nsc generate creds` writes it.
fn creds(jwt: &str, seed: &str) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\n\
         -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    )
}

fn unlimited_account() -> Value {
    json!({
        "limits": { "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                    "wildcards": true, "conn": -1, "leaf": -1 },
        "default_permissions": { "pub": {}, "sub": {} },
        "type": "account",
        "version": 2,
    })
}

fn module_user(account: &nkeys::KeyPair, module: &str) -> Value {
    json!({
        "pub": { "allow": ["tinymodule.*.msg", "$JS.API.STREAM.INFO.module-edges"] },
        "sub": { "allow": [format!("tinymodule.{module}.msg {module}"), format!("tinymodule.{module}.sysmsg"), format!("_INBOX.{module}.>")] },
        "resp": { "max": 1, "ttl": 0 },
        "subs": -1, "data": -1, "payload": -1,
        "issuer_account": account.public_key(),
        "type": "user",
        "version": 2,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creds_file_connects_in_operator_mode_with_its_users_permissions() {
    let operator = nkeys::KeyPair::new_operator();
    let account = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let operator_jwt = jwt(
        &operator,
        &operator.public_key(),
        "tiny",
        json!({ "type": "operator", "version": 2 }),
    );
    let account_jwt = jwt(&operator, &account.public_key(), "modules", unlimited_account());
    let user_jwt = jwt(
        &account,
        &user.public_key(),
        "alpha-v0",
        module_user(&account, "alpha-v0"),
    );

    let dir = std::env::temp_dir().join(format!("tiny-nats-creds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let config = dir.join("nats.conf");
    std::fs::write(
        &config,
        format!(
            "operator: {operator_jwt}\nresolver: MEMORY\nresolver_preload: {{\n  {}: {account_jwt}\n}}\n",
            account.public_key()
        ),
    )
    .expect("config");
    let broker = NatsServer::start_with_config(&config)
        .await
        .expect("nats-server starts in operator mode");
    let url = format!("nats://127.0.0.1:{}", broker.port());
    let file = dir.join("alpha.creds");
    std::fs::write(&file, creds(&user_jwt, &user.seed().expect("seed"))).expect("creds");

    let credentials = Credentials::creds_file(&file).expect("a .creds file");
    assert!(!format!("{credentials:?}").contains(&user.seed().expect("seed")));
    let link = Link::connect_with_credentials(&url, Some("alpha-v0"), &credentials)
        .await
        .expect("a URL");
    assert!(link.wait_up(WAIT).await, "the broker takes alpha's .creds");
    // Its own subject answers (a request to it, through its own subscription).
    let mut own = link
        .client()
        .queue_subscribe("tinymodule.alpha-v0.msg", "alpha-v0".into())
        .await
        .expect("its own subject");
    link.client().flush().await.expect("flushed");
    link.client()
        .publish("tinymodule.alpha-v0.msg", "probe".into())
        .await
        .expect("published");
    let got = tokio::time::timeout(WAIT, futures::StreamExt::next(&mut own)).await;
    assert_eq!(got.ok().flatten().map(|m| m.payload.to_vec()), Some(b"probe".to_vec()));

    // The same user's subscription to beta's subject: refused by the broker.
    let (spy, mut seen) = watched(
        async_nats::ConnectOptions::new()
            .credentials_file(&file)
            .await
            .expect("reads the file"),
        &url,
        "alpha's .creds",
    )
    .await;
    let _theirs = spy.subscribe("tinymodule.beta-v0.msg").await.expect("SUB sent");
    refused_subscription(&mut seen, "tinymodule.beta-v0.msg").await;

    // A user signed by an account the operator never signed is not let in.
    let stranger = nkeys::KeyPair::new_account();
    let other = nkeys::KeyPair::new_user();
    let forged = dir.join("forged.creds");
    std::fs::write(
        &forged,
        creds(
            &jwt(&stranger, &other.public_key(), "x", module_user(&stranger, "x")),
            &other.seed().expect("seed"),
        ),
    )
    .expect("creds");
    let refused = async_nats::ConnectOptions::new()
        .credentials_file(&forged)
        .await
        .expect("reads the file")
        .connect(&url)
        .await;
    // The broker's own refusal, not any failure to connect.
    assert!(
        matches!(&refused, Err(e) if e.kind() == async_nats::ConnectErrorKind::AuthorizationViolation),
        "a user of an unknown account: {:?}",
        refused.err()
    );
    std::fs::remove_dir_all(&dir).expect("cleaned");
}

//! A broker token that a URL cannot hold as it is (`/`, `@`, `:`, `%`): given on its own
//! (`TINY_NATS_TOKEN`, as the chart passes it from the broker's Secret), the module
//! connects to a real `nats-server`, and no part of the token shows where the URL does.

use std::time::Duration;

use tiny_runtime::nats::{Link, with_token};
use tiny_testenv::NatsServer;

const TOKEN: &str = "s3cr/et@half:two%25";

#[tokio::test]
async fn a_token_with_url_characters_connects_when_given_on_its_own() {
    let broker = NatsServer::start_with_token(TOKEN).await.expect("nats-server starts");
    assert_eq!(broker.token(), TOKEN);
    let port = broker.port();
    let url = format!("nats://127.0.0.1:{port}");

    let link = Link::connect(&with_token(&url, TOKEN)).await.expect("a URL");
    assert!(link.wait_up(Duration::from_secs(10)).await, "connected with the token");
    assert_eq!(link.url(), format!("nats://***@127.0.0.1:{port}"));
    let client = link.client().clone();
    let mut sub = client.subscribe("t.echo").await.expect("subscribed");
    client.publish("t.echo", "hi".into()).await.expect("published");
    let got = tokio::time::timeout(Duration::from_secs(5), futures::StreamExt::next(&mut sub)).await;
    assert_eq!(got.ok().flatten().map(|m| m.payload.to_vec()), Some(b"hi".to_vec()));

    // The same token written into the URL as it is: its `/` ends the authority, and the
    // broker is never reached with it.
    let raw = format!("nats://{TOKEN}@127.0.0.1:{port}");
    match Link::connect(&raw).await {
        Err(e) => assert!(!e.to_string().contains("et@half"), "{e}"),
        Ok(link) => {
            assert!(
                !link.wait_up(Duration::from_secs(3)).await,
                "connected with a broken URL"
            );
            assert!(!link.url().contains("et@half"), "{}", link.url());
        }
    }
}

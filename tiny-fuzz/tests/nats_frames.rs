//! Raw frames through a real `nats-server`: the `nats` target reads header blocks as
//! the NATS client does, and a frame that the client refuses leaves a module's
//! receiver answering (async-nats 0.51 panicked on one, issue 48; `vendor/async-nats`).

use std::time::Duration;

use futures::StreamExt as _;
use tiny_fuzz::nats::header_block;
use tiny_runtime::nats::{Link, listen};
use tiny_testenv::{NatsServer, RawNats};

const WAIT: Duration = Duration::from_secs(10);

async fn link(broker: &NatsServer) -> Link {
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    link
}

async fn raw(broker: &NatsServer) -> RawNats {
    RawNats::connect(broker.port(), broker.token())
        .await
        .expect("raw client connects")
}

/// The header lines of `headers` as `(name, value)`, sorted (the map keeps no order).
fn lines(headers: &async_nats::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = headers
        .iter()
        .flat_map(|(name, values)| values.iter().map(move |v| (name.to_string(), v.as_str().to_owned())))
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn the_target_reads_header_blocks_as_the_client_does() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let link = link(&broker).await;
    let mut sub = link.client().subscribe("fuzz.frames").await.expect("subscribes");
    link.client().flush().await.expect("flushes");
    let mut c = raw(&broker).await;
    // Lines the broker forwards as they are: continued values (a value with a line
    // break and white space after it), a name twice, padding, empty values, a colon
    // in a value, a tab, text beyond ASCII.
    let cases: Vec<Vec<(&str, &str)>> = vec![
        vec![("x-to", "fuzz-answer:input"), ("x-from", "signal")],
        vec![("x-to", "fuzz-relay:\r\n input")],
        vec![("x-to", "a\r\n\tb\r\n  c"), ("x-edge-id", "e1")],
        vec![("x-h", "one"), ("x-h", "two"), ("x-h", "")],
        vec![("x-to", "   padded   "), ("x-reply-deadline", "1:2:3")],
        vec![("Nats-Msg-Id", "ünï\tcode")],
        vec![("x-empty", "")],
    ];
    for headers in cases {
        c.publish("fuzz.frames", None, Some(&headers), b"{}")
            .await
            .expect("publishes");
        let msg = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("the client delivers in time")
            .expect("the subscription is open");
        let delivered = msg.headers.expect("an HMSG has headers");
        let read = header_block(&RawNats::header_block(&headers)).expect("the target reads what the client reads");
        assert_eq!(lines(&read), lines(&delivered), "{headers:?}");
    }
}

#[tokio::test]
async fn a_carriage_return_inside_a_header_value_leaves_the_receiver_answering() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let link = link(&broker).await;
    let engine = tiny_fuzz::grpc::wired_engine().await;
    let _receiver = listen(link.client().clone(), engine, None).await.expect("subscribes");
    link.client()
        .request("tinymodule.fuzz.msg", Vec::new().into())
        .await
        .expect("the receiver answers");
    let mut c = raw(&broker).await;
    c.subscribe("_INBOX.raw.>", None).await.expect("subscribes");
    let good: &[(&str, &str)] = &[("x-to", "fuzz-relay:input"), ("x-from", "signal")];
    // The frame the target found: any client that may publish to the module's
    // subject can send it.
    let bad: &[(&str, &str)] = &[("x-to", "fuzz-relay:input"), ("x-from", "a\rb")];
    assert!(
        header_block(&RawNats::header_block(bad)).is_err(),
        "the target refuses it too"
    );
    for (round, headers) in [good, bad, good].into_iter().enumerate() {
        let inbox = format!("_INBOX.raw.{round}");
        // After the frame it refused the client reconnects: a good request is sent
        // again until the receiver is back (the broker answers `503`, no responders,
        // meanwhile). The unpatched client never came back.
        let answered = async {
            loop {
                c.publish("tinymodule.fuzz.msg", Some(&inbox), Some(headers), b"7")
                    .await
                    .expect("publishes");
                if headers == bad {
                    break None;
                }
                let reply = c.next(WAIT).await.expect("a reply");
                if reply.header_block.is_none() {
                    break Some(reply);
                }
                assert_eq!(
                    reply.header_block.as_deref().map(|b| b.starts_with(b"NATS/1.0 503")),
                    Some(true),
                    "round {round}: {reply:?}"
                );
            }
        };
        let reply = tokio::time::timeout(WAIT, answered)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the module no longer answers"));
        if let Some(reply) = reply {
            assert_eq!(reply.payload, b"7", "round {round}");
        }
    }
}

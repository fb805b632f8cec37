//! A NATS client whose events a test reads: the broker's errors among them, which is
//! how a refused subscription or publish shows (the client is not told otherwise).

use std::time::Duration;

use async_nats::{Client, ConnectOptions, Event, ServerError};
use tokio::sync::mpsc::UnboundedReceiver;

/// How long [`broker_error`] waits.
const WAIT: Duration = Duration::from_secs(10);

/// A client connected to `url` with `options` (`who` names it in a failure), and the
/// events it sees.
pub async fn watched(options: ConnectOptions, url: &str, who: &str) -> (Client, UnboundedReceiver<Event>) {
    let (events, seen) = tokio::sync::mpsc::unbounded_channel();
    let client = options
        .event_callback(move |event| {
            let events = events.clone();
            async move {
                let _ = events.send(event);
            }
        })
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("{who} connects: {e}"));
    (client, seen)
}

/// The broker's next error among `events` (sent for a refused subscription or
/// publish), waited for up to 10 s; `what` names it in a failure.
pub async fn broker_error(events: &mut UnboundedReceiver<Event>, what: &str) -> String {
    let wait = async {
        loop {
            match events.recv().await {
                Some(Event::ServerError(ServerError::Other(text))) => break Some(text),
                Some(_) => {}
                None => break None,
            }
        }
    };
    match tokio::time::timeout(WAIT, wait).await {
        Ok(Some(text)) => text,
        _ => panic!("no broker error for {what} within 10 s"),
    }
}

/// Waits for the broker to refuse a subscription to `subject` (a permissions
/// violation, sent as the subscription is made).
pub async fn refused_subscription(events: &mut UnboundedReceiver<Event>, subject: &str) {
    let refused = broker_error(events, &format!("the subscription to {subject}")).await;
    assert!(
        refused.to_lowercase().contains("permissions violation") && refused.contains(subject),
        "{refused}"
    );
}

//! What a JetStream stream's limits refuse (docs/limits.md): told from the broker's
//! error code, and said as tiny's error naming the stream and the limit. Shared by the
//! hops (`module-edges`) and the run ledger (`TINY_EXEC`).

use async_nats::jetstream;
use tiny_sdk::{Error, error::code};

/// Why the broker refused to store a message, when a limit of its stream did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The stream is at `max_bytes` or `max_msgs` (or its store failed).
    Full,
    /// The message is over `max_msg_size`.
    TooLarge,
}

/// The broker's refusal in `e` or the errors under it, read from its JetStream
/// error code.
pub(super) fn of(e: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
    use async_nats::jetstream::ErrorCode;
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(js) = e.downcast_ref::<async_nats::jetstream::Error>() {
            return match js.error_code() {
                ErrorCode::STREAM_STORE_FAILED => Some(Refusal::Full),
                ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM => Some(Refusal::TooLarge),
                _ => None,
            };
        }
        next = e.source();
    }
    None
}

/// The error for a message `stream` refused (`what`: the message, for whom):
/// transient, code [`STREAM_FULL`](code::STREAM_FULL), naming the stream and the
/// limit it is at (read from the stream, since the broker's error names neither).
pub(super) async fn limit_error(
    js: &jetstream::Context,
    refused: Refusal,
    stream: &str,
    what: &str,
    after: &str,
) -> Error {
    let info = match js.get_stream(stream).await {
        Ok(s) => Some(s.cached_info().clone()),
        Err(_) => None,
    };
    let why = match (refused, info) {
        (Refusal::TooLarge, Some(info)) => format!(
            "it is larger than the stream's max_msg_size of {} bytes",
            info.config.max_message_size
        ),
        (Refusal::TooLarge, None) => "it is larger than the stream's max_msg_size".to_owned(),
        (Refusal::Full, Some(info))
            if info.config.max_messages > 0 && info.state.messages >= info.config.max_messages.unsigned_abs() =>
        {
            format!("the stream holds {} messages, its max_msgs limit", info.state.messages)
        }
        (Refusal::Full, Some(info)) if info.config.max_bytes > 0 => format!(
            "the stream holds {} bytes and its max_bytes limit is {}",
            info.state.bytes, info.config.max_bytes
        ),
        (Refusal::Full, _) => "the broker could not store it (the stream's store failed or is full)".to_owned(),
    };
    Error::transient(format!(
        "{what} was refused by the NATS JetStream stream `{stream}`: {why} (docs/limits.md); {after}"
    ))
    .with_code(code::STREAM_FULL)
}

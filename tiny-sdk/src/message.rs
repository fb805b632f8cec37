//! Port messages and the replies that travel back up a blocking chain.

use std::fmt;

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

pub use crate::portable::Message;
use crate::{
    error::{Error, Result},
    msg::{Msg, RoundTrip},
};

/// What a handler answers to the node that sent it a message.
///
/// In a blocking chain the reply of the last node travels back to the first one: an
/// HTTP server emits a request and gets the response as the reply of its `emit`.
///
/// Like a port message it is a [`Msg`]: a reply that came back from another module
/// stays bytes until something reads it as JSON or decodes it.
#[derive(Clone, Default)]
pub struct Reply(Option<Msg>);

impl Reply {
    /// No reply.
    pub const fn empty() -> Self {
        Reply(None)
    }

    /// A reply carrying a JSON value.
    pub fn value(value: Value) -> Self {
        Reply(Some(Msg::from_json(value)))
    }

    /// A reply carrying any serialisable value.
    pub fn json<T: Serialize>(value: &T) -> Result<Self> {
        Ok(Reply::value(serde_json::to_value(value)?))
    }

    /// A reply carrying a message as it is (typed or JSON), encoded only if needed.
    pub fn msg(msg: Msg) -> Self {
        Reply(Some(msg))
    }

    /// `true` when there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The carried value as JSON, if any (made on first use; `None` too when it does
    /// not encode).
    pub fn as_value(&self) -> Option<&Value> {
        self.0.as_ref().and_then(|m| m.json().ok())
    }

    /// The carried value as JSON, if any.
    pub fn into_value(self) -> Option<Value> {
        self.0.and_then(|m| m.take_exact::<Value>("reply").ok())
    }

    /// The carried message, if any.
    pub fn as_msg(&self) -> Option<&Msg> {
        self.0.as_ref()
    }

    /// The carried value as a `T`, handed over rather than decoded when it is a `T`
    /// already, `T` survives a JSON round trip unchanged ([`RoundTrip`]), and nothing
    /// else holds the message; otherwise as [`decode`](Self::decode). An empty reply is
    /// an error.
    ///
    /// ```
    /// use tiny_sdk::{Msg, message::Reply};
    ///
    /// let reply = Reply::msg(Msg::new(String::from("done")));
    /// assert_eq!(reply.take::<String>()?, "done");
    /// # Ok::<(), tiny_sdk::Error>(())
    /// ```
    pub fn take<T: DeserializeOwned + RoundTrip + 'static>(self) -> Result<T> {
        if T::round_trip_exact(0)
            && let Some(m) = &self.0
            && m.is::<T>()
            && let Some(m) = self.0
        {
            return m.take_exact("reply");
        }
        self.decode()
    }

    /// Decodes the carried value; an empty reply is an error.
    pub fn decode<T: DeserializeOwned + 'static>(self) -> Result<T> {
        match self.0 {
            // As an input decodes (Go's zero values for what is null or missing); the
            // error names the reply and every wrong field.
            Some(m) => m.decode("reply"),
            None => Err(Error::permanent("expected a reply, got none")),
        }
    }
}

impl PartialEq for Reply {
    fn eq(&self, other: &Self) -> bool {
        self.as_value() == other.as_value() && self.is_empty() == other.is_empty()
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_value() {
            Some(v) => write!(f, "Reply({v})"),
            None if self.is_empty() => f.write_str("Reply(empty)"),
            None => write!(f, "Reply({:?})", self.0),
        }
    }
}

/// What a port handler may return: `()`, a [`Reply`], or a `Result` of either.
#[diagnostic::on_unimplemented(
    message = "a port handler cannot return `{Self}`",
    note = "return `()`, `Reply`, `tiny_sdk::Result<()>` or `tiny_sdk::Result<Reply>`"
)]
pub trait IntoReply {
    /// Converts into the engine's reply.
    fn into_reply(self) -> Result<Reply>;
}

impl IntoReply for () {
    fn into_reply(self) -> Result<Reply> {
        Ok(Reply::empty())
    }
}

impl IntoReply for Reply {
    fn into_reply(self) -> Result<Reply> {
        Ok(self)
    }
}

impl<T: IntoReply, E: Into<Error>> IntoReply for std::result::Result<T, E> {
    fn into_reply(self) -> Result<Reply> {
        self.map_err(Into::into)?.into_reply()
    }
}

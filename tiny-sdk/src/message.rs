//! Port messages and the replies that travel back up a blocking chain.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::error::{Error, Result};

/// A type that can travel through a port: serialisable, decodable and described by a
/// JSON Schema. Implemented for every type with `Serialize`, `Deserialize` and
/// `JsonSchema` (derive `tiny_sdk::Schema` for the editor hints).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot travel through a port",
    label = "not a port message",
    note = "derive `serde::Serialize`, `serde::Deserialize` and `tiny_sdk::Schema` for `{Self}`"
)]
pub trait Message: Serialize + DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static {}

// Reported as "`T` cannot travel through a port", not as the first of the three
// bounds it misses, which would be one error per missing bound.
#[diagnostic::do_not_recommend]
impl<T> Message for T where T: Serialize + DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static {}

/// What a handler answers to the node that sent it a message.
///
/// In a blocking chain the reply of the last node travels back to the first one: an
/// HTTP server emits a request and gets the response as the reply of its `emit`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply(Option<Value>);

impl Reply {
    /// No reply.
    pub const fn empty() -> Self {
        Reply(None)
    }

    /// A reply carrying a JSON value.
    pub fn value(value: Value) -> Self {
        Reply(Some(value))
    }

    /// A reply carrying any serialisable value.
    pub fn json<T: Serialize>(value: &T) -> Result<Self> {
        Ok(Reply(Some(serde_json::to_value(value)?)))
    }

    /// `true` when there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The carried value, if any.
    pub fn as_value(&self) -> Option<&Value> {
        self.0.as_ref()
    }

    /// The carried value, if any.
    pub fn into_value(self) -> Option<Value> {
        self.0
    }

    /// Decodes the carried value; an empty reply is an error.
    pub fn decode<T: DeserializeOwned>(self) -> Result<T> {
        match self.0 {
            Some(v) => {
                serde_path_to_error::deserialize(v).map_err(|e| Error::permanent(format!("reply does not decode: {e}")))
            }
            None => Err(Error::permanent("expected a reply, got none")),
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

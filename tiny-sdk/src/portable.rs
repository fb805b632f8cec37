//! What may travel through a port: below [`Msg`](crate::Msg), which carries it, and
//! published as [`crate::message::Message`] beside the replies made of messages.

use serde::{Serialize, de::DeserializeOwned};

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

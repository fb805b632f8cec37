//! What a [`Msg`](super::Msg) holds, behind one object-safe trait: a typed value, a
//! JSON tree, raw bytes or an edge template's rendering.

use std::{any::Any, borrow::Cow};

use serde_json::Value;

use super::slot::{Placed, Placing};
use crate::error::Result;

/// What a `Msg` holds. Object safe, so messages of every type travel the same way.
pub(super) trait Body: Send + Sync + 'static {
    /// `&Typed<T>` / `&mut Typed<T>` for typed bodies, to downcast.
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// The message as a JSON tree, built on first use.
    fn json(&self) -> Result<&Value>;
    /// The message as a JSON tree holding at least the top-level fields `keys` (all
    /// when `None`), and whether serialising it here found `keys` to be all of its
    /// fields. See [`Msg::tree`].
    fn tree(&self, _keys: Option<&[Box<str>]>) -> Result<(Cow<'_, Value>, bool)> {
        Ok((Cow::Borrowed(self.json()?), false))
    }
    /// [`tree`](Body::tree) for `keys`, a struct's fields named in `placed` made apart
    /// (see [`Msg::tree_placing`]); `None` when the message has no typed value to make
    /// them from, or its tree is made already. `spare` is taken when it is used.
    fn tree_placing(
        &self,
        _keys: &[Box<str>],
        _placed: &Placing,
        _spare: &mut Option<serde_json::Map<String, Value>>,
    ) -> Option<Result<Placed>> {
        None
    }
    /// The message as JSON bytes.
    fn to_bytes(&self) -> Result<Vec<u8>>;
    /// The JSON bytes it arrived as, if it did.
    fn raw(&self) -> Option<&[u8]> {
        None
    }
    fn type_name(&self) -> &'static str;
}

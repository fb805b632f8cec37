//! The watches behind the controllers: objects decoded one at a time, and list failures
//! reported to `/readyz`.

use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use kube::{
    Api, Resource,
    runtime::{
        Controller, WatchStreamExt as _, reflector,
        watcher::{self, Event, watcher},
    },
};
use serde::de::DeserializeOwned;

use crate::{crd::Decoded, health::Readiness};

/// A controller over every `K` of `api`, decoded leniently (a malformed object reaches
/// the reconciler as itself, not as a failed list), whose list failures mark `watch`
/// not ready until a list succeeds again.
pub(crate) fn controller<K>(
    api: Api<Decoded<K>>,
    readiness: Arc<Readiness>,
    watch: &'static str,
) -> Controller<Decoded<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let objects = events(api, readiness, watch).reflect(writer).applied_objects();
    Controller::for_stream(objects, reader)
}

/// The raw watch events of `api`, with list outcomes reported to `readiness`.
pub(crate) fn events<K>(
    api: Api<Decoded<K>>,
    readiness: Arc<Readiness>,
    watch: &'static str,
) -> impl Stream<Item = Result<Event<Decoded<K>>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    readiness.listing(watch);
    watcher(api, watcher::Config::default())
        .default_backoff()
        .inspect(move |event| match event {
            Ok(Event::InitDone) => readiness.listed(watch),
            // Only a failed LIST leaves the module without a view of its objects; a
            // watch that drops after one resumes from what it has.
            Err(watcher::Error::InitialListFailed(e)) => {
                tracing::warn!(watch, error = %e, "cannot list");
                readiness.failing(watch, e.to_string());
            }
            Err(e) => tracing::debug!(watch, error = %e, "watch interrupted; resuming"),
            Ok(_) => {}
        })
}

//! The watches behind the controllers: objects decoded one at a time, and list failures
//! reported to `/readyz`.

use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use kube::{
    Api, Resource,
    core::NamespaceResourceScope,
    runtime::{
        Controller, WatchStreamExt as _, reflector,
        watcher::{self, Event, watcher},
    },
};
use serde::de::DeserializeOwned;

use super::Reconciling;
use crate::{
    crd::Decoded,
    health::Readiness,
    permissions::{Operation, Permissions},
};

/// A controller over every `K` of the module's namespace, decoded leniently (a
/// malformed object reaches the reconciler as itself, not as a failed list), whose list
/// failures mark `watch` not ready (and a refused list in the TinyModule's status)
/// until a list succeeds again. Everything is reconciled again when this replica gains
/// the lease. `seen` sees every event first (deletions, which a controller does not
/// reconcile, among them).
pub(crate) fn controller<K>(
    shared: &Reconciling,
    watch: &'static str,
    seen: impl Fn(&Event<Decoded<K>>) + Send + 'static,
) -> Controller<Decoded<K>>
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static,
    Decoded<K>: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    let (reader, writer) = reflector::store();
    let objects = events(
        shared.api(),
        shared.readiness.clone(),
        shared.permissions.clone(),
        watch,
    )
    .inspect(move |event| {
        if let Ok(event) = event {
            seen(event);
        }
    })
    .reflect(writer)
    .applied_objects();
    Controller::for_stream(objects, reader).reconcile_all_on(shared.leadership.gained())
}

/// The raw watch events of `api`, with list outcomes reported to `readiness` (where
/// `watch` was registered as listing before the module said it started).
pub(crate) fn events<K>(
    api: Api<Decoded<K>>,
    readiness: Arc<Readiness>,
    permissions: Arc<Permissions>,
    watch: &'static str,
) -> impl Stream<Item = Result<Event<Decoded<K>>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    // A watcher whose watch cannot start again (the API server is gone, the resource
    // was removed) would retry the watch forever without listing, and so without ever
    // telling whether it works again. Each such failure ends the session instead; the
    // next one starts with a LIST, whose outcome is what `/readyz` reports.
    let sessions = futures::stream::unfold(false, move |restarted| {
        let api = api.clone();
        async move {
            if restarted {
                tokio::time::sleep(RESTART_PAUSE).await;
            }
            let session = watcher(api, watcher::Config::default())
                .default_backoff()
                .scan(false, |ended, event| {
                    let end_after = matches!(event, Err(watcher::Error::WatchStartFailed(_)));
                    let item = (!*ended).then_some(event);
                    *ended |= end_after;
                    std::future::ready(item)
                });
            Some((session, true))
        }
    });
    sessions.flatten().inspect(move |event| match event {
        Ok(Event::InitDone) => {
            readiness.listed(watch);
            permissions.allowed(Operation::Watch(watch));
        }
        Err(watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e)) => {
            tracing::warn!(watch, error = %e, "cannot list or watch");
            permissions.failed(Operation::Watch(watch), e);
            readiness.failing(watch, e.to_string());
        }
        Err(e) => tracing::debug!(watch, error = %e, "watch interrupted; resuming"),
        Ok(_) => {}
    })
}

/// The pause before a new watch session after one whose watch could not start.
const RESTART_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

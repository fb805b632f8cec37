//! Edge mappings: how an edge's configuration turns the sender's message into the
//! target's input, and what an expression that fails does to the hop.
//!
//! As in the Go SDK, a failing expression does not stop the flow: a whole-value
//! expression (`"{{$.missing}}"`) yields `null`; inside a longer string a missing path
//! is written as nothing and any other failure leaves its `{{...}}` text in place; the
//! hop goes on (see `tiny_expr`'s docs for where a missing path is Go's value, not a
//! failure). Each failure is put on the hop's span
//! (an `expression_error` event, Go's name) and handed to the observers (metrics,
//! TinyTracker); the log says it once while the edge keeps failing, and the node's
//! report lists the edge until it has rendered without failure for [`FAILING_WINDOW`].
//! An engine built with [`strict_expressions`](super::EngineBuilder::strict_expressions)
//! fails the hop instead (code `MAPPING`), as tiny did before.

use std::{
    borrow::Cow,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Map, Value};
use tiny_expr::{EvalError, Template};

use crate::{
    error::{Error, Result, code},
    msg::{Msg, Slot},
    redact::Secrets,
};

use super::address::ChangeFn;

/// The expressions that failed making one input: `None` (no allocation, one word in
/// the hop's future) when all rendered.
pub(crate) type Failed = Option<Box<Vec<EvalError>>>;

/// The most keys an edge's spare map keeps (see `EdgeMapping::spare`): placing a key in
/// it costs a walk from the map's start, so a larger tree is made in a map of its own.
const SPARE_KEYS: usize = 16;

/// How long after its last failure an edge is still shown as failing on its node.
pub const FAILING_WINDOW: Duration = Duration::from_secs(60);

/// How failing expressions are handled, engine-wide.
#[derive(Clone, Default)]
pub(crate) struct Policy {
    /// Fail the hop (tiny's former behaviour) instead of going on as Go does.
    pub strict: bool,
    /// Told the node whose edge started failing, so its status says so.
    pub on_change: Option<ChangeFn>,
}

/// How an edge's configuration turns the sender's message into the target's input.
pub(crate) enum Mapping {
    /// `"{{$}}"`: the message itself, borrowed rather than copied.
    Identity,
    Template(Template),
    /// A template with `[[secret:...]]` placeholders, filled in after it renders.
    Filled(Template, Box<Fills>),
    /// The configuration's placeholders have no value: the edge fails with this.
    Failed(Error),
}

/// The placeholders of one `ports[]` configuration and their values, in order.
pub(crate) type Fills = (Vec<crate::secret::Found>, Vec<String>);

/// What the runner gets for each `ports[]` entry: its placeholders' values, `None`
/// when it has none, or why they could not be had.
pub(crate) type PortFills = Result<Option<Fills>>;

impl Mapping {
    pub fn new(config: &Value) -> std::result::Result<Mapping, tiny_expr::CompileError> {
        let identity = config
            .as_str()
            .and_then(|s| s.strip_prefix("{{")?.strip_suffix("}}"))
            .is_some_and(|e| e.trim() == "$");
        if identity {
            Ok(Mapping::Identity)
        } else {
            Template::compile(config).map(Mapping::Template)
        }
    }
}

/// One edge's mapping into a port, with what it remembers of its failures.
pub(crate) struct EdgeMapping {
    /// The sender, `"<node>:<port>"`.
    pub from: String,
    pub mapping: Mapping,
    /// The top-level fields of the message the template reads, when it reads only
    /// named fields: a typed message then serialises those alone (`Msg::tree`).
    reads: Option<Box<[Box<str>]>>,
    /// Set once a message on this edge turned out to have no other fields: from then
    /// on its whole tree is made the plain way, which costs less than choosing fields
    /// to end up with all of them (an edge carries one type, as a rule).
    reads_all: AtomicBool,
    /// The template moves values out of a tree of its own (`Template::moves_values`):
    /// a typed message then serialises one for it rather than lend the tree it keeps.
    moves: bool,
    /// For a template (without secrets to fill in) that makes an object: the names of
    /// its fields, which every input of the edge shares (see `Msg::from_fields`).
    names: Option<Arc<[Value]>>,
    /// For each of `reads`, the index in the object of the field it is placed whole as
    /// (`Template::placed_fields`), if it is: a typed message makes those values apart
    /// rather than into the tree the template reads.
    placed: Option<Box<crate::msg::Placing>>,
    /// The map of the last tree made so (`placed`), its values dropped: the next hop
    /// makes its tree in it (see `Msg::tree_placing`), rather than allocate a map and
    /// copy and hash its keys again.
    spare: Mutex<Option<Map<String, Value>>>,
    /// Touched only when an expression fails; shared with the runner the node's next
    /// spec builds, so that a re-apply does not forget a failing edge.
    failing: Arc<Mutex<Option<Failing>>>,
}

/// An edge whose expressions fail.
struct Failing {
    edge: String,
    since: Instant,
    last: Instant,
    count: u64,
    latest: String,
}

/// Where a mapping runs, for what it reports.
pub(crate) struct Site<'a> {
    pub node: &'a str,
    pub port: &'a str,
    pub edge_id: &'a str,
    /// The node's secret values, kept out of what is reported.
    pub secret_values: &'a [String],
    /// Where the sender's message may hold secrets (the target port's secret fields).
    pub secrets: &'a Secrets,
}

impl EdgeMapping {
    pub fn new(from: String, mapping: Mapping) -> Self {
        let (reads, moves): (Option<Box<[Box<str>]>>, bool) = match &mapping {
            Mapping::Template(t) | Mapping::Filled(t, _) => (
                t.root_keys().map(|keys| keys.into_iter().map(Box::from).collect()),
                t.moves_values(),
            ),
            Mapping::Identity | Mapping::Failed(_) => (None, false),
        };
        let names = match &mapping {
            Mapping::Template(t) => t
                .fields()
                .map(|names| names.into_iter().map(|n| Value::String(n.to_owned())).collect()),
            _ => None,
        };
        // For each field read, its place in the object, when it is placed whole there.
        let placed = match (&mapping, &reads) {
            (Mapping::Template(t), Some(reads)) if names.is_some() => {
                let fields = t.placed_fields();
                let placed: Box<crate::msg::Placing> = reads
                    .iter()
                    .map(|read| fields.iter().position(|f| f.is_some_and(|f| f == &**read)))
                    .collect();
                placed.iter().any(Option::is_some).then_some(placed)
            }
            _ => None,
        };
        Self {
            from,
            mapping,
            reads,
            reads_all: AtomicBool::new(false),
            moves,
            names,
            placed,
            spare: Mutex::default(),
            failing: Arc::default(),
        }
    }

    /// Keeps what `old`, the same edge in the node's previous runner, knows of its
    /// failures.
    pub fn keep_failures(&mut self, old: &EdgeMapping) {
        self.failing = old.failing.clone();
    }

    /// The target's input for `data`, with the expressions that failed on the way.
    ///
    /// Inlined: most edges have no mapping, and that hop should not pay a call into
    /// the large function that evaluates one (callgrind: about 30 instructions a hop).
    #[inline]
    pub fn apply(&self, data: Msg, policy: &Policy, site: &Site<'_>) -> Result<(Msg, Failed)> {
        if matches!(self.mapping, Mapping::Identity) {
            return Ok((data, None));
        }
        self.evaluate(data, policy, site)
    }

    /// [`apply`](Self::apply) for an edge with a mapping.
    fn evaluate(&self, data: Msg, policy: &Policy, site: &Site<'_>) -> Result<(Msg, Failed)> {
        let (template, fills) = match &self.mapping {
            Mapping::Identity => return Ok((data, None)),
            Mapping::Template(t) => (t, None),
            Mapping::Filled(t, fills) => (t, Some(fills)),
            Mapping::Failed(e) => return Err(e.clone()),
        };
        let keys = self
            .reads
            .as_deref()
            .filter(|_| !self.reads_all.load(Ordering::Relaxed));
        // Fields placed whole made apart, straight from a typed value.
        let placing = match (&self.placed, self.reads.as_deref()) {
            (Some(placed), Some(keys)) => {
                let mut spare = self.take_spare();
                let placing = data.tree_placing(keys, placed, &mut spare).transpose()?;
                if spare.is_some() {
                    self.keep_spare(spare);
                }
                placing
            }
            _ => None,
        };
        let (mut root, all, slots) = match (placing, keys) {
            (Some((tree, slots)), _) => (Cow::Owned(tree), false, Some(slots)),
            (None, Some(keys)) => {
                let (root, all) = data.tree(Some(keys))?;
                (root, all, None)
            }
            // The whole message, for a template that moves nothing: the tree the message
            // keeps, made once for every edge and observer.
            (None, None) if !self.moves => (Cow::Borrowed(data.json()?), false, None),
            (None, None) => {
                let (root, all) = data.tree(None)?;
                (root, all, None)
            }
        };
        if all {
            self.reads_all.store(true, Ordering::Relaxed);
        }
        let mut failures = Vec::new();
        let lenient = (!policy.strict).then_some(&mut failures);
        let failed = |e| Error::permanent(format!("edge mapping from `{}`: {e}", self.from)).with_code(code::MAPPING);
        // A tree of the hop's own (a typed message's) gives up the values the template
        // places whole rather than have them copied.
        let moved = matches!(root, Cow::Owned(_));
        let input = match (&self.names, fills) {
            // An object: its values beside the edge's names, no map made.
            (Some(names), None) => {
                let json = |values: Vec<Value>| values.into_iter().map(Slot::Json).collect();
                let values = match (&mut root, slots) {
                    (Cow::Owned(tree), Some(slots)) => {
                        template.render_fields_placed_as(tree, slots, Slot::Json, lenient)
                    }
                    (Cow::Owned(tree), None) => template.render_fields_taking(tree, lenient).map(json),
                    (Cow::Borrowed(tree), _) => template.render_fields(tree, lenient).map(json),
                };
                Msg::from_fields(names.clone(), values.map_err(failed)?)
            }
            _ => {
                let rendered = match (&mut root, lenient) {
                    (Cow::Owned(tree), Some(f)) => Ok(template.render_lenient_taking(tree, f)),
                    (Cow::Owned(tree), None) => template.render_taking(tree),
                    (Cow::Borrowed(tree), Some(f)) => Ok(template.render_lenient(tree, f)),
                    (Cow::Borrowed(tree), None) => template.render(tree),
                };
                let mut value = rendered.map_err(failed)?;
                // Secrets go in after the render, only where placeholders were written: a
                // value is never read as an expression.
                if let Some((found, values)) = fills.map(|f| &**f) {
                    crate::secret::fill(&mut value, found, values);
                }
                Msg::from_json(value)
            }
        };
        if !failures.is_empty() {
            // A message or a value quoted by an error must not carry a secret on. Its
            // secret fields may lie outside the fields the template read: the whole tree,
            // when it can be made (a field the template did not read may not serialise),
            // else the fields read (made again when values were moved out of them).
            let again;
            let input = match data.json() {
                Ok(whole) => Some(whole),
                Err(_) if !moved => Some(&*root),
                Err(_) => {
                    again = data.tree(self.reads.as_deref()).ok();
                    again.as_ref().map(|(tree, _)| &**tree)
                }
            };
            let values = super::masking::secret_texts(site.secrets, input, site.secret_values.to_vec());
            if !values.is_empty() {
                for f in &mut failures {
                    f.message = crate::redact::scrub(&f.message, &values).into_owned();
                }
            }
            self.report(&failures, policy, site);
        }
        // The tree made from a typed value's fields: its map serves the next hop (one
        // as large as the fields read, at most: the map kept is never a whole message;
        // and a small one, since finding where each key goes walks the map from its
        // start).
        if let (Some(_), Some(reads), Cow::Owned(Value::Object(mut map))) = (&self.placed, &self.reads, root)
            && map.len() <= reads.len().min(SPARE_KEYS)
        {
            for value in map.values_mut() {
                *value = Value::Null;
            }
            self.keep_spare(Some(map));
        }
        Ok((input, (!failures.is_empty()).then(|| Box::new(failures))))
    }

    /// The spare map, if no other hop has it.
    fn take_spare(&self) -> Option<Map<String, Value>> {
        self.spare.try_lock().ok().and_then(|mut spare| spare.take())
    }

    /// Keeps `map` for the next hop, unless another hop kept one already.
    fn keep_spare(&self, map: Option<Map<String, Value>>) {
        if let Ok(mut spare) = self.spare.try_lock()
            && spare.is_none()
        {
            *spare = map;
        }
    }

    /// Says the first of the failures in a while in the log and to the runtime (which
    /// shows it on the node's status). (The hop's span gets them all, as
    /// `expression_error` events, when it ends.)
    fn report(&self, failures: &[EvalError], policy: &Policy, site: &Site<'_>) {
        let Some(first) = failures.first() else { return };
        let now = Instant::now();
        let fresh = {
            let mut failing = self.failing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match failing.as_mut() {
                Some(f) if now.duration_since(f.last) < FAILING_WINDOW => {
                    f.last = now;
                    f.count += failures.len() as u64;
                    f.latest = first.to_string();
                    false
                }
                _ => {
                    *failing = Some(Failing {
                        edge: site.edge_id.to_owned(),
                        since: now,
                        last: now,
                        count: failures.len() as u64,
                        latest: first.to_string(),
                    });
                    true
                }
            }
        };
        if fresh {
            tracing::warn!(
                node = site.node,
                port = site.port,
                edge = site.edge_id,
                from = %self.from,
                error = %first,
                failed = failures.len(),
                "edge expression failed: the hop goes on with null (or the text) in its place, as in the Go SDK; \
                 logged once while the edge keeps failing"
            );
            if let Some(changed) = &policy.on_change {
                changed(site.node);
            }
        }
    }

    /// What the node's status says of this edge, while it fails.
    pub fn failing(&self, port: &str) -> Option<String> {
        let failing = self.failing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let f = failing.as_ref().filter(|f| f.last.elapsed() < FAILING_WINDOW)?;
        Some(format!(
            "edge `{}` from `{}` into port `{port}`: {} failed expression(s) in the last {} s, latest: {}",
            f.edge,
            self.from,
            f.count,
            f.since.elapsed().as_secs().max(1),
            f.latest
        ))
    }
}

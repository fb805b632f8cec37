//! A message from another module, whatever carried it (gRPC or NATS): the checks
//! every transport makes before the engine sees it, and the delivery. Each
//! transport reads its own framing into an [`Inbound`] and writes the outcome back in
//! its own way; what is refused, and why, is decided here once.

use tiny_sdk::{
    Error, Hop, Msg, Reply,
    context::Cancel,
    contract::port,
    engine::{Delivery, Engine, MAX_DEPTH},
    error::code,
    flow::{PortAddress, parse_node_name},
};
use tokio_util::sync::CancellationToken;

use crate::config::SystemPortsFrom;

/// What a message from another module says of its hop, whatever wire carried it
/// (gRPC metadata, NATS headers): each transport reads its own framing into one, and
/// [`deliver`] checks it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Envelope<'a> {
    /// `<node>:<port>`, never empty on NATS (gRPC's check is [`split_target`]).
    pub to: &'a str,
    /// `<node>:<port>` of the sender, `signal`, or empty.
    pub from: &'a str,
    /// The edge's id, empty when none.
    pub edge_id: &'a str,
    /// Hops made so far (0 when the wire says none).
    pub depth: u32,
    /// Which attempt of the sender's edge this is (1 when the wire says none: a Go
    /// sender never does).
    pub attempt: u32,
    /// Hops the message's root made before it came here (tiny's `x-message-hops`; 0
    /// when absent, and the receiver then counts from the depth).
    pub hops: u32,
    /// When the sender stops waiting, Unix ms (Go's `x-reply-deadline`): past it,
    /// the message is dropped unrun.
    pub deadline_unix_ms: Option<u64>,
}

/// One message from another module.
#[derive(Debug)]
pub(crate) struct Inbound<'a> {
    /// Where it goes and what its hop made so far.
    pub envelope: Envelope<'a>,
    /// The payload's JSON bytes (none is `null`).
    pub payload: Vec<u8>,
    /// Cancelled when the sender goes away or the server stops.
    pub cancel: CancellationToken,
    /// Whether the handler is told this replica leads.
    pub leader: bool,
    /// The durable run step the message is (JetStream's `x-run-id`/`x-step-key`).
    pub run: Option<std::sync::Arc<tiny_sdk::run::RunStep>>,
    /// Over NATS, whether it came on the module's system subject (`.sysmsg`), where
    /// the platform sends system ports and a module's own user may not publish; `None`
    /// where the wire has no such subject (gRPC).
    pub on_system_subject: Option<bool>,
}

/// Why a message was not delivered, for transports that classify (gRPC codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The message itself is malformed: no target, a bad depth, a body that is not JSON.
    Invalid,
    /// Past the cycle guard.
    Cycle,
    /// Arrived after its sender's deadline.
    Expired,
    /// For a node of another module, or one this module does not have.
    NotHere,
    /// Delivered, and the chain failed.
    Failed,
    /// A system port's message from a sender `--system-ports-from` does not allow.
    Forbidden,
}

/// `x-to` / `To` as node and port, checked as [`PortAddress::parse`] does without
/// copying the parts.
pub(crate) fn split_target(to: &str) -> Result<(&str, &str), Error> {
    match to.rsplit_once(':') {
        Some((n, p)) if !n.is_empty() && !p.is_empty() => Ok((n, p)),
        _ => Err(PortAddress::parse(to)
            .err()
            .unwrap_or_else(|| Error::permanent(format!("`{to}` is not `<node>:<port>`")))
            .with_code(code::INVALID_MESSAGE)),
    }
}

/// The cycle guard's refusal.
pub(crate) fn cycle(depth: u32) -> Error {
    Error::permanent(format!(
        "cycle guard: a message passed {MAX_DEPTH} hops (this one has made {depth})"
    ))
    .with_code(code::CYCLE)
}

/// System ports a message from the wire reaches in vain, as in the Go SDK.
const SWALLOWED: [&str; 3] = [port::RECONCILE, port::CLIENT, port::IDENTITY];

/// Who sent a message, by what it says (`x-from`, and over NATS its subject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender<'a> {
    /// The platform: no sender node (`x-from` empty or `signal`), over NATS on the
    /// system subject.
    Platform,
    /// A node of module `.0` (`x-from` is `<node>:<port>`).
    Module(&'a str),
    /// A claim the wire contradicts (the platform's `x-from` on the business subject,
    /// where modules publish) or an `x-from` that names no node.
    Unknown,
}

fn sender<'a>(from: &'a str, on_system_subject: Option<bool>) -> Sender<'a> {
    if from.is_empty() || from == crate::remote::FROM_SIGNAL {
        return match on_system_subject {
            Some(false) => Sender::Unknown,
            Some(true) | None => Sender::Platform,
        };
    }
    match from.rsplit_once(':').and_then(|(node, _)| parse_node_name(node)) {
        Some((module, _)) => Sender::Module(module),
        None => Sender::Unknown,
    }
}

/// Whether `policy` lets a message from `from` reach system port `port` of module
/// `module`; the refusal names the port, the sender and the setting.
fn check_system_port(
    policy: SystemPortsFrom,
    module: &str,
    to: &str,
    from: &str,
    on_system_subject: Option<bool>,
) -> Result<(), Error> {
    let allowed = match (policy, sender(from, on_system_subject)) {
        (SystemPortsFrom::Any, _) | (_, Sender::Platform) => true,
        // Named as the module knows its own nodes (a publisher prefix, any case).
        (SystemPortsFrom::PlatformOrSelf, Sender::Module(m)) => tiny_sdk::flow::module_matches(m, module),
        _ => false,
    };
    if allowed {
        return Ok(());
    }
    crate::metrics::system_port_refused();
    let who = match sender(from, on_system_subject) {
        Sender::Module(m) => format!("`{from}` (module `{m}`)"),
        Sender::Platform | Sender::Unknown if on_system_subject == Some(false) => {
            format!("`{from}` on the business subject, where modules publish")
        }
        Sender::Platform | Sender::Unknown => format!("`{from}`, which names no node"),
    };
    let whom = match policy {
        SystemPortsFrom::PlatformOrSelf => "the platform and its own nodes",
        _ => "the platform",
    };
    Err(Error::permanent(format!(
        "module `{module}` takes system port messages from {whom} only (system-ports-from: {}): \
         refused a message for `{to}` from {who}",
        policy.as_str()
    ))
    .with_code(code::FORBIDDEN))
}

/// Checks `msg` and delivers it to the engine; the reply of the chain behind it.
pub(crate) async fn deliver(engine: &Engine, msg: Inbound<'_>) -> Result<Reply, (Error, Refusal)> {
    let Envelope {
        to,
        from,
        edge_id,
        depth,
        attempt,
        hops,
        deadline_unix_ms,
    } = msg.envelope;
    if depth > MAX_DEPTH {
        return Err((cycle(depth), Refusal::Cycle));
    }
    let (node, port) = split_target(to).map_err(|e| (e, Refusal::Invalid))?;
    if port::is_system(port) {
        check_system_port(
            SystemPortsFrom::current(),
            engine.module(),
            to,
            from,
            msg.on_system_subject,
        )
        .map_err(|e| (e, Refusal::Forbidden))?;
    }
    if let Some(deadline) = deadline_unix_ms {
        let now = unix_ms();
        if now >= deadline {
            crate::metrics::expired();
            let e = Error::permanent(format!(
                "the message for `{}` arrived {} ms after its sender's deadline (`x-reply-deadline`): dropped unrun",
                to,
                now - deadline
            ))
            .with_code(code::EXPIRED);
            return Err((e, Refusal::Expired));
        }
    }
    // The Go SDK swallows these from the wire (its scheduler drops `_reconcile`; the other
    // two are its in-process hand-overs): a platform message to one runs nothing.
    if SWALLOWED.contains(&port) {
        return Ok(Reply::empty());
    }
    let module = engine.module();
    let known = engine.has_node(node);
    // Only this module's nodes: forwarding would let two modules bounce a message.
    if !known
        && let Some((owner, _)) = parse_node_name(node)
        && owner != module
    {
        let e = Error::permanent(format!(
            "module `{module}` has no node `{node}`: it belongs to module `{owner}`"
        ))
        .with_code(code::NODE_NOT_FOUND);
        return Err((e, Refusal::NotHere));
    }
    // Checked here (no allocation), decoded straight into the receiving port's type
    // when it is taken: no JSON tree unless something asks for one.
    crate::remote::check_json(&msg.payload).map_err(|e| {
        let e = e
            .context(format_args!("the payload for `{}`", to))
            .with_code(code::INVALID_MESSAGE);
        (e, Refusal::Invalid)
    })?;
    let data = Msg::from_json_bytes(msg.payload);
    let source = crate::remote::source_from_wire(from, edge_id);
    let hop = Hop {
        depth,
        // A root's hops are at least its depth; senders leave the header out when equal.
        cancel: Cancel::from_wire(msg.cancel, hops.max(depth), deadline_unix_ms),
        leader: msg.leader,
        run: msg.run,
    };
    engine
        .deliver(Delivery::new(node, port, source, data).hop(hop).attempt(attempt))
        .await
        .map_err(|e| {
            // A node this module does not have (and does not expect) is not here; a
            // transient failure means it may still load.
            let refusal = if known || e.is_retryable() {
                Refusal::Failed
            } else {
                Refusal::NotHere
            };
            (e, refusal)
        })
}

/// Now, in Unix milliseconds (0 before 1970: a clock that far off expires nothing).
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn who_sent_a_system_port_message_and_whether_it_is_taken() {
        use SystemPortsFrom::{Any, Platform, PlatformOrSelf};
        let to = "f.b-v0.tag-1:_settings";
        let ok = |policy, from, subject| check_system_port(policy, "b-v0", to, from, subject).is_ok();
        // The platform: `signal` or nothing, on the system subject or over gRPC.
        for policy in [Any, Platform, PlatformOrSelf] {
            assert!(ok(policy, "signal", Some(true)) && ok(policy, "", None));
        }
        // Another module's node: only with `any`.
        assert!(ok(Any, "f.a-v0.x-1:out", Some(false)));
        assert!(!ok(Platform, "f.a-v0.x-1:out", Some(false)) && !ok(PlatformOrSelf, "f.a-v0.x-1:out", None));
        // Its own node: with `self`.
        assert!(ok(PlatformOrSelf, "f.b-v0.x-1:out", Some(false)) && !ok(Platform, "f.b-v0.x-1:out", None));
        // ... named as the module knows its own (a publisher's prefix, another case).
        assert!(ok(PlatformOrSelf, "f.acme-B-v0.x-1:out", Some(false)));
        // The platform's word on the business subject, where modules publish: refused.
        assert!(!ok(Platform, "signal", Some(false)) && ok(Any, "signal", Some(false)));
        let e = check_system_port(Platform, "b-v0", to, "f.a-v0.x-1:out", Some(false)).unwrap_err();
        assert_eq!(e.code(), Some(code::FORBIDDEN));
        let text = e.to_string();
        assert!(
            text.contains(to) && text.contains("`f.a-v0.x-1:out` (module `a-v0`)"),
            "{text}"
        );
    }
}

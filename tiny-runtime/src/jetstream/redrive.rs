//! `<module> redrive`: a failed durable run's step run again, as a new attempt (see
//! [`tiny_sdk::run::plan_redrive`]).

use async_nats::jetstream::kv::CreateErrorKind;
use tiny_sdk::{
    Error, Result,
    error::code,
    flow::parse_node_name,
    run::{RedrivePlan, RunEntry, RunStore as _, carry_calls, entry_key, plan_redrive, read_run, step_record_key},
};

use super::{JetStream, router, stream::ledger};
use crate::nats::wire;

/// Re-drives failed run `run_id` from its step at `at` (`<node>:<port>`), or from its
/// first failed step: the attempt's record is created in `TINY_EXEC` (a second
/// re-drive of the same attempt at once loses, with code `CONFLICT`), then the step's
/// message is stored for its module, which runs it on the flow it has now. Fails with
/// code `NOT_FOUND` for a run without records, and as
/// [`plan_redrive`] does.
pub async fn redrive(js: &JetStream, run_id: &str, at: Option<&str>) -> Result<RedrivePlan> {
    let records = read_run(js, run_id).await?;
    if records.is_empty() {
        return Err(Error::permanent(format!("run `{run_id}` has no records in the ledger")).with_code(code::NOT_FOUND));
    }
    let entry = match js.get(&entry_key(run_id)).await? {
        Some(bytes) => Some(RunEntry::from_json_slice(&bytes)?),
        None => None,
    };
    let plan = plan_redrive(run_id, &records, entry.as_ref(), at)?;
    let module = plan
        .hop
        .to
        .rsplit_once(':')
        .and_then(|(node, _)| parse_node_name(node))
        .map(|(module, _)| module.to_owned())
        .ok_or_else(|| {
            Error::permanent(format!(
                "run `{run_id}`: step `{}` went to `{}`, which names no module",
                plan.target, plan.hop.to
            ))
            .with_code(code::INVALID)
        })?;
    // The failed step's outside call answers go to the attempt's step, which then
    // does not make those calls again (a payment is not charged twice). Copied
    // before the attempt is recorded: a hop its record lists may run at once (a
    // leader's re-drive), and a copy a losing re-drive made is the same answer.
    carry_calls(js, run_id, &plan.target, &plan.hop.step_key).await?;
    let key = step_record_key(run_id, &plan.attempt_key);
    // Created, never put: two re-drives of one step at once make one attempt.
    match js.bucket()?.create(&key, plan.attempt.to_json_bytes()?.into()).await {
        Ok(_) => {}
        Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
            return Err(Error::permanent(format!(
                "run `{run_id}`: another re-drive of step `{}` was recorded at `{key}` meanwhile",
                plan.target
            ))
            .with_code(code::CONFLICT));
        }
        Err(e) => return Err(ledger(format_args!("writing `{key}`"), e)),
    }
    // Recorded first: should the publish fail, the hop is pending in the ledger and
    // its module's leader re-drives it (Go's rules).
    let headers = router::durable_headers(&plan.hop, run_id, 0);
    router::store(js, wire::subject(&module), headers, plan.hop.data.clone(), &module).await?;
    tracing::info!(run = %run_id, step = %plan.target, attempt = %plan.attempt_key, to = %plan.hop.to, "run re-driven");
    Ok(plan)
}

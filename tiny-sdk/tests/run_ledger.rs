//! Durable runs share the broker with Go modules: step keys, ledger records, the run
//! status and the reconciler's pass must be the Go SDK's to the byte.
//!
//! The golden values below were worked out with Go's stdlib (`hash/fnv`,
//! `encoding/json`, `time`; Go 1.19, whose string escapes are goccy/go-json's, the
//! Go SDK's encoder) from the Go structs' field tags and the algorithm of
//! `go-nats.md` §5; Go is not needed to run these tests.

use bytes::Bytes;
use tiny_sdk::{
    error::code,
    run::{
        EmitRecord, LedgerScan, MemoryRunStore, Plan, ReconcileSettings, RunStatus, RunStore, StepRecord, StepStatus,
        Timestamp, child_step_key, read_run, redrive_key, root_step_key, run_status, scoped_key, step_record_key,
    },
};

const RUN: &str = "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50";
/// `child_step_key(RUN, root, "edge-1", 0)`.
const K0: &str = "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.d48c93a48f6993f3";
/// `child_step_key(RUN, K0, "ümlaut→edge|x", 0)`.
const KU: &str = "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.1cf90eb3393a11ef";

/// Go: a done record with two emits, the second with reply fields and binary data.
const DONE: &str = r#"{"node":"flow1.common-module.router-ab12","status":"done","emits":[{"to":"flow1.http-module.client-cd34:request","from":"flow1.common-module.router-ab12:out_a","edgeID":"edge-1","stepKey":"2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.d48c93a48f6993f3","data":"eyJxIjoiPGI+JmFtcDs8L2I+In0="},{"to":"flow1.http-module.server-ef56:response","from":"flow1.common-module.router-ab12:out_b","edgeID":"ümlaut→edge|x","stepKey":"2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.1cf90eb3393a11ef","data":"AAEC/v+AIg==","replySubject":"_INBOX.reply.9f8e","replyTarget":"flow1.http-module.server-ef56:response","replyDeadlineUnixMs":1787393502500}],"startedAt":"2026-08-22T10:11:12.123456789Z","completedAt":"2026-08-22T10:11:12.5Z","durationMs":376}"#;

/// Go: a failed record, its error full of what JSON escapes, no emits.
const FAILED: &str = r#"{"node":"flow1.http-module.client-cd34","status":"failed","error":"POST \u003chttps://example.test/?a=1\u0026b=2\u003e: \"bad\"\n\tline \u0008\u000c\u0001\u001f \u2028\u2029 — é 😀 \\ /","startedAt":"2026-08-22T10:11:13Z","completedAt":"2026-08-22T10:11:13.12Z","durationMs":120}"#;

/// Go: the record its reconciler writes for a hop re-driven 3 times (zero startedAt).
const EXHAUSTED: &str = r#"{"node":"flow1.http-module.client-cd34:request","status":"failed","error":"re-drive limit reached after 3 attempts — hop never completed (is the target module on an SDK \u003e= v0.11 with durable support?)","startedAt":"0001-01-01T00:00:00Z","completedAt":"2026-08-22T11:00:00Z"}"#;

/// Go: times in a pod's local zones, and an empty `emits` (not written).
const OFFSETS: &str = r#"{"node":"n","status":"done","startedAt":"2026-08-22T12:11:12.1+02:00","completedAt":"2026-08-22T04:41:12.987654-05:30","durationMs":1}"#;

/// Go: the `run_status` fields of a run whose second step failed and whose third
/// hop is pending.
const STATUS: &str = r#"{"found":true,"complete":false,"failed":true,"pendingSteps":1,"steps":[{"stepKey":"2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.d48c93a48f6993f3","node":"flow1.http-module.client-cd34","status":"failed","error":"boom","completedAt":"2026-08-22T10:11:12.5Z"},{"stepKey":"2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.root","node":"flow1.common-module.router-ab12","status":"done","completedAt":"2026-08-22T10:11:12.5Z"}]}"#;

/// Go: the `run_status` fields of a run with no record.
const STATUS_NOT_FOUND: &str = r#"{"found":false,"complete":false,"failed":false,"pendingSteps":0}"#;

/// 2026-08-22T10:11:12Z.
const T0: i64 = 1_787_393_472;

fn at(secs_after_t0: i64, nanos: u32) -> Timestamp {
    Timestamp::from_unix(T0 + secs_after_t0, nanos).expect("in range")
}

fn done_record() -> StepRecord {
    StepRecord {
        node: "flow1.common-module.router-ab12".into(),
        status: StepStatus::Done,
        error: None,
        emits: vec![
            EmitRecord {
                to: "flow1.http-module.client-cd34:request".into(),
                from: "flow1.common-module.router-ab12:out_a".into(),
                edge_id: "edge-1".into(),
                step_key: K0.into(),
                data: Bytes::from_static(br#"{"q":"<b>&amp;</b>"}"#),
                ..EmitRecord::default()
            },
            EmitRecord {
                to: "flow1.http-module.server-ef56:response".into(),
                from: "flow1.common-module.router-ab12:out_b".into(),
                edge_id: "ümlaut→edge|x".into(),
                step_key: KU.into(),
                data: Bytes::from_static(&[0, 1, 2, 0xfe, 0xff, 0x80, b'"']),
                reply_subject: "_INBOX.reply.9f8e".into(),
                reply_target: "flow1.http-module.server-ef56:response".into(),
                reply_deadline_unix_ms: 1_787_393_502_500,
            },
        ],
        started_at: at(0, 123_456_789),
        completed_at: at(0, 500_000_000),
        duration_ms: 376,
        redrive_of: String::new(),
    }
}

fn failed_record() -> StepRecord {
    StepRecord {
        node: "flow1.http-module.client-cd34".into(),
        status: StepStatus::Failed,
        error: Some(
            "POST <https://example.test/?a=1&b=2>: \"bad\"\n\tline \u{8}\u{c}\u{1}\u{1f} \u{2028}\u{2029} — é 😀 \\ /"
                .into(),
        ),
        emits: vec![],
        started_at: at(1, 0),
        completed_at: at(1, 120_000_000),
        duration_ms: 120,
        redrive_of: String::new(),
    }
}

fn exhausted_record() -> StepRecord {
    StepRecord {
        node: "flow1.http-module.client-cd34:request".into(),
        status: StepStatus::Failed,
        error: Some(
            "re-drive limit reached after 3 attempts — hop never completed (is the target module on an SDK >= v0.11 \
             with durable support?)"
                .into(),
        ),
        emits: vec![],
        started_at: Timestamp::ZERO,
        completed_at: at(2928, 0),
        duration_ms: 0,
        redrive_of: String::new(),
    }
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("UTF-8")
}

#[test]
fn step_keys_are_gos() {
    let root = root_step_key(RUN);
    assert_eq!(root, "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.root");
    for (parent, edge, n, want) in [
        (root.as_str(), "edge-1", 0, K0),
        (
            root.as_str(),
            "edge-1",
            1,
            "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.d48c92a48f699240",
        ),
        (
            root.as_str(),
            "edge-1",
            2,
            "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.d48c95a48f699759",
        ),
        (K0, "ümlaut→edge|x", 0, KU),
        (
            root.as_str(),
            "",
            0,
            "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.60444a1e494238f8",
        ),
        (
            KU,
            "edge-2",
            u32::MAX,
            "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.31996fe47f6d6bb5",
        ),
        // The hash input is `parent|edge|n` with nothing escaped: a `|` in a key or an
        // edge id can make two hops one key, in Go too.
        ("p|q", "r", 7, "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.75c89e5363da238f"),
        ("p", "q|r", 7, "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50.75c89e5363da238f"),
    ] {
        assert_eq!(child_step_key(RUN, parent, edge, n), want, "{parent} {edge} {n}");
    }
}

#[test]
fn records_are_written_as_go_writes_them() {
    for (record, go) in [
        (done_record(), DONE),
        (failed_record(), FAILED),
        (exhausted_record(), EXHAUSTED),
    ] {
        let ours = record.to_json_bytes().expect("writes");
        assert_eq!(text(&ours), go);
        assert_eq!(StepRecord::from_json_slice(go.as_bytes()).expect("reads Go's"), record);
    }
}

#[test]
fn a_record_written_in_a_zone_other_than_utc_reads_and_writes_back_the_same() {
    let record = StepRecord::from_json_slice(OFFSETS.as_bytes()).expect("reads");
    // 12:11:12.1+02:00 and 04:41:12.987654-05:30 are these UTC instants.
    assert_eq!(record.started_at, at(0, 100_000_000));
    assert_eq!(record.completed_at, at(0, 987_654_000));
    assert_eq!(record.completed_at.offset_seconds(), -(5 * 3600 + 30 * 60));
    assert!(record.emits.is_empty());
    assert_eq!(text(&record.to_json_bytes().expect("writes")), OFFSETS);
}

#[test]
fn what_go_may_leave_out_or_null_reads_as_its_zero_value() {
    // Go reads `null` as the zero value, ignores unknown fields, and writes neither
    // `error`, `emits`, `durationMs` nor the reply fields when they are empty.
    let record = StepRecord::from_json_slice(
        br#"{"node":null,"status":"done","error":"","emits":[{"to":"a:b","data":null,"replySubject":null,"extra":[1]}],"startedAt":null,"completedAt":"2026-08-22T10:11:12Z","durationMs":null,"future":{"x":1}}"#,
    )
    .expect("reads");
    assert_eq!(record.node, "");
    assert_eq!(record.error, None);
    assert!(record.started_at.is_zero());
    assert_eq!(record.duration_ms, 0);
    assert_eq!(
        record.emits,
        [EmitRecord {
            to: "a:b".into(),
            ..EmitRecord::default()
        }]
    );
    let record = StepRecord::from_json_slice(br#"{"status":"failed"}"#).expect("reads");
    assert!(record.is_failed() && record.completed_at.is_zero() && record.emits.is_empty());
    // Go writes an empty payload `""` (and a nil one `null`, which it never emits).
    assert_eq!(
        text(&record.to_json_bytes().expect("writes")),
        r#"{"node":"","status":"failed","startedAt":"0001-01-01T00:00:00Z","completedAt":"0001-01-01T00:00:00Z"}"#
    );
    let empty = StepRecord {
        emits: vec![EmitRecord {
            to: "a:b".into(),
            ..EmitRecord::default()
        }],
        ..record
    };
    let json = empty.to_json_bytes().expect("writes");
    assert!(
        text(&json).contains(r#""emits":[{"to":"a:b","from":"","edgeID":"","stepKey":"","data":""}]"#),
        "{}",
        text(&json)
    );

    for bad in [
        &br#"{"node":"n","status":"running","completedAt":"2026-08-22T10:11:12Z"}"#[..],
        br#"{"node":"n","status":"done","completedAt":"2026-08-22 10:11:12"}"#,
        br#"{"node":"n","status":"done","emits":[{"data":"not base64"}]}"#,
        br#"{"node":"n","status":"done","durationMs":-1}"#,
        b"not json",
    ] {
        let err = StepRecord::from_json_slice(bad).expect_err(text(bad));
        assert_eq!(err.code(), Some(code::RUN_RECORD), "{err}");
    }
}

async fn seed(store: &MemoryRunStore, run: &str, step_key: &str, json: &str) {
    store
        .put(&step_record_key(run, step_key), Bytes::copy_from_slice(json.as_bytes()))
        .await
        .expect("put");
}

#[tokio::test]
async fn run_status_reads_the_ledger_as_go_does() {
    let store = MemoryRunStore::new();
    let status = run_status(&store, RUN).await.expect("status");
    assert_eq!(status, RunStatus::default());
    assert_eq!(text(&serde_json::to_vec(&status).expect("json")), STATUS_NOT_FOUND);

    // The root step emitted two hops: both pending.
    let root = root_step_key(RUN);
    seed(&store, RUN, &root, DONE).await;
    // Neither another run's records nor the run's other state count.
    seed(&store, "2f1c6a1e-0000-4000-8000-000000000000", K0, FAILED).await;
    store
        .put(&scoped_key(RUN, &format!("llm/{K0}")), Bytes::from_static(b"{}"))
        .await
        .expect("put");
    let status = run_status(&store, RUN).await.expect("status");
    assert!(status.found && !status.complete && !status.failed, "{status:?}");
    assert_eq!(status.pending_steps, 2);
    assert_eq!(status.steps.len(), 1);

    // The first hop failed: the run failed, one hop is still pending.
    let failed_boom = text(
        &StepRecord {
            node: "flow1.http-module.client-cd34".into(),
            status: StepStatus::Failed,
            error: Some("boom".into()),
            emits: vec![],
            started_at: at(0, 0),
            completed_at: at(0, 500_000_000),
            duration_ms: 0,
            redrive_of: String::new(),
        }
        .to_json_bytes()
        .expect("writes"),
    )
    .to_owned();
    seed(&store, RUN, K0, &failed_boom).await;
    let status = run_status(&store, RUN).await.expect("status");
    assert_eq!(text(&serde_json::to_vec(&status).expect("json")), STATUS);
    assert_eq!(serde_json::from_str::<RunStatus>(STATUS).expect("reads Go's"), status);

    // Records come back by step key, without their prefix.
    let records = read_run(&store, RUN).await.expect("read");
    assert_eq!(
        records.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        [K0, root.as_str()]
    );
    assert_eq!(records[1].1, done_record());
}

#[tokio::test]
async fn a_run_whose_every_hop_completed_is_complete() {
    let store = MemoryRunStore::new();
    let root = root_step_key(RUN);
    let mut first = done_record();
    first.emits.truncate(1); // to K0
    seed(&store, RUN, &root, text(&first.to_json_bytes().expect("writes"))).await;
    let last = StepRecord {
        emits: vec![],
        ..done_record()
    };
    seed(&store, RUN, K0, text(&last.to_json_bytes().expect("writes"))).await;
    let status = run_status(&store, RUN).await.expect("status");
    assert!(status.found && status.complete && !status.failed, "{status:?}");
    assert_eq!(status.pending_steps, 0);
    assert!(
        status
            .steps
            .iter()
            .all(|s| s.status == StepStatus::Done && s.error.is_none())
    );
}

#[tokio::test]
async fn an_unreadable_record_fails_the_status_naming_its_key() {
    let store = MemoryRunStore::new();
    seed(&store, RUN, &root_step_key(RUN), DONE).await;
    seed(&store, RUN, K0, "{\"status\":").await;
    let err = run_status(&store, RUN).await.expect_err("unreadable");
    assert_eq!(err.code(), Some(code::RUN_RECORD));
    assert!(err.message().contains(&step_record_key(RUN, K0)), "{err}");
    assert!(run_status(&store, "").await.is_err(), "no run id");
}

// The reconciler.

/// A run whose root step (completed at T0 + 0.5 s) emitted the hops of [`DONE`].
fn stalled_run() -> Vec<(String, Bytes)> {
    vec![
        (
            step_record_key(RUN, &root_step_key(RUN)),
            Bytes::from_static(DONE.as_bytes()),
        ),
        // Run-scoped state of a component: never the reconciler's.
        (
            scoped_key(RUN, &format!("llm/{K0}")),
            Bytes::from_static(b"{\"cached\":true}"),
        ),
    ]
}

fn with(mut entries: Vec<(String, Bytes)>, key: String, value: &'static [u8]) -> Vec<(String, Bytes)> {
    entries.push((key, Bytes::from_static(value)));
    entries
}

fn pass(entries: &[(String, Bytes)], now: Timestamp) -> Plan {
    Plan::compute(entries.iter().cloned(), now, &ReconcileSettings::default())
}

#[test]
fn the_default_settings_are_gos() {
    let s = ReconcileSettings::default();
    assert_eq!(s.interval.as_secs(), 60);
    assert_eq!(s.stale.as_secs(), 6 * 60);
    assert_eq!(s.gc_after.as_secs(), 24 * 3600);
    assert_eq!(s.max_redrives, 3);
}

#[test]
fn a_run_that_progressed_lately_is_left_alone() {
    let entries = stalled_run();
    assert!(pass(&entries, at(60, 0)).is_empty());
    // Just under 6 minutes after its last step.
    assert!(pass(&entries, at(360, 499_999_999)).is_empty());
    // A clock behind the records: not stale either.
    assert!(pass(&entries, at(-3600, 0)).is_empty());
}

#[test]
fn a_stalled_run_has_its_pending_hops_re_driven_with_their_counters_bumped() {
    // From 6 minutes after its last step on.
    let plan = pass(&stalled_run(), at(360, 500_000_000));
    assert!(plan.fail.is_empty() && plan.delete.is_empty(), "{plan:?}");
    let hops = done_record().emits;
    assert_eq!(plan.redrive.len(), 2);
    for (redrive, hop) in plan.redrive.iter().zip(&hops) {
        assert_eq!(redrive.run_id, RUN);
        // The hop as stored: payload, reply address and all.
        assert_eq!(&redrive.hop, hop);
        assert_eq!(redrive.attempt, 1);
        assert_eq!(redrive.counter_key(), format!("exec/{RUN}/redrive/{}", hop.step_key));
        assert_eq!(&redrive.counter_value()[..], b"1");
    }

    // Re-driven once (the counter is ASCII decimal) and still stalled: the second.
    let entries = with(stalled_run(), redrive_key(RUN, K0), b"1");
    let plan = pass(&entries, at(3600, 0));
    let by_key: Vec<(&str, u32)> = plan
        .redrive
        .iter()
        .map(|r| (r.hop.step_key.as_str(), r.attempt))
        .collect();
    assert_eq!(by_key, [(K0, 2), (KU, 1)]);
    assert_eq!(&plan.redrive[0].counter_value()[..], b"2");
    // A counter that does not read counts as none, as Go's Atoi failing.
    let entries = with(stalled_run(), redrive_key(RUN, K0), b"two");
    assert_eq!(pass(&entries, at(3600, 0)).redrive[0].attempt, 1);
}

#[test]
fn a_hop_re_driven_three_times_gets_gos_failed_record() {
    let entries = with(
        with(stalled_run(), redrive_key(RUN, K0), b"3"),
        redrive_key(RUN, KU),
        b"2",
    );
    let now = at(2928, 0); // 2026-08-22T11:00:00Z
    let plan = pass(&entries, now);
    // The other hop has one re-drive left.
    assert_eq!(plan.redrive.len(), 1);
    assert_eq!(
        (plan.redrive[0].hop.step_key.as_str(), plan.redrive[0].attempt),
        (KU, 3)
    );
    assert_eq!(plan.fail.len(), 1);
    let (run, step_key, record) = &plan.fail[0];
    assert_eq!((run.as_str(), step_key.as_str()), (RUN, K0));
    // The hop's target with its port, Go's message, Go's bytes.
    assert_eq!(record, &exhausted_record());
    assert_eq!(text(&record.to_json_bytes().expect("writes")), EXHAUSTED);
}

#[test]
fn a_finished_run_is_collected_a_day_after_its_last_step_but_not_its_other_state() {
    let root = root_step_key(RUN);
    let mut first = done_record();
    first.emits.truncate(1);
    let entries = vec![
        (
            step_record_key(RUN, &root),
            Bytes::from(first.to_json_bytes().expect("writes")),
        ),
        (step_record_key(RUN, K0), Bytes::from_static(FAILED.as_bytes())),
        (redrive_key(RUN, K0), Bytes::from_static(b"1")),
        (scoped_key(RUN, &format!("llm/{K0}")), Bytes::from_static(b"{}")),
        (scoped_key(RUN, "cart"), Bytes::from_static(b"{}")),
    ];
    // Its last step (the failed one) completed at T0 + 1.12 s; exactly a day later it stays.
    assert!(pass(&entries, at(1 + 86_400, 120_000_000)).is_empty());
    let plan = pass(&entries, at(1 + 86_400, 120_000_001));
    assert!(plan.redrive.is_empty() && plan.fail.is_empty());
    let mut want = vec![
        step_record_key(RUN, &root),
        step_record_key(RUN, K0),
        redrive_key(RUN, K0),
    ];
    want.sort();
    assert_eq!(plan.delete, want);
}

#[test]
fn outside_call_answers_go_with_their_runs_records_and_never_before_them() {
    let root = root_step_key(RUN);
    let mut first = done_record();
    first.emits.truncate(1);
    let answer = tiny_sdk::run::call_key(RUN, K0, "price", 0);
    let entries = vec![
        (
            step_record_key(RUN, &root),
            Bytes::from(first.to_json_bytes().expect("writes")),
        ),
        (step_record_key(RUN, K0), Bytes::from_static(FAILED.as_bytes())),
        (answer.clone(), Bytes::from_static(b"{}")),
    ];
    let plan = pass(&entries, at(1 + 86_400, 120_000_001));
    let mut want = vec![step_record_key(RUN, &root), step_record_key(RUN, K0), answer.clone()];
    want.sort();
    assert_eq!(plan.delete, want);
    // An answer written while its run's first step still runs (no record yet) stays.
    let other = tiny_sdk::run::call_key("other-run", "other-run.root", "price", 0);
    assert!(pass(&[(other, Bytes::from_static(b"{}"))], at(1 + 86_400, 120_000_001)).is_empty());
}

#[test]
fn a_failed_step_is_final_and_only_the_other_pending_hop_is_re_driven() {
    // K0 failed; KU never completed.
    let entries = with(stalled_run(), step_record_key(RUN, K0), FAILED.as_bytes());
    let plan = pass(&entries, at(3600, 0));
    assert!(plan.fail.is_empty() && plan.delete.is_empty());
    assert_eq!(plan.redrive.len(), 1);
    assert_eq!(plan.redrive[0].hop.step_key, KU);
}

#[test]
fn runs_are_planned_each_on_its_own_and_unreadable_records_are_skipped() {
    let other = "0b5e2a10-1111-4222-8333-444455556666";
    let mut entries = stalled_run();
    // Another run, finished two days ago, of which only counters are left.
    entries.push((redrive_key(other, &root_step_key(other)), Bytes::from_static(b"2")));
    // An unreadable record: skipped, and never deleted.
    entries.push((step_record_key(other, "x"), Bytes::from_static(b"{")));
    // Not ledger keys.
    entries.push(("exec".into(), Bytes::new()));
    entries.push(("state/x/step/y".into(), Bytes::from_static(DONE.as_bytes())));
    let plan = pass(&entries, at(2 * 86_400, 0));
    assert_eq!(plan.delete, [redrive_key(other, &root_step_key(other))]);
    assert_eq!(plan.redrive.len(), 2);
    assert!(plan.redrive.iter().all(|r| r.run_id == RUN));
}

#[test]
fn a_modules_scan_plans_the_hops_its_steps_emitted_and_removes_the_runs_it_ran_a_step_of() {
    let finished = "0b5e2a10-1111-4222-8333-444455556666";
    let orphan = "7c0ffee0-1111-4222-8333-444455556666";
    let mut http_step = done_record();
    http_step.node = "flow1.http-module.client-cd34".into();
    http_step.emits.clear();
    let scan = |module: &str| {
        let mut scan = LedgerScan::of_module(module);
        for (n, (key, value)) in stalled_run().iter().enumerate() {
            scan.add(key, value, 10 + n as u64);
        }
        scan.add(&redrive_key(RUN, K0), b"1", 20);
        scan.add(
            &step_record_key(finished, &root_step_key(finished)),
            &http_step.to_json_bytes().expect("writes"),
            30,
        );
        scan.add(&redrive_key(orphan, &root_step_key(orphan)), b"2", 40);
        scan.plan(at(2 * 86_400, 0), &ReconcileSettings::default())
    };

    // The module whose step emitted the hops (named with a publisher prefix, as
    // Go's NameMatches allows): it re-drives them, from the revisions it read.
    let common = scan("tinysystems-common-module");
    let hops: Vec<&str> = common.redrive.iter().map(|r| r.hop.step_key.as_str()).collect();
    assert_eq!(hops, [K0, KU]);
    assert_eq!(common.revisions.get(&redrive_key(RUN, K0)), Some(&20));
    assert_eq!(
        common.revisions.get(&redrive_key(RUN, KU)),
        None,
        "no counter yet: created"
    );
    // A finished run it ran no step of is not its to remove; counters of no step are anyone's.
    assert_eq!(common.delete, [redrive_key(orphan, &root_step_key(orphan))]);

    // The module the hops go to ran no step of that run: it leaves the hops alone
    // and removes the finished run it ran a step of, at the revisions read.
    let http = scan("http-module");
    assert!(http.redrive.is_empty() && http.fail.is_empty(), "{http:?}");
    let finished_key = step_record_key(finished, &root_step_key(finished));
    assert_eq!(
        http.delete,
        [finished_key.clone(), redrive_key(orphan, &root_step_key(orphan))]
    );
    assert_eq!(http.revisions.get(&finished_key), Some(&30));

    // Go's pass (every run) does all of it.
    let all = Plan::compute(
        stalled_run()
            .into_iter()
            .chain([(finished_key, Bytes::from(http_step.to_json_bytes().expect("writes")))]),
        at(2 * 86_400, 0),
        &ReconcileSettings::default(),
    );
    assert_eq!((all.redrive.len(), all.delete.len()), (2, 1));
}

#[test]
fn a_run_whose_hops_wait_on_a_gone_module_is_removed_by_anyone_after_twice_the_gc_age() {
    let scan = |module: &str, days: i64| {
        let mut scan = LedgerScan::of_module(module);
        for (n, (key, value)) in stalled_run().iter().enumerate() {
            scan.add(key, value, 10 + n as u64);
        }
        scan.plan(at(days * 86_400, 0), &ReconcileSettings::default())
    };
    // The hops' sender (the common module) is gone; the http module ran no step of
    // the run. Within twice the GC age it leaves the run to its owner...
    assert!(scan("http-module", 2).delete.is_empty());
    // ...past it, nobody else would remove it: it does, at the revisions it read.
    let late = scan("http-module", 3);
    assert!(late.redrive.is_empty() && late.fail.is_empty(), "{late:?}");
    // Its step records, not the run's other state (as for a finished run).
    let mut want: Vec<String> = stalled_run()
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains("/step/"))
        .collect();
    want.sort();
    assert_eq!(late.delete, want);
    assert_eq!(late.revisions.len(), want.len());
    // A module with hops of its own there re-drives them instead.
    let owner = scan("tinysystems-common-module", 3);
    assert!(owner.delete.is_empty() && !owner.redrive.is_empty(), "{owner:?}");
}

/// Does what the runtime does with a plan.
async fn apply(store: &MemoryRunStore, plan: &Plan) {
    for redrive in &plan.redrive {
        store
            .put(&redrive.counter_key(), redrive.counter_value())
            .await
            .expect("put");
    }
    for (run, step_key, record) in &plan.fail {
        let value = Bytes::from(record.to_json_bytes().expect("writes"));
        store.put(&step_record_key(run, step_key), value).await.expect("put");
    }
    for key in &plan.delete {
        store.delete(key).await.expect("delete");
    }
}

#[tokio::test]
async fn a_hop_that_never_completes_is_re_driven_three_times_then_fails_the_run() {
    let store = MemoryRunStore::new();
    let mut root = done_record();
    root.emits.truncate(1);
    seed(
        &store,
        RUN,
        &root_step_key(RUN),
        text(&root.to_json_bytes().expect("writes")),
    )
    .await;

    let mut attempts = Vec::new();
    for minute in 7..=10 {
        let plan = pass(&store.entries(), at(minute * 60, 0));
        attempts.extend(plan.redrive.iter().map(|r| r.attempt));
        apply(&store, &plan).await;
    }
    assert_eq!(attempts, [1, 2, 3]);
    let status = run_status(&store, RUN).await.expect("status");
    assert!(
        status.found && status.failed && !status.complete && status.pending_steps == 0,
        "{status:?}"
    );
    let error = status.steps[0].error.as_deref().unwrap_or_default();
    assert!(error.starts_with("re-drive limit reached after 3 attempts"), "{error}");

    // Nothing more until a day later, then the ledger is gone (counters included).
    assert!(pass(&store.entries(), at(11 * 60, 0)).is_empty());
    let plan = pass(&store.entries(), at(10 * 60 + 86_401, 0));
    assert_eq!(plan.delete.len(), 3, "{plan:?}");
    apply(&store, &plan).await;
    assert!(store.entries().is_empty());
}

//! `flow_telemetry` against a collector of the project's own that speaks the
//! TinySystems otel-collector's statistics API over real gRPC on loopback
//! (`proto/statistics.proto`: `GetTraces`, `GetTraceByID`). The collector itself is a
//! container image of the platform's, not a package any registry ships, so the test
//! cannot start a real one.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tiny_example_common::flow_telemetry::{
    FlowTelemetry, MAX_TRACES,
    api::{
        AnyValue, GetTraceByIdRequest, GetTraceByIdResponse, KeyValue, Span, StatisticsGetTracesRequest,
        StatisticsGetTracesResponse, TraceInfo, any_value,
        statistics_service_server::{StatisticsService, StatisticsServiceServer},
    },
};
use tiny_sdk::{ErrorKind, flow::FlowBuilder, harness::Harness};
use tonic::{Request, Response, Status};

/// Runs the collector holds: `t000`..; every 50th failed.
const HELD: usize = 450;
/// Runs per page, as a collector pages them.
const PAGE: usize = 100;

/// The collector: `HELD` runs, paged by the request's offset (or not, when
/// `ignores_offset`), and what it was asked.
#[derive(Default, Clone)]
struct Collector {
    asked: Arc<Mutex<Vec<StatisticsGetTracesRequest>>>,
    ignores_offset: bool,
}

fn run(i: usize) -> TraceInfo {
    let i64 = |n: usize| i64::try_from(n).expect("small");
    TraceInfo {
        id: format!("t{i:03}"),
        spans: 3,
        errors: i64(usize::from(i.is_multiple_of(50))),
        duration: 120_000_000 + i64(i),
        // 2026-07-30T00:00:00Z, in microseconds.
        start: 1_785_369_600_000_000,
        ..TraceInfo::default()
    }
}

#[tonic::async_trait]
impl StatisticsService for Collector {
    async fn get_traces(
        &self,
        request: Request<StatisticsGetTracesRequest>,
    ) -> Result<Response<StatisticsGetTracesResponse>, Status> {
        let req = request.into_inner();
        let offset = if self.ignores_offset {
            0
        } else {
            usize::try_from(req.offset).map_err(|_| Status::invalid_argument("offset"))?
        };
        self.asked.lock().expect("lock").push(req);
        let traces = (offset..HELD.min(offset + PAGE)).map(run).collect();
        Ok(Response::new(StatisticsGetTracesResponse {
            traces,
            total: i64::try_from(HELD).expect("small"),
            offset: 0,
        }))
    }

    async fn get_trace_by_id(
        &self,
        request: Request<GetTraceByIdRequest>,
    ) -> Result<Response<GetTraceByIdResponse>, Status> {
        let req = request.into_inner();
        if req.trace_id != "t001" || req.project_id != "shop" {
            return Err(Status::not_found(format!("no trace {}", req.trace_id)));
        }
        let text = |key: &str, value: &str| KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.into())),
            }),
        };
        let span = Span {
            trace_id: vec![0xab; 16],
            span_id: vec![0x01, 0x02, 0xfe],
            name: "f.common.router-1:in".into(),
            start_time_unix_nano: 1_000_000_000,
            end_time_unix_nano: 1_012_000_000,
            attributes: vec![
                text("from", "f.common.ticker-1:out"),
                text("to", "f.common.router-1:in"),
            ],
            ..Span::default()
        };
        Ok(Response::new(GetTraceByIdResponse {
            trace_id: req.trace_id,
            project_id: req.project_id,
            spans: vec![span],
            ..GetTraceByIdResponse::default()
        }))
    }
}

/// Serves `collector` on a free loopback port; the port.
async fn serve(collector: Collector) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let port = listener.local_addr().expect("an address").port();
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(StatisticsServiceServer::new(collector))
            .serve_with_incoming(incoming),
    );
    port
}

async fn harness(settings: Value) -> Harness {
    let flow = FlowBuilder::new()
        .node("tel", "flow_telemetry")
        .settings(settings)
        .build();
    Harness::builder()
        .register::<FlowTelemetry>()
        .flow(flow)
        .build()
        .await
        .expect("the flow loads")
}

/// A node reading the collector on `port` (a name with a dot is used as it is).
async fn reading(port: u16, error_port: bool) -> Harness {
    harness(json!({"otelService": "127.0.0.1", "otelPort": port, "enableErrorPort": error_port})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_reads_the_window_page_by_page_up_to_its_bounds() {
    let collector = Collector::default();
    let h = reading(serve(collector.clone()).await, false).await;
    h.send(
        "tel:request",
        json!({"context": {"ask": 1}, "project": "shop", "flow": "orders"}),
    )
    .await
    .expect("answered");
    let r = &h.emitted("tel:result")[0];
    assert_eq!(r["context"], json!({"ask": 1}));
    assert_eq!(r["traces"].as_array().map(Vec::len), Some(MAX_TRACES));
    assert_eq!(
        r["traces"][1],
        json!({"id": "t001", "spans": 3, "errors": 0, "durationMs": 120, "startedAt": "2026-07-30T00:00:00Z"})
    );
    // Stopped at the reply's cap with runs left: not the whole window, and it says so.
    assert_eq!((r["total"].clone(), r["scanned"].clone()), (json!(450), json!(200)));
    assert_eq!(
        (r["truncated"].clone(), r["errorTraces"].clone()),
        (json!(true), json!(4))
    );
    assert!(r.get("spans").is_none(), "spans only for one trace: {r}");
    // What the collector was asked: the project and flow, the last hour, by offset.
    let asked = collector.asked.lock().expect("lock").clone();
    assert_eq!(asked.iter().map(|a| a.offset).collect::<Vec<_>>(), [0, 100]);
    let first = &asked[0];
    assert_eq!((first.project_id.as_str(), first.flow_id.as_str()), ("shop", "orders"));
    let (start, end) = (first.start.expect("a start"), first.end.expect("an end"));
    assert_eq!(end.seconds - start.seconds, 3600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_only_reads_the_whole_window_and_says_it_did() {
    let h = reading(serve(Collector::default()).await, false).await;
    h.send(
        "tel:request",
        json!({"project": "shop", "errorsOnly": true, "lookbackMinutes": 5}),
    )
    .await
    .expect("answered");
    let r = &h.emitted("tel:result")[0];
    let ids: Vec<&str> = r["traces"]
        .as_array()
        .expect("traces")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["t000", "t050", "t100", "t150", "t200", "t250", "t300", "t350", "t400"]
    );
    assert_eq!(
        (r["scanned"].clone(), r["truncated"].clone()),
        (json!(450), json!(false))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_ignores_the_offset_does_not_loop() {
    let collector = Collector {
        ignores_offset: true,
        ..Collector::default()
    };
    let h = reading(serve(collector.clone()).await, false).await;
    h.send("tel:request", json!({"project": "shop", "errorsOnly": true}))
        .await
        .expect("answered");
    let r = &h.emitted("tel:result")[0];
    // The same page again and again: counted once, and the scan ends.
    assert_eq!(r["scanned"], json!(100));
    assert!(collector.asked.lock().expect("lock").len() < 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_id_gives_that_runs_hops() {
    let h = reading(serve(Collector::default()).await, false).await;
    h.send("tel:request", json!({"project": "shop", "traceId": "t001"}))
        .await
        .expect("answered");
    let r = &h.emitted("tel:result")[0];
    assert_eq!(r["traces"], json!([]));
    assert_eq!(
        r["spans"],
        json!([{"id": "0102fe", "name": "f.common.router-1:in", "from": "f.common.ticker-1:out",
                "to": "f.common.router-1:in", "durationMs": 12}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_and_an_unreachable_collector_fail_clearly() {
    let port = serve(Collector::default()).await;
    let h = reading(port, false).await;
    // No project: permanent, before the collector is asked.
    let e = h
        .send("tel:request", json!({"flow": "orders"}))
        .await
        .expect_err("refused");
    assert_eq!((e.kind(), e.message()), (ErrorKind::Permanent, "project is required"));
    // A trace the collector does not have: its answer, retryable as Go's.
    let e = h
        .send("tel:request", json!({"project": "shop", "traceId": "nope"}))
        .await
        .expect_err("not found");
    assert!(e.message().contains("get trace nope: no trace nope"), "{e}");
    // With the error port on, the failure goes there with the request's context.
    let h = reading(port, true).await;
    h.send("tel:request", json!({"context": {"ask": 2}, "project": " "}))
        .await
        .expect("caught");
    let caught = &h.emitted("tel:error")[0];
    assert_eq!(
        (caught["context"].clone(), caught["error"].clone()),
        (json!({"ask": 2}), json!("project is required"))
    );
    // Nothing listening: transient, naming where it looked.
    // A port held bound but not listening: refused, and no other process can take it
    // meanwhile.
    let (_held, gone) = tiny_testenv::refusing_port().expect("a held port");
    let h = reading(gone, false).await;
    let e = h
        .send("tel:request", json!({"project": "shop"}))
        .await
        .expect_err("unreachable");
    assert_eq!(e.kind(), ErrorKind::Transient);
    assert!(
        e.message().contains(&format!("otel-collector at 127.0.0.1:{gone}")),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_without_a_collector_are_refused_when_applied() {
    for (settings, says) in [
        (json!({"otelService": " ", "otelPort": 2345}), "otelService"),
        (json!({"otelService": "c", "otelPort": 0}), "otelPort"),
    ] {
        let flow = FlowBuilder::new()
            .node("tel", "flow_telemetry")
            .settings(settings)
            .build();
        let refused = Harness::builder().register::<FlowTelemetry>().flow(flow).build().await;
        let text = match refused {
            Ok(h) => h
                .report("tel")
                .and_then(|r| r.error)
                .map(|e| e.to_string())
                .unwrap_or_default(),
            Err(e) => e.to_string(),
        };
        assert!(text.contains(says), "{says}: {text:?}");
    }
}

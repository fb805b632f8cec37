//! Generates the client (and, for tests, the server) of the otel-collector's
//! statistics service that `flow_telemetry` reads, with protox: no `protoc` needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/statistics.proto");
    let fds = protox::compile(["statistics.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}

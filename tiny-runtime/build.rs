//! Generates the gRPC code of `proto/module.proto` with protox (a Rust protobuf
//! compiler): no `protoc` binary is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/module.proto");
    let fds = protox::compile(["module.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}

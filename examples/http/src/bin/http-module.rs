//! The http module as a Kubernetes operator:
//! `http-module run --name http-module-v0 --version 0.1.0 --namespace tinysystems`.

fn main() -> std::process::ExitCode {
    tiny_runtime::cli::main(tiny_example_http::registry())
}

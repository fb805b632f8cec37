//! The common module as a Kubernetes operator:
//! `common-module run --name common-module-v0 --version 0.1.0 --namespace tinysystems`.

fn main() -> std::process::ExitCode {
    tiny_runtime::cli::main(tiny_example_common::registry())
}

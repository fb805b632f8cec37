//! The hello module as a Kubernetes operator:
//! `hello-module run --name examples-v0 --version 0.1.0 --namespace tinysystems`.

fn main() -> std::process::ExitCode {
    tiny_runtime::cli::main(tiny_example_hello::registry())
}

//! The guide's module as a Kubernetes operator.

fn main() -> std::process::ExitCode {
    tiny_runtime::cli::main(tiny_example_guide::registry())
}

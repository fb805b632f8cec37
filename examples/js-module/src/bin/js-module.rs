//! The js-module as a Kubernetes operator:
//! `js-module run --name js-module-v0 --version 0.1.0 --namespace tinysystems`; also
//! `render` and `validate` of flow files holding TinyComponents.

fn main() -> std::process::ExitCode {
    tiny_runtime::cli::main(tiny_example_js_module::registry())
}

//! The module binary: `run` it against a cluster, print its `components`, its chart's
//! `rbac` values, or `render` a flow file for `kubectl apply` (`--help` lists all).

fn main() -> std::process::ExitCode {
    tiny_runtime::cli::main(my_module::registry())
}

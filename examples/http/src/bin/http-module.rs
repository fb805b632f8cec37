//! The http module as a Kubernetes operator:
//! `http-module run --name http-module-v0 --version 0.1.0 --namespace tinysystems`.

use tiny_runtime::{cli::Module, rbac::Requirements};

fn main() -> std::process::ExitCode {
    // `http_server` exposes its port (a Service and an Ingress): without this declaration
    // the module's Role grants no access to Services and Ingresses.
    Module::new(tiny_example_http::registry())
        .requirements(Requirements::none().exposes_ports())
        .main()
}

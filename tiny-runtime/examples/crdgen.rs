//! Writes the CRDs as YAML: `cargo run -p tiny-runtime --example crdgen > crds/tiny.yaml`
//! (what `make crds` does).

fn main() -> std::process::ExitCode {
    match tiny_runtime::crd::yaml() {
        Ok(yaml) => {
            print!("{yaml}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crdgen: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

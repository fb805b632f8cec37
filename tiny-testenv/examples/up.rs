//! Starts a local control plane for humans and keeps it running until Ctrl-C.
//!
//! ```text
//! cargo run -p tiny-testenv --example up -- --kubeconfig /tmp/kc --crds crds/
//! ```
//!
//! Options:
//!   --kubeconfig PATH         also write the admin kubeconfig to PATH
//!   --crds DIR                apply the CRDs in DIR (repeatable)
//!   --no-controller-manager   do not run kube-controller-manager
//!   --keep                    keep the temporary folder (logs, etcd data) after exit

use std::path::PathBuf;
use std::process::ExitCode;

use tiny_testenv::TestEnv;

const USAGE: &str = "usage: up [--kubeconfig PATH] [--crds DIR]... [--no-controller-manager] [--keep]";

#[derive(Debug, Default)]
struct Args {
    kubeconfig: Option<PathBuf>,
    crds: Vec<PathBuf>,
    no_controller_manager: bool,
    keep: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let arg = arg.to_string_lossy().into_owned();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(PathBuf::from(v))),
            None => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| it.next().map(PathBuf::from))
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--kubeconfig" => args.kubeconfig = Some(value("--kubeconfig")?),
            "--crds" => args.crds.push(value("--crds")?),
            "--no-controller-manager" => args.no_controller_manager = true,
            "--keep" => args.keep = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
        }
    }
    Ok(args)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("up: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = TestEnv::builder()
        .controller_manager(!args.no_controller_manager)
        .keep_dir(args.keep);
    for dir in &args.crds {
        builder = builder.crds_dir(dir);
    }
    eprintln!(
        "up: starting etcd, kube-apiserver{} ...",
        if args.no_controller_manager {
            ""
        } else {
            ", kube-controller-manager"
        }
    );
    let env = builder.start().await?;
    let kubeconfig = match &args.kubeconfig {
        Some(path) => {
            std::fs::copy(env.kubeconfig_path(), path).map_err(|e| format!("writing {}: {e}", path.display()))?;
            path.clone()
        }
        None => env.kubeconfig_path().to_path_buf(),
    };
    eprintln!("up: API server {} (logs in {})", env.server_url(), env.dir().display());
    println!("export KUBECONFIG={}", kubeconfig.display());
    eprintln!("up: running; Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    eprintln!("up: stopping");
    drop(env);
    Ok(())
}

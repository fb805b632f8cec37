//! Starts a local control plane for humans and keeps it running until Ctrl-C.
//!
//! ```text
//! cargo run -p tiny-testenv --example up -- --kubeconfig /tmp/kc --crds crds/ --namespace tinysystems --nats
//! ```
//!
//! Options:
//!   --kubeconfig PATH         also write the admin kubeconfig to PATH
//!   --crds DIR                apply the CRDs in DIR (repeatable)
//!   --namespace NS            create the namespace NS (repeatable)
//!   --nats                    start a NATS broker too (token auth, JetStream on) and print its URL
//!   --nats-store DIR          where JetStream keeps its streams and KV (default: a folder
//!                             in the temporary one); durable runs survive a restart with a
//!                             folder of your own (`make up` gives ~/.cache/tiny/nats-store)
//!   --no-controller-manager   do not run kube-controller-manager
//!   --keep                    keep the temporary folder (logs, etcd data) after exit
//!
//! It prints `export` lines (`KUBECONFIG`, `TINY_NATS_URL`) for a shell to evaluate, and
//! where the matching kubectl is, with what `kubectl version` says of it and the server.
//! `TINY_K8S_VERSION=1.20` runs the oldest Kubernetes tiny supports instead of 1.35.

use std::path::PathBuf;
use std::process::ExitCode;

use tiny_testenv::TestEnv;

const USAGE: &str = "usage: up [--kubeconfig PATH] [--crds DIR]... [--namespace NS]... [--nats] [--nats-store DIR] [--no-controller-manager] [--keep]";

#[derive(Debug, Default)]
struct Args {
    kubeconfig: Option<PathBuf>,
    crds: Vec<PathBuf>,
    namespaces: Vec<String>,
    nats: bool,
    nats_store: Option<PathBuf>,
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
            "--namespace" => args
                .namespaces
                .push(value("--namespace")?.to_string_lossy().into_owned()),
            "--nats" => args.nats = true,
            "--nats-store" => args.nats_store = Some(value("--nats-store")?),
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
    for ns in &args.namespaces {
        env.create_namespace(ns).await?;
    }
    eprintln!("up: API server {} (logs in {})", env.server_url(), env.dir().display());
    println!("export KUBECONFIG={}", kubeconfig.display());
    let broker = if args.nats {
        // JetStream on: durable runs (`TINY_NATS_TRANSPORT=jetstream`) need it.
        let broker = tiny_testenv::NatsServer::start_jetstream(args.nats_store.as_deref()).await?;
        let store = args.nats_store.as_ref().map(|d| d.display().to_string());
        eprintln!(
            "up: NATS broker {} (token auth, JetStream in {})",
            broker.address(),
            store.as_deref().unwrap_or("the temporary folder")
        );
        println!("export TINY_NATS_URL={}", broker.url());
        Some(broker)
    } else {
        None
    };
    match tiny_testenv::kubectl().await {
        Ok(kubectl) => {
            eprintln!("up: kubectl for it: {}", kubectl.display());
            // The client's and the server's version, as a user checking the cluster sees them.
            let out = tokio::process::Command::new(&kubectl)
                .arg(format!("--kubeconfig={}", kubeconfig.display()))
                .arg("version")
                .output()
                .await?;
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                eprintln!("up: {line}");
            }
            if !out.status.success() {
                eprintln!(
                    "up: kubectl version failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        Err(e) => eprintln!("up: no kubectl: {e}"),
    }
    eprintln!("up: running; Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    eprintln!("up: stopping");
    drop(broker);
    drop(env);
    Ok(())
}

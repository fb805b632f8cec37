//! The module binary's commands. A module's `main` is one line:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     let registry = tiny_sdk::engine::Registry::default(); // register components here
//!     tiny_runtime::cli::main(registry)
//! }
//! ```
//!
//! `my-module run --name my-module --version 1.0.0 --namespace tinysystems` runs it
//! against the cluster of the current kubeconfig (or in-cluster configuration).

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tiny_sdk::engine::Registry;

use crate::{
    config::ModuleConfig,
    runtime::{LEASE_DURATION, Options, Runtime},
};

/// A tiny module.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the module: reconcile its nodes, serve other modules, elect a leader.
    Run(Box<RunArgs>),
    /// Print the module's components as JSON (name, description, info, tags, ports).
    Components,
    /// Print the CRDs as YAML.
    Crds,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Module name (usually the image repository).
    #[arg(short = 'n', long)]
    name: String,
    /// Module version, without a leading `v`.
    #[arg(short = 'v', long)]
    version: String,
    /// Namespace of the module's resources.
    #[arg(long, default_value = "tinysystems")]
    namespace: String,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(short = 'k', long)]
    kubeconfig: Option<PathBuf>,
    /// Where to serve other modules' gRPC calls.
    #[arg(short = 'g', long, default_value = "0.0.0.0:0")]
    grpc_server_bind_address: SocketAddr,
    /// The address other modules use to reach this one (default: 127.0.0.1 and the bound port).
    #[arg(long, env = "SELF_SERVICE_HOST")]
    grpc_advertise_address: Option<String>,
    /// Where to serve /healthz and /readyz.
    #[arg(short = 't', long, default_value = "127.0.0.1:0")]
    health_probe_bind_address: SocketAddr,
    /// Where to serve /metrics (the same endpoints as the probe address).
    #[arg(short = 'm', long)]
    metrics_bind_address: Option<SocketAddr>,
    /// This replica's identity in leader election.
    #[arg(long, env = "HOSTNAME", default_value = "tiny")]
    identity: String,
    /// Lease duration in seconds: a dead leader is replaced within about this long.
    #[arg(long, default_value_t = LEASE_DURATION.as_secs())]
    lease_seconds: u64,
    /// Labels of this module's pods (`key=value,...`), selected by exposed Services.
    #[arg(long, env = "TINY_POD_SELECTOR", value_parser = parse_labels)]
    pod_selector: Option<std::collections::BTreeMap<String, String>>,
    /// Ingress class of exposed ports.
    #[arg(long, env = "TINY_INGRESS_CLASS")]
    ingress_class: Option<String>,
    /// Suffix of generated hostnames.
    #[arg(long, env = "TINY_INGRESS_HOSTNAME_SUFFIX")]
    ingress_hostname_suffix: Option<String>,
}

fn parse_labels(s: &str) -> Result<std::collections::BTreeMap<String, String>, String> {
    s.split(',')
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(format!("`{kv}` is not `key=value`")),
        })
        .collect()
}

/// Parses the command line and runs the command; a module's `main` returns this.
pub fn main(registry: Registry) -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Command::Components => print_components(&registry),
        Command::Crds => match crate::crd::yaml() {
            Ok(y) => {
                print!("{y}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Run(args) => {
            let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return fail(e),
            };
            match rt.block_on(run(*args, registry)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::FAILURE
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn,tower=warn,h2=warn,hyper=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn print_components(registry: &Registry) -> ExitCode {
    let config = ModuleConfig::new("module", "0", "", "");
    let status = crate::controller::module::module_status(&config, registry);
    match serde_json::to_string_pretty(&status.components) {
        Ok(s) => {
            println!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

async fn client(path: Option<&PathBuf>) -> Result<kube::Client, crate::Error> {
    let config = match path {
        Some(p) => {
            let kc = Kubeconfig::read_from(p).map_err(|e| crate::Error::Config(format!("{}: {e}", p.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| crate::Error::Config(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| crate::Error::Config(e.to_string()))?,
    };
    kube::Client::try_from(config).map_err(|e| crate::Error::Config(e.to_string()))
}

async fn run(args: RunArgs, registry: Registry) -> Result<(), crate::Error> {
    let client = client(args.kubeconfig.as_ref()).await?;
    let mut config = ModuleConfig::new(&args.name, &args.version, &args.namespace, &args.identity);
    if let Some(selector) = args.pod_selector.clone() {
        config.pod_selector = selector;
    }
    config.ingress_class.clone_from(&args.ingress_class);
    config.hostname_suffix.clone_from(&args.ingress_hostname_suffix);
    let grpc = crate::grpc::Grpc::bind(args.grpc_server_bind_address)
        .await
        .map_err(|e| crate::Error::Startup(format!("binding gRPC on {}: {e}", args.grpc_server_bind_address)))?;
    config.grpc_addr = Some(
        args.grpc_advertise_address
            .clone()
            .unwrap_or_else(|| format!("127.0.0.1:{}", grpc.port())),
    );
    tracing::info!(module = %config.name, version = %config.version, grpc = ?config.grpc_addr, "starting");
    let pool = grpc.pool();
    let runtime = Runtime::start(
        client,
        Options {
            config,
            registry,
            lease_duration: Some(Duration::from_secs(args.lease_seconds)),
            probe_addr: Some(args.metrics_bind_address.unwrap_or(args.health_probe_bind_address)),
            discovery: Some(pool.clone()),
            router: Some(pool),
        },
    )
    .await?;
    let leadership = runtime.leadership();
    let server = grpc
        .with_leader(std::sync::Arc::new(move || leadership.is_leader()))
        .serve(runtime.engine().clone());
    if let Some(addr) = runtime.probe_addr {
        tracing::info!(%addr, "probes and metrics");
        println!("probe-addr {addr}");
    }
    tokio::select! {
        r = server => {
            if let Err(e) = r {
                return Err(crate::Error::Startup(format!("gRPC server: {e}")));
            }
        }
        _ = shutdown_signal() => tracing::info!("shutting down"),
    }
    runtime.stop().await;
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

//! The module binary's commands. A module's `main` is one line:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     let registry = tiny_sdk::engine::Registry::default(); // register components here
//!     tiny_runtime::cli::main(registry)
//! }
//! ```
//!
//! `my-module run --name my-module-v1 --version 1.0.0 --namespace tinysystems` runs it
//! against the cluster of the current kubeconfig (or in-cluster configuration).
//! Components that need Kubernetes permissions beyond the runtime's declare them:
//! `tiny_runtime::cli::Module::new(registry).requirements(reqs).main()`; `my-module rbac`
//! prints the chart values that grant them ([`crate::rbac`]).
//!
//! Bind addresses take the Go SDK's forms too (`:8081` is every IPv4 interface), so the
//! Go operator chart's arguments work, as do its hook commands `pre-install` and
//! `pre-delete` (they check the namespace, and clean up after the module).
//!
//! `my-module validate flow.yaml` checks a flow file before it is applied
//! ([`tiny_sdk::flow::validate`]): one line a mistake, naming node, port and field; exit
//! status 1 when there is any, 2 when a file cannot be read. `--module-yaml` gives other
//! modules' TinyModules ([`crate::crd::module_catalog`]) for their nodes, and
//! `--kubeconfig` with `--namespace` reads them from a cluster.
//!
//! `my-module check-upgrade --name my-module-v1` says, before an upgrade, what this build
//! breaks of the flows deployed ([`tiny_sdk::flow::check_upgrade`]): the module's
//! TinyModule (or `--from`, a snapshot of `components`) against this build, for every
//! edge into its nodes and every node's settings, read from the cluster (or `--flow`
//! files). One line a finding, `breaking` or `compatible`, naming flow, node, edge, port
//! and field (`--output json` for machines); exit status 1 when any is breaking, 2 when
//! the check could not be made. The tiny-module chart runs it as a `pre-upgrade` hook.
//!
//! `my-module capture-run <run-id> -o tests/runs/order.json` reads a durable run from the
//! ledger into a file ([`tiny_sdk::run::capture_run`]) that `cargo test` replays against
//! the build ([`tiny_sdk::harness::replay_runs`]): docs/guide.md, "Replay a recorded run".
//! `my-module redrive <run-id> [--at <node:port>]` runs a failed durable run again from
//! one of its steps, on the flow as it is now, as a new attempt in the ledger
//! ([`crate::jetstream::redrive`]).

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use clap::{Parser, Subcommand};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tiny_sdk::engine::Registry;

use crate::{
    carrier::listen_all,
    config::ModuleConfig,
    rbac::Requirements,
    runtime::{LEASE_DURATION, Options, Runtime},
    telemetry::{self, LogFormat},
    wiring::{NatsMode, Transports},
};

/// A tiny module.
// `args_override_self`: a flag given twice takes its last value, as cobra does for a Go
// module, so the chart's `extraArgs` can override what the chart sets.
#[derive(Debug, Parser)]
#[command(version, about, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines as `text` or `json` (one object a line, with the trace id while a trace is recorded).
    #[arg(long, global = true, env = "TINY_LOG_FORMAT", value_parser = lenient::<LogFormat>, default_value = "text", value_name = "text|json")]
    log_format: LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the module: reconcile its nodes, serve other modules, elect a leader.
    Run(Box<RunArgs>),
    /// Print the module's components as JSON (name, description, info, tags, ports); with --names, each
    /// component's name as node names carry it (`parse_temp` is `parse-temp`, as the Go SDK writes it).
    Components(ComponentsArgs),
    /// Print the CRDs as YAML.
    Crds,
    /// Print the `rbac:` values of the tiny-module chart: the runtime's rules and the components' requirements.
    Rbac,
    /// Helm pre-install hook: refuse a reserved, missing or unlabelled namespace.
    PreInstall(HookArgs),
    /// Helm pre-delete hook: delete the TinyModule, the Lease, the nodes' finalizers and exposed Services.
    PreDelete(HookArgs),
    /// Send a message into a node over NATS, as the platform's signals do; print the reply with --wait.
    Send(SendArgs),
    /// Print a node of the cluster as its module reports it: its status and conditions, its edges, and each
    /// port's configuration decoded (`_control` is what the node's dashboard shows, such as the last message).
    Inspect(InspectArgs),
    /// Print a flow file as the API server takes it (`render flow.yaml | kubectl apply -f -`): inline JSON
    /// in `configuration` and `data` becomes base64, as Go encodes it; `--inline` reads `kubectl get -o yaml` back.
    Render(RenderArgs),
    /// Check a flow file before applying it, against this module's components (and other modules' TinyModules,
    /// from --module-yaml or a cluster's --namespace with --kubeconfig): one line a problem naming node, port and
    /// field; exit status 1 when any is found, 2 when a file or the cluster cannot be read.
    Validate(ValidateArgs),
    /// Before an upgrade: compare this build's port schemas with the deployed module's (its TinyModule, or --from
    /// a `components` snapshot) for every edge into its nodes and every node's settings (the cluster's TinyNodes,
    /// or --flow files); one line a finding naming flow, node, edge, port and field, `breaking` or `compatible`.
    /// Exit status 1 when any is breaking, 2 when the check could not be made.
    CheckUpgrade(CheckUpgradeArgs),
    /// Read a durable run from the ledger (`TINY_EXEC` on JetStream) into a file that a test replays
    /// (`tiny_sdk::harness::replay_runs` over `tests/runs/`): its first message and, per step, node, port, what
    /// arrived, what it emitted and what each outside call answered. Exit status 1 when it cannot be read.
    CaptureRun(CaptureRunArgs),
    /// Run a failed durable run again from one of its steps (--at <node:port>, or its first failed step), on the
    /// flow as it is now: a new attempt recorded in the ledger beside the failed one, the step's message sent to its
    /// module again. Exit status 1 when the run cannot be re-driven (not failed, no such step), naming why.
    Redrive(RedriveArgs),
}

#[derive(Debug, clap::Args)]
struct CheckUpgradeArgs {
    /// The module's name, as given to `run`: its TinyModule and nodes are the ones checked.
    #[arg(short = 'n', long)]
    name: String,
    /// The new version, as given to `run` (accepted so that `run`'s flags can be repeated).
    #[arg(short = 'v', long = "version", value_name = "VERSION")]
    _version: Option<String>,
    /// The namespace of the module's TinyModule and of the flows' TinyNodes.
    #[arg(long, env = "RELEASE_NAMESPACE", default_value = "tinysystems")]
    namespace: String,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(short = 'k', long)]
    kubeconfig: Option<PathBuf>,
    /// The deployed build's components, as `<module> components` printed them (a snapshot kept with the
    /// release), instead of the cluster's TinyModule.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// A flow file whose nodes are the deployed ones, instead of the cluster's TinyNodes; may be repeated.
    #[arg(long = "flow", value_name = "FILE")]
    flows: Vec<PathBuf>,
    /// `text` (one line a finding) or `json` (the module, verdict, findings and schema changes).
    #[arg(short = 'o', long, value_parser = lenient::<OutputFormat>, default_value = "text", value_name = "text|json")]
    output: OutputFormat,
    /// Report breaking findings but exit 0 (the chart's `upgradeCheck.allowBreaking`).
    #[arg(long)]
    allow_breaking: bool,
}

/// `check-upgrade --output`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
enum OutputFormat {
    /// One line a finding; the summary on standard error.
    #[default]
    Text,
    /// One JSON object.
    Json,
}

#[derive(Debug, clap::Args)]
struct ValidateArgs {
    /// The flow's YAML file (`-`: standard input).
    file: PathBuf,
    /// A YAML file of other modules' TinyModules (`kubectl get tinymodules -o yaml`), whose published
    /// components the flow's nodes of those modules are checked against; may be repeated.
    #[arg(long = "module-yaml", value_name = "FILE")]
    module_yaml: Vec<PathBuf>,
    /// Also read the TinyModules of --namespace from the cluster of this kubeconfig.
    #[arg(short = 'k', long)]
    kubeconfig: Option<PathBuf>,
    /// The namespace whose TinyModules --kubeconfig reads.
    #[arg(long, default_value = "tinysystems")]
    namespace: String,
    /// This module's name, as given to `run`: its own TinyModule, if given or in the
    /// cluster, is left aside, so that its nodes are checked against this binary's components.
    #[arg(short = 'n', long)]
    name: Option<String>,
    /// This module's version, as given to `run` (accepted so that `run`'s flags can be
    /// repeated; the name alone picks the module).
    #[arg(short = 'v', long = "version", value_name = "VERSION")]
    _version: Option<String>,
}

#[derive(Debug, clap::Args)]
struct ComponentsArgs {
    /// One line a component: its name, and the node name a flow gives its nodes.
    #[arg(long)]
    names: bool,
    /// The module's name, as given to `run`, to put in the node names --names prints.
    #[arg(short = 'n', long, requires = "names")]
    name: Option<String>,
}

#[derive(Debug, clap::Args)]
struct InspectArgs {
    /// The node's full name (`<flow>.<module>.<component>-<suffix>`).
    node: String,
    /// The cluster's kubeconfig (default: KUBECONFIG, then ~/.kube/config or in-cluster).
    #[arg(short = 'k', long)]
    kubeconfig: Option<PathBuf>,
    /// The node's namespace.
    #[arg(long, default_value = "tinysystems")]
    namespace: String,
}

#[derive(Debug, clap::Args)]
struct RenderArgs {
    /// The YAML file (`-`: standard input).
    file: PathBuf,
    /// The other way: base64 `configuration`, `schema` and `data` shown as JSON.
    #[arg(long)]
    inline: bool,
}

#[derive(Debug, clap::Args)]
// `send` cannot go without a broker (`run` can: gRPC only).
#[command(mut_arg("nats_url", |a| a.required(true)))]
struct SendArgs {
    /// The node's full name (`<flow>.<module>.<component>-<suffix>`): its module picks the subject.
    node: String,
    /// The port (a system port such as `_control` reaches every replica; the leader acts).
    port: String,
    /// The message, as JSON (`-` reads it from standard input).
    data: String,
    /// Wait for the node's reply and print it as JSON (an empty reply is said on standard error).
    #[arg(long)]
    wait: bool,
    /// How long to wait for the reply, in seconds.
    #[arg(long, default_value_t = crate::nats::wire::DEFAULT_SIGNAL_TIMEOUT.as_secs())]
    timeout: u64,
    #[command(flatten)]
    broker: BrokerArgs,
}

/// The broker and the module's credentials on it (`run`, `send`, `capture-run`, `redrive`):
/// one set of flags, so that every command reads `TINY_NATS_*` the same way. The help is
/// `send`'s; a command that says more or less of a flag replaces its help with `mut_arg`.
#[derive(Debug, clap::Args)]
struct BrokerArgs {
    /// The broker (`nats://[token@]host:port`).
    #[arg(long, env = "TINY_NATS_URL")]
    nats_url: Option<String>,
    /// The broker's token, when it is not in the URL (the chart sets it from the broker's
    /// Secret): any characters, none of them escaped; it replaces the URL's user info.
    #[arg(long, env = "TINY_NATS_TOKEN")]
    nats_token: Option<String>,
    /// A NATS user of one's own instead of the shared token (see `run`).
    #[arg(
        long,
        env = "TINY_NATS_USER",
        conflicts_with = "nats_token",
        requires = "nats_password"
    )]
    nats_user: Option<String>,
    /// The password of `TINY_NATS_USER`.
    #[arg(long, env = "TINY_NATS_PASSWORD", requires = "nats_user")]
    nats_password: Option<String>,
    #[command(flatten)]
    nkey: NkeyArgs,
}

impl BrokerArgs {
    /// The broker's URL with the token or user in it; `None` without `--nats-url`.
    fn url(&self) -> Option<String> {
        user_nats_url(
            self.nats_url.as_deref(),
            self.nats_token.as_deref(),
            self.nats_user.as_deref(),
            self.nats_password.as_deref(),
        )
    }

    /// A link to the broker, up (for a command that needs `--nats-url`).
    async fn connect(&self) -> Result<crate::nats::Link, String> {
        let credentials = self.nkey.credentials().map_err(|e| e.to_string())?;
        let url = self.url().unwrap_or_default();
        let link = crate::nats::Link::connect_with_credentials(&url, None, &credentials)
            .await
            .map_err(|e| e.to_string())?;
        if !link.wait_up(crate::nats::CONNECT_TIMEOUT).await {
            return Err(format!(
                "the NATS broker at {} did not answer within {} s",
                link.url(),
                crate::nats::CONNECT_TIMEOUT.as_secs()
            ));
        }
        Ok(link)
    }
}

/// An nkey or `.creds` file of one's own, instead of a token or a user (in [`BrokerArgs`]).
#[derive(Debug, clap::Args)]
struct NkeyArgs {
    /// The module's own nkey: a user seed (`SU...`) whose public key the broker gives
    /// subject permissions (README, "Security"). Never shown.
    #[arg(
        long,
        env = "TINY_NATS_NKEY_SEED",
        conflicts_with_all = ["nats_token", "nats_user", "nats_nkey_seed_file", "nats_creds"]
    )]
    nats_nkey_seed: Option<String>,
    /// A file holding the nkey user seed (a mounted Secret), instead of `TINY_NATS_NKEY_SEED`.
    #[arg(
        long,
        env = "TINY_NATS_NKEY_SEED_FILE",
        conflicts_with_all = ["nats_token", "nats_user", "nats_creds"]
    )]
    nats_nkey_seed_file: Option<PathBuf>,
    /// A `.creds` file (a user JWT and its nkey seed, as `nsc` writes them) for a broker
    /// in operator mode.
    #[arg(long, env = "TINY_NATS_CREDS", conflicts_with_all = ["nats_token", "nats_user"])]
    nats_creds: Option<PathBuf>,
}

impl NkeyArgs {
    /// What the arguments say about the module's own credentials, read and checked.
    fn credentials(&self) -> Result<crate::nats::Credentials, crate::nats::LinkError> {
        use crate::nats::Credentials;
        match (&self.nats_nkey_seed, &self.nats_nkey_seed_file, &self.nats_creds) {
            (Some(seed), _, _) => Credentials::nkey("TINY_NATS_NKEY_SEED", seed),
            (None, Some(path), _) => Credentials::nkey_file(path),
            (None, None, Some(path)) => Credentials::creds_file(path),
            (None, None, None) => Ok(Credentials::Url),
        }
    }
}

#[derive(Debug, clap::Args)]
struct HookArgs {
    /// Module name (as given to `run`).
    #[arg(short = 'n', long, default_value = "")]
    name: String,
    /// Module version (as given to `run`).
    #[arg(short = 'v', long, default_value = "")]
    version: String,
    /// Namespace of the module's resources (the Go chart's hook Jobs set RELEASE_NAMESPACE).
    #[arg(long, env = "RELEASE_NAMESPACE", default_value = "tinysystems")]
    namespace: String,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(short = 'k', long)]
    kubeconfig: Option<PathBuf>,
    /// pre-delete: first wait up to this many seconds for the module to stop (its Lease to be free).
    #[arg(long, default_value_t = 0)]
    wait_lease_free: u64,
}

// `run` says more than `send` of the URL (it may be left out) and of the user.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("nats_url", |a| a.help(
        "The NATS broker (`nats://[token@]host:port`): other modules and the platform reach this one \
         over NATS, as a Go module with TINY_NATS_URL. Unset: gRPC only"
    )),
    mut_arg("nats_user", |a| a.help(
        "The module's own NATS user, instead of the shared token (the chart sets it from a \
         Secret): the broker gives it subject permissions of its own; see the README's \
         \"Security\". Any characters; it replaces the URL's user info"
    ))
)]
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
    /// Where to serve other modules' gRPC calls (`:8483`, `127.0.0.1:0`). Default: Go's
    /// `:0` (every address, any port) when `--grpc-advertise-address` says where others
    /// call; else `127.0.0.1:0`, as the address advertised then is this host's loopback.
    #[arg(short = 'g', long, value_parser = crate::listen::parse)]
    grpc_server_bind_address: Option<SocketAddr>,
    /// The address other modules use to reach this one (default: 127.0.0.1 and the bound port).
    #[arg(long, env = "SELF_SERVICE_HOST")]
    grpc_advertise_address: Option<String>,
    /// Where to serve /healthz, /readyz and /metrics (default: the metrics address, else 127.0.0.1, any port).
    #[arg(short = 't', long, value_parser = crate::listen::parse)]
    health_probe_bind_address: Option<SocketAddr>,
    /// Where to serve /metrics when no probe address is given (one server answers both).
    #[arg(short = 'm', long, value_parser = crate::listen::parse)]
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
    #[command(flatten)]
    broker: BrokerArgs,
    /// Whom messages from the wire (NATS or gRPC) to a system port (`_settings`,
    /// `_control`, ...) are taken from: `any` (as the Go SDK), `platform`, or `self` (the
    /// platform and this module's own nodes); others get a FORBIDDEN error. See the
    /// README's "Security" for what the sender's word is worth.
    #[arg(long, env = "TINY_SYSTEM_PORTS_FROM", value_parser = lenient::<crate::config::SystemPortsFrom>, default_value = "any", value_name = "any|platform|self")]
    system_ports_from: crate::config::SystemPortsFrom,
    /// How modules talk over NATS: `core` (request/reply, at most once) or `jetstream` (every hop
    /// stored in Go's streams; durable runs that survive a crash, recorded in the KV `TINY_EXEC`).
    /// Every module on one broker must use the same.
    #[arg(long, env = "TINY_NATS_TRANSPORT", value_parser = lenient::<NatsMode>, default_value = "core", value_name = "core|jetstream")]
    nats_transport: NatsMode,
    /// JetStream: seconds between the leader's passes over stuck and finished runs.
    #[arg(long, env = "TINY_RUN_RECONCILE_INTERVAL", default_value_t = 60)]
    run_reconcile_interval: u64,
    /// JetStream: seconds without a finished step after which a run's pending hops are sent again.
    #[arg(long, env = "TINY_RUN_STALE_AFTER", default_value_t = 360)]
    run_stale_after: u64,
    /// JetStream: times a pending hop is sent again before the run is failed.
    #[arg(long, env = "TINY_RUN_MAX_REDRIVES", default_value_t = 3)]
    run_max_redrives: u32,
    /// JetStream: seconds after its last step a finished run's records are removed.
    #[arg(long, env = "TINY_RUN_GC_AFTER", default_value_t = 86_400)]
    run_gc_after: u64,
    /// JetStream: bytes the stream `module-edges` may hold (0: no limit). A full stream refuses a hop
    /// (code STREAM_FULL) rather than drop stored work. Applied where the broker's stream has no
    /// limit of its own (docs/limits.md).
    #[arg(long, env = "TINY_JETSTREAM_EDGES_MAX_BYTES", default_value_t = JS_LIMITS.edges.max_bytes, value_parser = clap::value_parser!(i64).range(0..))]
    jetstream_edges_max_bytes: i64,
    /// JetStream: messages the stream `module-edges` may hold (0: no limit).
    #[arg(long, env = "TINY_JETSTREAM_EDGES_MAX_MSGS", default_value_t = JS_LIMITS.edges.max_msgs, value_parser = clap::value_parser!(i64).range(0..))]
    jetstream_edges_max_msgs: i64,
    /// JetStream: bytes the stream `module-sysmsgs` may hold (0: no limit); the oldest go first.
    #[arg(long, env = "TINY_JETSTREAM_SYSMSGS_MAX_BYTES", default_value_t = JS_LIMITS.sysmsgs.max_bytes, value_parser = clap::value_parser!(i64).range(0..))]
    jetstream_sysmsgs_max_bytes: i64,
    /// JetStream: messages the stream `module-sysmsgs` may hold (0: no limit); the oldest go first.
    #[arg(long, env = "TINY_JETSTREAM_SYSMSGS_MAX_MSGS", default_value_t = JS_LIMITS.sysmsgs.max_msgs, value_parser = clap::value_parser!(i64).range(0..))]
    jetstream_sysmsgs_max_msgs: i64,
    /// JetStream: bytes the run ledger bucket `TINY_EXEC` may hold (0: no limit); a full bucket
    /// refuses ledger writes.
    #[arg(long, env = "TINY_JETSTREAM_EXEC_MAX_BYTES", default_value_t = JS_LIMITS.exec.max_bytes, value_parser = clap::value_parser!(i64).range(0..))]
    jetstream_exec_max_bytes: i64,
    /// JetStream: bytes of one message in either stream, or of one value in `TINY_EXEC` (0: no limit
    /// but the broker's max_payload).
    #[arg(long, env = "TINY_JETSTREAM_MAX_MSG_SIZE", default_value_t = crate::jetstream::config::MAX_MSG_SIZE, value_parser = clap::value_parser!(i32).range(0..))]
    jetstream_max_msg_size: i32,
    /// Fail a message whose edge expression fails (a missing field, a wrong type) with code
    /// MAPPING. Default, as the Go SDK: the field becomes null (inside a longer string, nothing for a
    /// missing field, else its `{{...}}` text), the hop goes on, and the failure is logged, counted and
    /// shown on the node.
    #[arg(long, env = "TINY_STRICT_EXPRESSIONS")]
    strict_expressions: bool,
    /// How many messages from other modules (NATS, JetStream, gRPC together) the module handles at
    /// once; more wait on the broker or in the client's buffer (docs/limits.md).
    #[arg(long, env = "TINY_MAX_IN_FLIGHT", default_value_t = tiny_sdk::engine::MAX_IN_FLIGHT, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_in_flight: usize,
    /// How many hops one root message may cause in all, across every branch and module it reaches
    /// (docs/limits.md).
    #[arg(long, env = "TINY_HOP_BUDGET", default_value_t = tiny_sdk::engine::HOP_BUDGET, value_parser = clap::value_parser!(u32).range(1..))]
    hop_budget: u32,
    /// Secrets `[[secret:<name>/<key>]]` placeholders may name, beyond those the module declares
    /// (comma-separated; the chart sets it from `rbac.secrets`, which it grants `get` on).
    #[arg(long, env = "TINY_SECRETS", value_delimiter = ',')]
    secrets: Vec<String>,
    /// Seconds a read Secret is trusted; nodes with `[[secret:...]]` placeholders are re-applied this
    /// often, so a rotated Secret reaches the component within it (Go's 60 s).
    #[arg(long, env = "TINY_SECRET_TTL", default_value_t = crate::secrets::DEFAULT_TTL.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    secret_ttl: u64,
}

/// The default JetStream limits, for the flags' defaults.
const JS_LIMITS: crate::jetstream::config::JetStreamLimits = crate::jetstream::config::JetStreamLimits::DEFAULT;

/// The JetStream limits the flags give.
fn jetstream_limits(args: &RunArgs) -> crate::jetstream::config::JetStreamLimits {
    use crate::jetstream::config::{JetStreamLimits, StoreLimits};
    let size = args.jetstream_max_msg_size;
    JetStreamLimits {
        edges: StoreLimits {
            max_bytes: args.jetstream_edges_max_bytes,
            max_msgs: args.jetstream_edges_max_msgs,
            max_msg_size: size,
        },
        sysmsgs: StoreLimits {
            max_bytes: args.jetstream_sysmsgs_max_bytes,
            max_msgs: args.jetstream_sysmsgs_max_msgs,
            max_msg_size: size,
        },
        exec: StoreLimits {
            max_bytes: args.jetstream_exec_max_bytes,
            max_msgs: -1,
            max_msg_size: size,
        },
    }
}

/// One of `T`'s values, in any case; empty (a variable set to `""`) is the default, as a
/// Go module reads an empty variable as unset. Anything else is refused, naming the values.
fn lenient<T: clap::ValueEnum + Default + Clone + Send + Sync + 'static>(s: &str) -> Result<T, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(T::default());
    }
    T::from_str(s, true).map_err(|_| {
        let names: Vec<String> = T::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_owned()))
            .collect();
        format!("`{s}` is not one of: {}", names.join(", "))
    })
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
    Module::new(registry).main()
}

/// A module's components and what they need from Kubernetes.
#[derive(Debug)]
pub struct Module {
    registry: Registry,
    requirements: Requirements,
}

impl Module {
    /// A module of `registry`'s components, needing no more than the runtime.
    pub fn new(registry: Registry) -> Self {
        Self {
            registry,
            requirements: Requirements::none(),
        }
    }

    /// The permissions the components need beyond the runtime's (Go's `SetRequirements`).
    #[must_use]
    pub fn requirements(mut self, requirements: Requirements) -> Self {
        self.requirements = requirements;
        self
    }

    /// Parses the command line and runs the command; a module's `main` returns this.
    pub fn main(self) -> ExitCode {
        let matches = cli_command().get_matches();
        let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
            Ok(cli) => cli,
            Err(e) => e.exit(),
        };
        command(cli.command, cli.log_format, self.registry, &self.requirements)
    }
}

/// The broker's URL, with the token of `TINY_NATS_TOKEN` in it when there is one.
fn nats_url(url: Option<&str>, token: Option<&str>) -> Option<String> {
    match (url, token.filter(|t| !t.is_empty())) {
        (Some(url), Some(token)) => Some(crate::nats::with_token(url, token)),
        (url, _) => url.map(str::to_owned),
    }
}

/// [`nats_url`] for a NATS user of one's own (`TINY_NATS_USER`, `TINY_NATS_PASSWORD`;
/// clap refuses it beside a token).
fn user_nats_url(url: Option<&str>, token: Option<&str>, user: Option<&str>, password: Option<&str>) -> Option<String> {
    match (url, user.filter(|u| !u.is_empty())) {
        (Some(url), Some(user)) => Some(crate::nats::with_user(url, user, password.unwrap_or_default())),
        (url, _) => nats_url(url, token),
    }
}

/// The command line, with no variable's value in `--help`: `TINY_NATS_URL` carries the
/// broker's token, and a value is never worth showing next to its name. Every argument,
/// so that a flag added later cannot print a credential either.
fn cli_command() -> clap::Command {
    fn hide(cmd: clap::Command) -> clap::Command {
        let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_owned()).collect();
        let mut cmd = cmd.mut_args(|a| a.hide_env_values(true));
        for name in names {
            cmd = cmd.mut_subcommand(name, hide);
        }
        cmd
    }
    hide(<Cli as clap::CommandFactory>::command())
}

fn command(command: Command, log_format: LogFormat, registry: Registry, requirements: &Requirements) -> ExitCode {
    if !matches!(command, Command::Run(_)) {
        // `run` installs logging inside its runtime, with the trace exporter.
        if let Err(e) = telemetry::init(log_format, None) {
            eprintln!("logging: {e}");
        }
    }
    match command {
        Command::Rbac => match crate::rbac::values_yaml(requirements) {
            Ok(y) => {
                print!("{y}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::PreInstall(args) => block_on(async move {
            let client = client(args.kubeconfig.as_ref()).await?;
            tracing::info!(namespace = %args.namespace, "pre-install: checking the namespace");
            crate::hooks::pre_install(client, &args.namespace).await?;
            tracing::info!(namespace = %args.namespace, "pre-install: namespace OK");
            Ok::<(), crate::Error>(())
        }),
        Command::PreDelete(args) => block_on(async move {
            if args.name.is_empty() {
                // As Go: without a name there is nothing to clean; never block an uninstall.
                tracing::error!("pre-delete: no --name given, nothing to clean up");
                return Ok::<(), crate::Error>(());
            }
            let client = client(args.kubeconfig.as_ref()).await?;
            let config = ModuleConfig::new(&args.name, &args.version, &args.namespace, "pre-delete");
            let wait = Duration::from_secs(args.wait_lease_free);
            let cleaned = crate::hooks::pre_delete(client, &config, wait).await?;
            tracing::info!(module = %config.name, namespace = %config.namespace, ?cleaned, "pre-delete: cleaned up");
            Ok(())
        }),
        Command::Components(args) if args.names => print_names(&registry, args.name.as_deref()),
        Command::Components(_) => print_components(&registry),
        Command::Send(args) => block_on(send(args)),
        Command::Inspect(args) => block_on(inspect(args)),
        Command::Render(args) => render(&args),
        Command::Validate(args) => validate(&args, &registry),
        Command::CheckUpgrade(args) => check_upgrade(&args, &registry),
        Command::CaptureRun(args) => block_on(capture_run(args)),
        Command::Redrive(args) => block_on(redrive(args)),
        Command::Crds => match crate::crd::yaml() {
            Ok(y) => {
                print!("{y}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Run(args) => block_on(async move {
            let service = telemetry::Service {
                name: ModuleConfig::new(&args.name, &args.version, &args.namespace, &args.identity).name,
                version: args.version.clone(),
                instance: args.identity.clone(),
            };
            let telemetry = match telemetry::init(log_format, Some(&service)) {
                Ok(t) => t,
                Err(e) => {
                    // Without an exporter the module still runs: say so once.
                    eprintln!("telemetry: {e}; running without trace export");
                    let _ = telemetry::init(log_format, None);
                    telemetry::Telemetry::default()
                }
            };
            let result = run(*args, registry, requirements).await;
            telemetry.shutdown();
            if let Err(e) = &result {
                termination_message(e);
            }
            result
        }),
    }
}

fn block_on<E: std::fmt::Display>(f: impl Future<Output = Result<(), E>>) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    match rt.block_on(f) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

/// Where a kubelet reads why a container ended (the container's default
/// `terminationMessagePath`); it shows the text in the Pod's status.
const TERMINATION_LOG: &str = "/dev/termination-log";

/// Puts why the module stopped into the Pod's status: written only where a kubelet
/// made the file, so a module run by hand never writes under `/dev`.
fn termination_message(e: &crate::Error) {
    let path = std::path::Path::new(TERMINATION_LOG);
    if path.is_file() {
        // The kubelet keeps at most 4096 bytes.
        let text: String = format!("error: {e}").chars().take(4000).collect();
        if let Err(w) = std::fs::write(path, text) {
            tracing::debug!(error = %w, "termination message not written");
        }
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::FAILURE
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

/// `components --names`: each component beside the node name a flow gives its nodes.
fn print_names(registry: &Registry, module: Option<&str>) -> ExitCode {
    let module = module.map_or_else(|| "{module}".to_owned(), crate::config::sanitize);
    for name in registry.names() {
        let segment = tiny_sdk::flow::node_name_segment(name);
        println!("{name}\t{{flow}}.{module}.{segment}-{{suffix}}");
    }
    ExitCode::SUCCESS
}

async fn client(path: Option<&PathBuf>) -> Result<kube::Client, crate::Error> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| crate::Error::Config {
        path: path.cloned(),
        source,
    };
    let config = match path {
        Some(p) => {
            let kc = Kubeconfig::read_from(p).map_err(|e| failed(e.into()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| failed(e.into()))?
        }
        None => kube::Config::infer().await.map_err(|e| failed(e.into()))?,
    };
    kube::Client::try_from(config).map_err(|e| failed(e.into()))
}

async fn run(args: RunArgs, registry: Registry, requirements: &Requirements) -> Result<(), crate::Error> {
    let client = client(args.kubeconfig.as_ref()).await?;
    let mut config = ModuleConfig::new(&args.name, &args.version, &args.namespace, &args.identity);
    if let Some(selector) = args.pod_selector.clone() {
        config.pod_selector = selector;
    }
    config.ingress_class.clone_from(&args.ingress_class);
    config.hostname_suffix.clone_from(&args.ingress_hostname_suffix);
    config.strict_expressions = args.strict_expressions;
    config.max_in_flight = args.max_in_flight;
    config.hop_budget = args.hop_budget;
    config.secrets = requirements.secrets.clone();
    for name in args.secrets.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        if !config.secrets.iter().any(|d| d == name) {
            config.secrets.push(name.to_owned());
        }
    }
    config.secret_ttl = Duration::from_secs(args.secret_ttl);
    // Before any receiver listens: each reads it per message.
    args.system_ports_from.install();
    let grpc_bind = grpc_bind_address(&args);
    let grpc = crate::grpc::Grpc::bind(grpc_bind)
        .await
        .map_err(|source| crate::Error::Bind {
            what: "gRPC",
            addr: grpc_bind,
            source,
        })?;
    config.grpc_addr = Some(
        args.grpc_advertise_address
            .clone()
            .unwrap_or_else(|| format!("127.0.0.1:{}", grpc.port())),
    );
    let grpc_addr = config.grpc_addr.clone().unwrap_or_default();
    let nats_url = args.broker.url();
    // The transport layer chooses them: gRPC always, a broker beside it when there is one.
    let transports = Transports::choose(
        &config.name,
        &config.identity,
        crate::wiring::Settings {
            grpc,
            grpc_addr: grpc_addr.clone(),
            nats_url,
            credentials: args.broker.nkey.credentials(),
            nats_mode: args.nats_transport,
            jetstream_limits: jetstream_limits(&args),
            reconcile: tiny_sdk::run::ReconcileSettings {
                interval: Duration::from_secs(args.run_reconcile_interval.max(1)),
                stale: Duration::from_secs(args.run_stale_after),
                gc_after: Duration::from_secs(args.run_gc_after),
                max_redrives: args.run_max_redrives,
            },
        },
    )
    .await?;
    tracing::info!(module = %config.name, version = %config.version, grpc = %grpc_addr, transport = transports.current(), "starting");
    let runtime = Runtime::start(
        client,
        Options {
            config,
            registry,
            lease_duration: Some(Duration::from_secs(args.lease_seconds)),
            probe_addr: Some(
                args.health_probe_bind_address
                    .or(args.metrics_bind_address)
                    .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0))),
            ),
            carrier: Some(transports.carrier()),
            runs: transports.runs(),
            answers: transports.answers(),
        },
    )
    .await?;
    // The broker's subscriptions wait in the client until the broker answers.
    let mut serving = listen_all(transports.listeners(), runtime.engine(), &runtime.leadership()).await?;
    if let Some(addr) = runtime.probe_addr {
        tracing::info!(%addr, "probes and metrics");
        println!("probe-addr {addr}");
    }
    let served = serving
        .until(async {
            shutdown_signal().await;
            tracing::info!("shutting down");
        })
        .await;
    // Stopped on a listener's failure too: the consumers and the reconciler end, and
    // the lease is released, so the next replica leads at once.
    serving.stop().await;
    runtime.stop().await;
    served
}

/// Where `run` serves gRPC: the flag; else Go's `:0` when an advertised address sends
/// other modules here; else loopback, where the address advertised by default points
/// (a module on NATS that nothing calls by gRPC opens no port to the network).
fn grpc_bind_address(args: &RunArgs) -> SocketAddr {
    args.grpc_server_bind_address.unwrap_or_else(|| {
        let ip = if args.grpc_advertise_address.is_some() {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv4Addr::LOCALHOST.into()
        };
        SocketAddr::new(ip, 0)
    })
}

/// All of standard input (what `-` stands for in `render` and `send`).
fn stdin() -> std::io::Result<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
    Ok(text)
}

/// `render`: a flow file as the API server takes it, or back.
fn render(args: &RenderArgs) -> ExitCode {
    let text = if args.file.as_os_str() == "-" {
        stdin()
    } else {
        std::fs::read_to_string(&args.file)
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => return fail(format!("reading {}: {e}", args.file.display())),
    };
    let out = if args.inline {
        crate::crd::inline(&text)
    } else {
        crate::crd::render(&text)
    };
    match out {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("{}: {e}", args.file.display())),
    }
}

/// Exit status of `validate` when the flow has problems.
const PROBLEMS_FOUND: u8 = 1;
/// Exit status of `validate` when a file cannot be read or parsed.
const UNREADABLE: u8 = 2;

/// `validate`: a flow's mistakes, one line each, before it is applied.
fn validate(args: &ValidateArgs, registry: &Registry) -> ExitCode {
    let unreadable = |what: String| {
        eprintln!("error: {what}");
        ExitCode::from(UNREADABLE)
    };
    let mut others = Vec::new();
    for path in &args.module_yaml {
        let modules = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| crate::crd::module_catalog(&text).map_err(|e| e.to_string()));
        match modules {
            Ok(modules) => others.extend(modules),
            Err(e) => return unreadable(format!("{}: {e}", path.display())),
        }
    }
    if let Some(path) = &args.kubeconfig {
        match cluster_modules(path, &args.namespace) {
            Ok(modules) => others.extend(modules),
            Err(e) => return unreadable(format!("the TinyModules of namespace `{}`: {e}", args.namespace)),
        }
    }
    let mut catalog = tiny_sdk::flow::Catalog::from_registry(registry);
    let own = args.name.as_deref().map(crate::config::sanitize);
    for (name, components) in others {
        if own
            .as_ref()
            .is_some_and(|own| tiny_sdk::flow::module_matches(&name, own))
        {
            continue;
        }
        catalog.add_module(name, components);
    }
    let text = if args.file.as_os_str() == "-" {
        stdin()
    } else {
        std::fs::read_to_string(&args.file)
    };
    // Read as `render` hands it to the API server, so that every form `render` takes
    // (a bare `"{{$}}"` mapping too) is checked as it will be applied.
    let read = text
        .map_err(|e| e.to_string())
        .and_then(|t| crate::crd::render(&t).map_err(|e| e.to_string()))
        .and_then(|t| {
            let flow = tiny_sdk::flow::Flow::from_yaml(&t).map_err(|e| e.to_string())?;
            Ok((flow, definitions(&t)?))
        });
    let (flow, definitions) = match read {
        Ok(read) => read,
        Err(e) => return unreadable(format!("{}: {e}", args.file.display())),
    };
    // The file's TinyComponents: each checked as this module installs it, and nodes
    // of those it serves checked as nodes of a component of its own.
    let (served, refused) = match block_on_value(check_definitions(registry, definitions)) {
        Ok(checked) => checked,
        Err(e) => return unreadable(format!("{}: {e}", args.file.display())),
    };
    catalog.add_local(served);
    for line in &refused {
        println!("{line}");
    }
    let problems = tiny_sdk::flow::validate(&flow, &catalog);
    for problem in &problems {
        println!("{problem}");
    }
    let checked = format!("{} nodes, {} signals", flow.nodes.len(), flow.signals.len());
    if problems.is_empty() && refused.is_empty() {
        eprintln!("{}: no problems ({checked})", args.file.display());
        ExitCode::SUCCESS
    } else {
        let n = problems.len() + refused.len();
        let noun = if n == 1 { "problem" } else { "problems" };
        eprintln!("{}: {n} {noun} ({checked})", args.file.display());
        ExitCode::from(PROBLEMS_FOUND)
    }
}

/// The TinyComponents of a rendered flow file.
fn definitions(yaml: &str) -> Result<Vec<crate::crd::TinyComponent>, String> {
    use serde::Deserialize as _;
    let mut found = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let value = serde_yaml::Value::deserialize(doc).map_err(|e| format!("YAML document {}: {e}", i + 1))?;
        if value.get("kind").and_then(serde_yaml::Value::as_str) == Some("TinyComponent") {
            let def = serde_yaml::from_value(value).map_err(|e| format!("TinyComponent (document {}): {e}", i + 1))?;
            found.push(def);
        }
    }
    Ok(found)
}

/// Installs each definition in an engine of `registry`, as the module's controller
/// does when one is applied (schemas parse, the runtime is served here, the script
/// compiles, no compiled component holds the name): the catalogue entries of those
/// served, and one line for each refused.
async fn check_definitions(
    registry: &Registry,
    definitions: Vec<crate::crd::TinyComponent>,
) -> Result<(Vec<tiny_sdk::flow::ComponentSchema>, Vec<String>), String> {
    use serde_json::json;
    use tiny_sdk::{
        engine::{DefineError, Definition, Engine, REQUEST_PORT, RESPONSE_PORT},
        flow::{ComponentSchema, PortSchema},
    };
    let engine = Engine::builder().registry(registry.clone()).build();
    let (mut served, mut refused) = (Vec::new(), Vec::new());
    for def in definitions {
        let name = kube::ResourceExt::name_any(&def);
        let spec = &def.spec;
        let definition = DefineError::parse_schema("input", &spec.input).and_then(|input| {
            Ok(Definition {
                name: spec.component.clone(),
                description: spec.description.clone(),
                info: spec.info.clone(),
                script: spec.script.clone(),
                input,
                output: DefineError::parse_schema("output", &spec.output)?,
                enable_error_port: spec.enable_error_port,
            })
        });
        let installed = match definition {
            Ok(d) => engine.install(spec.runtime(), d.clone()).await.map(|()| d),
            Err(e) => Err(e),
        };
        let d = match installed {
            Ok(d) => d,
            Err(e) => {
                refused.push(format!(
                    "TinyComponent `{name}` (component `{}`, runtime `{}`): {e} [definition]",
                    spec.component,
                    spec.runtime()
                ));
                continue;
            }
        };
        // The ports every defined component has, with the definition's schemas.
        let mut ports = vec![
            PortSchema::new(
                REQUEST_PORT,
                false,
                json!({"type": "object", "properties": {"context": {}, "inputData": d.input}}),
            ),
            PortSchema::new(
                RESPONSE_PORT,
                true,
                json!({"type": "object", "properties": {"context": {}, "outputData": d.output}}),
            ),
        ];
        if d.enable_error_port {
            ports.push(PortSchema::new(
                tiny_sdk::contract::port::ERROR,
                true,
                tiny_sdk::schema::port_schema::<tiny_sdk::error::ErrorMessage>(),
            ));
        }
        served.push(ComponentSchema { name: d.name, ports });
    }
    Ok((served, refused))
}

/// Exit status of `check-upgrade` when the upgrade breaks a deployed flow.
const BREAKING: u8 = 1;
/// Exit status of `check-upgrade` when the check could not be made.
const NOT_CHECKED: u8 = 2;

/// `check-upgrade`: what this build breaks of the flows deployed.
fn check_upgrade(args: &CheckUpgradeArgs, registry: &Registry) -> ExitCode {
    let not_checked = |what: String| {
        eprintln!("error: {what}");
        ExitCode::from(NOT_CHECKED)
    };
    let module = ModuleConfig::new(&args.name, "", &args.namespace, "").name;
    let local = || -> Result<_, crate::upgrade::CheckError> {
        let old = args.from.as_deref().map(crate::upgrade::snapshot).transpose()?;
        let nodes = (!args.flows.is_empty())
            .then(|| crate::upgrade::flow_files(&args.flows))
            .transpose()?;
        Ok((old, nodes))
    };
    let (old, nodes) = match local() {
        Ok(found) => found,
        Err(e) => return not_checked(e.to_string()),
    };
    let deployed = if old.is_none() || nodes.is_none() {
        let read = block_on_value(async {
            let client = client(args.kubeconfig.as_ref()).await.map_err(|e| e.to_string())?;
            crate::upgrade::from_cluster(client, &args.namespace, &module, old.is_none(), nodes.is_none())
                .await
                .map_err(|e| e.to_string())
        });
        match read {
            Ok(d) => d,
            Err(e) => return not_checked(e),
        }
    } else {
        crate::upgrade::Deployed {
            old: None,
            nodes: Vec::new(),
            undecodable: Vec::new(),
        }
    };
    for why in &deployed.undecodable {
        eprintln!("not checked: {why}");
    }
    let Some(old) = old.or(deployed.old) else {
        // Nothing published: a first install, or a module that never ran.
        eprintln!(
            "module `{module}`: namespace `{}` has no TinyModule `{module}`: nothing deployed to check",
            args.namespace
        );
        return ExitCode::SUCCESS;
    };
    let nodes = nodes.unwrap_or(deployed.nodes);
    let report = crate::upgrade::report(&module, &old, &crate::upgrade::this_build(registry), &nodes);
    match args.output {
        OutputFormat::Text => {
            for line in report.lines() {
                println!("{line}");
            }
        }
        OutputFormat::Json => match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(e) => return not_checked(e.to_string()),
        },
    }
    eprintln!("{}", report.summary());
    if report.verdict == tiny_sdk::flow::Verdict::Breaking && args.allow_breaking {
        eprintln!("--allow-breaking: going on");
        ExitCode::SUCCESS
    } else if report.verdict == tiny_sdk::flow::Verdict::Breaking {
        ExitCode::from(BREAKING)
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs `f` to its value on a runtime of its own.
fn block_on_value<T>(f: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?
        .block_on(f)
}

/// The TinyModules of `namespace` in the cluster of the kubeconfig at `path`, as
/// [`crate::crd::module_catalog`] gives them.
fn cluster_modules(
    path: &std::path::Path,
    namespace: &str,
) -> Result<Vec<(String, Vec<tiny_sdk::flow::ComponentSchema>)>, String> {
    let path = path.to_path_buf();
    let namespace = namespace.to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let client = client(Some(&path)).await.map_err(|e| e.to_string())?;
        let api: kube::Api<crate::crd::TinyModule> = kube::Api::namespaced(client, &namespace);
        let list = api
            .list(&kube::api::ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list
            .items
            .into_iter()
            .map(|m| {
                let name = m.metadata.name.clone().unwrap_or_default();
                (name, m.status.map(|s| s.component_schemas()).unwrap_or_default())
            })
            .collect())
    })
}

/// `send`: one message into a node over NATS.
async fn send(args: SendArgs) -> Result<(), String> {
    let data = if args.data == "-" {
        stdin().map_err(|e| format!("reading standard input: {e}"))?
    } else {
        args.data
    };
    serde_json::from_str::<serde::de::IgnoredAny>(&data).map_err(|e| format!("the message is not JSON: {e}"))?;
    let mut opts = crate::nats::SendOptions::default();
    if args.wait {
        opts.wait = Some(Duration::from_secs(args.timeout));
    }
    // A target that cannot be sent to is said before connecting.
    crate::nats::envelope(&args.node, &args.port, &opts).map_err(|e| e.to_string())?;
    let link = args.broker.connect().await?;
    let reply = crate::nats::send(link.client(), &args.node, &args.port, data.into_bytes(), &opts)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(msg) = reply.as_ref().and_then(tiny_sdk::Reply::as_msg) {
        let bytes = msg.to_json_bytes().map_err(|e| e.to_string())?;
        println!("{}", String::from_utf8_lossy(&bytes));
    } else if args.wait {
        // Exit status 0 with nothing printed reads as "lost": say what an empty reply means.
        eprintln!(
            "delivered; no reply: `{}` handled the message and answered nothing. A node answers what its \
             handler returns, and `emit` returns the reply of the edges it sends on: an output without an \
             edge answers nothing, and so does a handler that returns `()` or `Ok(())`. See which output \
             fired with `inspect` on the nodes it leads to (their `_control`), or in the module's log.",
            args.node
        );
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
struct CaptureRunArgs {
    /// The run's id (what `x-run-id`, `run_status` and the ledger's keys name).
    run_id: String,
    /// The file to write (`tests/runs/<name>.json`); standard output without it.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    broker: LedgerArgs,
}

#[derive(Debug, clap::Args)]
struct RedriveArgs {
    /// The failed run's id.
    run_id: String,
    /// The step to run again, `<node>:<port>` (its latest step there); the run's first failed step without it.
    #[arg(long, value_name = "NODE:PORT")]
    at: Option<String>,
    #[command(flatten)]
    broker: LedgerArgs,
}

/// The broker whose `TINY_EXEC` ledger `capture-run` and `redrive` read.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("nats_url", |a| a.required(true)),
    mut_arg("nats_token", |a| a.help("The broker's token, when it is not in the URL (see `send`)"))
)]
struct LedgerArgs {
    #[command(flatten)]
    broker: BrokerArgs,
}

impl LedgerArgs {
    /// The ledger on the broker, bound as it is: creates and changes nothing.
    async fn open(&self, client: &str) -> Result<std::sync::Arc<crate::jetstream::JetStream>, String> {
        let link = self.broker.connect().await?;
        let js = crate::jetstream::JetStream::new(link, client, client);
        js.open_ledger().await.map_err(|e| e.to_string())?;
        Ok(js)
    }
}

/// `capture-run`: a run's ledger records as a capture file ([`tiny_sdk::run::capture_run`]).
async fn capture_run(args: CaptureRunArgs) -> Result<(), String> {
    let js = args.broker.open("capture-run").await?;
    let run = tiny_sdk::run::capture_run(&*js, &args.run_id)
        .await
        .map_err(|e| e.to_string())?;
    let text = run.to_json().map_err(|e| e.to_string())? + "\n";
    match &args.output {
        Some(path) => std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?,
        None => print!("{text}"),
    }
    for note in &run.notes {
        eprintln!("note: {note}");
    }
    eprintln!("run {}: {} step(s) captured", run.run_id, run.steps.len());
    Ok(())
}

/// `redrive`: a failed run's step run again ([`crate::jetstream::redrive`]).
async fn redrive(args: RedriveArgs) -> Result<(), String> {
    let js = args.broker.open("redrive").await?;
    let plan = crate::jetstream::redrive(&js, &args.run_id, args.at.as_deref())
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "run {}: step {} re-driven to {} as attempt {}",
        args.run_id, plan.target, plan.hop.to, plan.attempt_key
    );
    Ok(())
}

/// `inspect`: a node of the cluster, its base64 decoded, as YAML.
async fn inspect(args: InspectArgs) -> Result<(), String> {
    let client = client(args.kubeconfig.as_ref()).await.map_err(|e| e.to_string())?;
    let api: kube::Api<crate::crd::TinyNode> = kube::Api::namespaced(client, &args.namespace);
    let node = api
        .get_opt(&args.node)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("namespace `{}` has no TinyNode `{}`", args.namespace, args.node))?;
    let yaml = serde_yaml::to_string(&inspect_view(&node)).map_err(|e| e.to_string())?;
    print!("{yaml}");
    Ok(())
}

/// What `inspect` prints of `node`: status, conditions, edges, and each port's
/// configuration as JSON (a value that is not JSON is shown as its base64).
fn inspect_view(node: &crate::crd::TinyNode) -> serde_json::Value {
    use serde_json::{Map, Value, json};
    let status = node.status.clone().unwrap_or_default();
    let conditions: Map<String, Value> = status
        .conditions
        .iter()
        .map(|c| {
            let said = match (c.reason.is_empty(), c.message.is_empty()) {
                (_, false) => format!("{} ({}): {}", c.status, c.reason, c.message),
                (false, true) => format!("{} ({})", c.status, c.reason),
                (true, true) => c.status.clone(),
            };
            (c.type_.clone(), Value::String(said))
        })
        .collect();
    let mut edges: Map<String, Value> = Map::new();
    for e in &node.spec.edges {
        if let Value::Array(to) = edges.entry(e.port.clone()).or_insert_with(|| json!([])) {
            to.push(Value::String(e.to.clone()));
        }
    }
    let decoded = |c: &Option<crate::crd::EncodedJson>| match c {
        None => Value::Null,
        Some(c) => c.decode().unwrap_or_else(|_| Value::String(c.as_base64().to_owned())),
    };
    let (mut inputs, mut outputs) = (Map::new(), Map::new());
    for p in &status.ports {
        let side = if p.source { &mut outputs } else { &mut inputs };
        side.insert(p.name.clone(), decoded(&p.configuration));
    }
    let reported = if status.status.is_empty() {
        "(not reported yet: is the module running?)"
    } else {
        status.status.as_str()
    };
    json!({
        "node": node.metadata.name.clone().unwrap_or_default(),
        "component": node.spec.component,
        "module": format!("{} {}", status.module.name, status.module.version).trim(),
        "status": reported,
        "error": status.error,
        "conditions": conditions,
        "edges": edges,
        "inputs": inputs,
        "outputs": outputs,
    })
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_module_says_who_it_is_one_way_and_takes_system_ports_as_told() {
        let run = |extra: &[&str]| {
            let mut argv = vec!["m", "run", "--name=hello", "--version=0.1.0"];
            argv.extend_from_slice(extra);
            parse_without_env(argv)
        };
        for two in [
            &["--nats-nkey-seed=SU", "--nats-token=t"][..],
            &["--nats-nkey-seed=SU", "--nats-creds=/c"],
            &["--nats-nkey-seed=SU", "--nats-nkey-seed-file=/s"],
            &["--nats-creds=/c", "--nats-user=u", "--nats-password=p"],
            &["--nats-nkey-seed-file=/s", "--nats-token=t"],
        ] {
            let kind = run(two).err().map(|e| e.kind());
            assert_eq!(kind, Some(clap::error::ErrorKind::ArgumentConflict), "{two:?}");
        }
        let from = |extra: &[&str]| match run(extra).unwrap().command {
            Command::Run(args) => args.system_ports_from,
            _ => panic!("not run"),
        };
        use crate::config::SystemPortsFrom;
        assert_eq!(from(&[]), SystemPortsFrom::Any);
        assert_eq!(from(&["--system-ports-from=Platform"]), SystemPortsFrom::Platform);
        assert_eq!(from(&["--system-ports-from=self"]), SystemPortsFrom::PlatformOrSelf);
        let e = run(&["--system-ports-from=modules"]).err().unwrap().to_string();
        assert!(e.contains("any, platform, self"), "{e}");
        // No credential's value in `--help`, whichever variable holds it.
        let cmd = cli_command();
        for sub in ["run", "send", "capture-run", "redrive"] {
            let sub = cmd.find_subcommand(sub).unwrap();
            for id in ["nats_nkey_seed", "nats_nkey_seed_file", "nats_creds"] {
                let arg = sub.get_arguments().find(|a| a.get_id() == id).unwrap();
                assert!(arg.is_hide_env_values_set(), "{id}");
            }
        }
    }

    /// Parses `argv` as the CLI would, blind to the environment: a developer's
    /// exported `TINY_NATS_URL` (the README's `make up` says to), `SELF_SERVICE_HOST`
    /// or `TINY_SYSTEM_PORTS_FROM` must not decide a test. Every parse test uses it.
    fn parse_without_env(argv: Vec<&str>) -> Result<Cli, clap::Error> {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let blind = |a: clap::Arg| a.env(None::<&'static str>);
        let command = Cli::command().mut_args(blind).mut_subcommands(|s| s.mut_args(blind));
        Cli::from_arg_matches(&command.try_get_matches_from(argv)?)
    }

    #[test]
    fn every_command_that_reaches_the_broker_takes_the_same_flags() {
        let parse = |sub: &str, extra: &[&str]| {
            let mut argv = match sub {
                "run" => vec!["m", "run", "--name=hello", "--version=0.1.0"],
                "send" => vec!["m", "send", "f.m.c-1", "in", "{}"],
                _ => vec!["m", sub, "run-1"],
            };
            argv.extend_from_slice(extra);
            parse_without_env(argv).map(|cli| match cli.command {
                Command::Run(args) => args.broker,
                Command::Send(args) => args.broker,
                Command::CaptureRun(args) => args.broker.broker,
                Command::Redrive(args) => args.broker.broker,
                _ => panic!("not a broker's command"),
            })
        };
        let kind = |r: Result<BrokerArgs, clap::Error>| r.err().map(|e| e.kind());
        for sub in ["run", "send", "capture-run", "redrive"] {
            let broker = parse(sub, &["--nats-url=nats://h:4222", "--nats-token=t"]).unwrap();
            assert_eq!(broker.url().as_deref(), Some("nats://t@h:4222"), "{sub}");
            let broker = parse(
                sub,
                &[
                    "--nats-url=nats://h:4222",
                    "--nats-user=u",
                    "--nats-password=p",
                    "--nats-creds=/c",
                ],
            );
            assert_eq!(kind(broker), Some(clap::error::ErrorKind::ArgumentConflict), "{sub}");
            let broker = parse(sub, &["--nats-url=nats://h:4222", "--nats-user=u"]);
            assert_eq!(
                kind(broker),
                Some(clap::error::ErrorKind::MissingRequiredArgument),
                "{sub}"
            );
            // Only `run` goes without a broker (gRPC only); the others need one.
            let without = parse(sub, &[]);
            if sub == "run" {
                assert_eq!(without.unwrap().url(), None);
            } else {
                assert_eq!(
                    kind(without),
                    Some(clap::error::ErrorKind::MissingRequiredArgument),
                    "{sub}"
                );
            }
        }
    }

    #[test]
    fn grpc_listens_on_every_address_only_where_others_are_sent() {
        let run = |extra: &[&str]| {
            let mut argv = vec!["m", "run", "--name=hello", "--version=0.1.0"];
            argv.extend_from_slice(extra);
            let Command::Run(args) = parse_without_env(argv).unwrap().command else {
                panic!("not run")
            };
            grpc_bind_address(&args).to_string()
        };
        // Issue 47: the default was every address, for a module nothing called.
        assert_eq!(run(&[]), "127.0.0.1:0");
        assert_eq!(run(&["--grpc-advertise-address=hello:8483"]), "[::]:0");
        assert_eq!(run(&["--grpc-server-bind-address=:8483"]), "[::]:8483");
    }

    #[test]
    fn the_go_operator_charts_arguments_parse() {
        let cli = parse_without_env(vec![
            "manager",
            "run",
            "--health-probe-bind-address=:8081",
            "--metrics-bind-address=127.0.0.1:8080",
            "--grpc-server-bind-address=:8483",
            "--name=hello",
            "--version=0.1.0",
            "--namespace=tinysystems",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(
            args.health_probe_bind_address.map(|a| a.to_string()).as_deref(),
            Some("[::]:8081")
        );
        assert_eq!(grpc_bind_address(&args).to_string(), "[::]:8483");
        assert_eq!(
            args.metrics_bind_address.map(|a| a.to_string()).as_deref(),
            Some("127.0.0.1:8080")
        );
        for hook in ["pre-install", "pre-delete"] {
            assert!(parse_without_env(vec!["manager", hook]).is_ok(), "{hook}");
        }
    }

    #[test]
    fn a_flag_given_twice_takes_its_last_value_as_cobra_does() {
        // The chart's own flags, then the same flag from `extraArgs`.
        let cli = parse_without_env(vec![
            "manager",
            "run",
            "--name=hello",
            "--version=0.1.0",
            "--lease-seconds=15",
            "--secrets=a",
            "--lease-seconds=30",
            "--secrets=b",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.lease_seconds, 30);
        // A list still gathers every occurrence.
        assert_eq!(args.secrets, ["a", "b"]);
    }

    #[test]
    fn choices_take_any_case_and_an_empty_value_is_the_default() {
        assert_eq!(lenient::<NatsMode>("JetStream"), Ok(NatsMode::JetStream));
        assert_eq!(lenient::<NatsMode>(""), Ok(NatsMode::Core));
        assert_eq!(lenient::<LogFormat>(" JSON "), Ok(LogFormat::Json));
        assert_eq!(
            lenient::<NatsMode>("jetstrem"),
            Err("`jetstrem` is not one of: core, jetstream".to_owned())
        );
        let cli = parse_without_env(vec![
            "manager",
            "run",
            "--name=hello",
            "--version=1.0.0",
            "--nats-transport=",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not run")
        };
        assert_eq!(args.nats_transport, NatsMode::Core);
    }
}

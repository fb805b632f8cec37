//! The hello component of the TinySystems README, in tiny: a name comes in, a
//! greeting goes out, and a failure goes to the error port instead of failing the flow
//! when the settings switch that port on (`enableErrorPort`, as in the Go modules).

use tiny_sdk::prelude::*;

/// Settings of a hello node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct HelloSettings {
    /// Put before the name.
    #[tiny(title = "Greeting word")]
    pub greeting_word: String,
    /// Send failures to the `error` port instead of failing the message.
    #[tiny(title = "Enable error port")]
    pub enable_error_port: bool,
}

impl Default for HelloSettings {
    fn default() -> Self {
        Self {
            greeting_word: "Hello".into(),
            enable_error_port: false,
        }
    }
}

/// What arrives on `input`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct HelloIn {
    /// Anything the sender wants to get back with the greeting.
    #[tiny(configurable)]
    #[serde(default)]
    pub context: serde_json::Value,
    /// Who to greet.
    #[tiny(title = "Name")]
    pub name: String,
}

/// What leaves on `greeting`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct Greeting {
    /// The context that came with the name.
    #[tiny(shared)]
    pub context: serde_json::Value,
    /// The greeting.
    pub greeting: String,
}

/// Greets a person by name.
///
/// An empty name is an error. With `enableErrorPort` on it goes to the `error` port
/// with the input's context; with it off (the default) it fails the message.
#[derive(Debug, Component, Default)]
#[component(name = "hello", tags("example", "greeting"), settings = HelloSettings)]
pub struct Hello {
    /// The name to greet.
    #[port(position = Left)]
    input: Input<HelloIn>,
    /// The greeting.
    #[port(position = Right)]
    greeting: Output<Greeting>,
    /// Names that could not be greeted (present while `enableErrorPort` is on).
    #[port(position = Bottom, catch)]
    error: Output<ErrorMessage>,
}

#[handlers]
impl Hello {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: HelloIn) -> Result<Reply> {
        let name = msg.name.trim();
        if name.is_empty() {
            return Err(Error::permanent("name is empty").with_code("EMPTY_NAME"));
        }
        let word = &ctx.settings().greeting_word;
        let greeting = Greeting {
            context: msg.context,
            greeting: format!("{word}, {name}!"),
        };
        self.greeting.emit(ctx, greeting).await
    }
}

/// Text in, text out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct Text {
    /// Anything to carry along.
    #[tiny(configurable)]
    #[serde(default)]
    pub context: serde_json::Value,
    /// The text.
    #[tiny(title = "Text", format = "textarea")]
    pub text: String,
}

/// Upper-cases text.
#[derive(Debug, Component, Default)]
#[component(name = "shout", tags("example", "text"))]
pub struct Shout {
    #[port(label = "In")]
    input: Input<Text>,
    #[port(label = "Out")]
    out: Output<Text>,
}

#[handlers]
impl Shout {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Text) -> Result<Reply> {
        self.out
            .emit(
                ctx,
                Text {
                    text: msg.text.to_uppercase(),
                    ..msg
                },
            )
            .await
    }
}

/// Answers the chain with what it receives: the end of a request/response flow, like
/// an HTTP server's `response` port.
#[derive(Debug, Component, Default)]
#[component(name = "respond", tags("example"))]
pub struct Respond {
    #[port(label = "Response")]
    response: Input<serde_json::Value>,
}

#[handlers]
impl Respond {
    async fn on_response(&self, _ctx: &Ctx<Self>, msg: serde_json::Value) -> Reply {
        Reply::value(msg)
    }
}

/// What arrives on a delay's `input`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct DelayIn {
    /// Passed on unchanged.
    #[tiny(configurable)]
    #[serde(default)]
    pub context: serde_json::Value,
    /// How long to wait, in milliseconds.
    #[tiny(configurable, title = "Delay (ms)")]
    #[serde(default)]
    pub delay: u64,
}

/// What leaves a delay.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct Delayed {
    /// The context that came in.
    #[tiny(shared)]
    pub context: serde_json::Value,
}

/// Waits, then passes the context on (the Go common module's `delay`): a message that
/// takes time, for flows that have something in flight.
#[derive(Debug, Component, Default)]
#[component(name = "delay", tags("example", "time"))]
pub struct Delay {
    #[port(position = Left)]
    input: Input<DelayIn>,
    #[port(position = Right)]
    out: Output<Delayed>,
}

#[handlers]
impl Delay {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: DelayIn) -> Result<Reply> {
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(msg.delay)) => {}
            () = ctx.cancelled() => return Err(Error::permanent("cancelled while waiting")),
        }
        self.out.emit(ctx, Delayed { context: msg.context }).await
    }
}

/// Settings of a login node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct LoginSettings {
    /// The account.
    #[tiny(title = "User")]
    pub user: String,
    /// The account's password. Secret: tiny masks it in the node's status, traces,
    /// tracker previews, logs and error messages; the component gets the real value.
    #[tiny(title = "Password", secret)]
    pub password: String,
}

/// What arrives on a login's `input`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct LoginIn {
    /// Passed on with the result.
    #[tiny(configurable)]
    #[serde(default)]
    pub context: serde_json::Value,
    /// The password to check (secret, as the settings' one).
    #[tiny(title = "Password", secret)]
    pub password: String,
}

/// What leaves on `ok`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct LoggedIn {
    /// The context that came in.
    #[tiny(shared)]
    pub context: serde_json::Value,
    /// Who logged in.
    pub user: String,
}

/// Checks a password against the one in its settings: an example of secret fields.
///
/// A wrong password fails with an error that quotes both passwords, as careless code
/// does: tiny masks them wherever it writes or prints the error.
#[derive(Debug, Component, Default)]
#[component(name = "login", tags("example", "secret"), settings = LoginSettings)]
pub struct Login {
    #[port(position = Left)]
    input: Input<LoginIn>,
    #[port(position = Right)]
    ok: Output<LoggedIn>,
}

#[handlers]
impl Login {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: LoginIn) -> Result<Reply> {
        let settings = ctx.settings();
        if msg.password != settings.password {
            tracing::warn!(user = %settings.user, "login refused");
            return Err(Error::permanent(format!(
                "password `{}` is wrong: `{}` expected",
                msg.password, settings.password
            ))
            .with_code("WRONG_PASSWORD"));
        }
        let user = settings.user.clone();
        self.ok
            .emit(
                ctx,
                LoggedIn {
                    context: msg.context,
                    user,
                },
            )
            .await
    }
}

/// Settings of a flaky node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct FlakySettings {
    /// How many messages fail (transiently, code `FLAKY`) before the others pass.
    #[tiny(title = "Failures")]
    pub failures: u32,
}

/// Fails the first `failures` messages with a transient error, then passes messages
/// on: an edge's retry policy at work, in a flow or on `/metrics`.
#[derive(Debug, Component, Default)]
#[component(name = "flaky", tags("example"), settings = FlakySettings)]
pub struct Flaky {
    #[port(position = Left)]
    input: Input<serde_json::Value>,
    #[port(position = Right)]
    out: Output<serde_json::Value>,
    failed: std::sync::atomic::AtomicU32,
}

#[handlers]
impl Flaky {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: serde_json::Value) -> Result<Reply> {
        use std::sync::atomic::Ordering;
        let limit = ctx.settings().failures;
        let failed = self
            .failed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < limit).then_some(n + 1));
        if let Ok(n) = failed {
            return Err(Error::transient(format!("failure {} of {limit}", n + 1)).with_code("FLAKY"));
        }
        self.out.emit(ctx, msg).await
    }
}

/// Settings of a tally node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct TallySettings {
    /// The file each call appends its line to (none: calls are not written down).
    #[tiny(title = "File")]
    pub file: String,
    /// How long each call waits after writing its line, before passing the message on
    /// (milliseconds).
    #[tiny(title = "Delay (ms)")]
    pub delay: u64,
}

/// Counts its calls where a crash cannot undo the count: each call appends the line
/// `<node> <runID> <stepKey> <pid> <unix ms>` (`-` for the run and step outside a
/// durable run) to its `file` in one `write` on a file opened with `O_APPEND`, then
/// waits `delay` ms and passes the message on along `out`. Once written, the line is
/// the kernel's: a SIGKILL of the process right after does not lose it, and lines of
/// several processes sharing the file do not mix. The crash tests count each step's
/// handler calls from it.
#[derive(Debug, Component, Default)]
#[component(name = "tally", tags("example", "test"), settings = TallySettings)]
pub struct Tally {
    #[port(position = Left)]
    input: Input<serde_json::Value>,
    #[port(position = Right)]
    out: Output<serde_json::Value>,
}

impl Tally {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: serde_json::Value) -> Result<Reply> {
        let settings = ctx.settings();
        if !settings.file.is_empty() {
            let run = ctx.hop().run.as_deref();
            let line = format!(
                "{} {} {} {} {}\n",
                ctx.node_name(),
                run.map_or("-", tiny_sdk::run::RunStep::run_id),
                run.map_or("-", tiny_sdk::run::RunStep::step_key),
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis()),
            );
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&settings.file)
                .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
            written.map_err(|e| Error::permanent(format!("tally: writing to {}: {e}", settings.file)))?;
        }
        if settings.delay > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(settings.delay)).await;
        }
        self.out.emit(ctx, msg).await
    }
}

/// The components of this module.
pub fn registry() -> tiny_sdk::engine::Registry {
    let mut r = tiny_sdk::engine::Registry::default();
    r.register::<Hello>()
        .register::<Shout>()
        .register::<Respond>()
        .register::<Delay>()
        .register::<Login>()
        .register::<Flaky>()
        .register::<Tally>();
    r
}

/// The example flow: greeter -> shout -> respond, started by a signal.
pub const GREET_FLOW: &str = include_str!("../flows/greet.yaml");

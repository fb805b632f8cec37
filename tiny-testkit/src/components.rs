//! The usual test components. Register what a test needs:
//!
//! ```
//! use tiny_testkit::components::{Answer, Flaky};
//! let engine = tiny_sdk::engine::Engine::builder()
//!     .register::<Answer>()
//!     .register::<Flaky>()
//!     .build();
//! # let _ = engine;
//! ```

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU32, Ordering},
};

use serde_json::{Value, json};
use tiny_sdk::prelude::*;

/// `answer`: answers with its input, as it came.
#[derive(Debug, Component, Default)]
#[component(name = "answer")]
pub struct Answer {
    input: Input<Value>,
}

impl Answer {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(msg)
    }
}

/// `echo`: answers with its input as it came, never decoded (a port of
/// [`Msg`](tiny_sdk::Msg)): bytes from the wire go back as the same bytes.
#[derive(Debug, Component, Default)]
#[component(name = "echo")]
pub struct Echo {
    input: Input<tiny_sdk::Msg>,
}

impl Echo {
    async fn on_input(&self, _: &Ctx<Self>, msg: tiny_sdk::Msg) -> Reply {
        Reply::msg(msg)
    }
}

/// `record`: keeps its input's JSON text (its keys in order) in [`seen`](crate::seen)
/// under its node's name, for the test to [`take`](crate::seen::take), and answers
/// with nothing.
#[derive(Debug, Component, Default)]
#[component(name = "record")]
pub struct Record {
    input: Input<Value>,
}

impl Record {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Reply {
        crate::seen::record(ctx.node_name(), msg.to_string());
        Reply::empty()
    }
}

/// `forward`: sends its input on `out` as it came, never decoded, and answers with
/// what that answered.
#[derive(Debug, Component, Default)]
#[component(name = "forward")]
pub struct Forward {
    input: Input<tiny_sdk::Msg>,
    out: Output<tiny_sdk::Msg>,
}

impl Forward {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: tiny_sdk::Msg) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

/// `answer` too, for tests of where a message went: answers
/// `{"answer": <input>, "depth": <hop depth>, "node": <its node>}`.
#[derive(Debug, Component, Default)]
#[component(name = "answer")]
pub struct Located {
    input: Input<Value>,
}

impl Located {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(json!({"answer": msg, "depth": ctx.hop().depth, "node": ctx.node_name()}))
    }
}

/// Settings of [`Flaky`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct FlakySettings {
    /// Fail this many times before succeeding.
    pub failures: u32,
    /// Fail permanently instead.
    pub permanent: bool,
    /// The code of the errors.
    pub code: Option<String>,
}

/// `flaky`: fails as its settings say (`attempt <n> failed`), then answers
/// `{"attempts": <n>, "msg": <input>}`; `count` answers how many messages `input` took.
#[derive(Debug, Component, Default)]
#[component(name = "flaky", settings = FlakySettings)]
pub struct Flaky {
    input: Input<Value>,
    count: Input<Value>,
    attempts: AtomicU32,
}

impl Flaky {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        let s = ctx.settings();
        if n <= s.failures {
            let m = format!("attempt {n} failed");
            let e = if s.permanent {
                Error::permanent(m)
            } else {
                Error::transient(m)
            };
            return Err(match &s.code {
                Some(c) => e.with_code(c),
                None => e,
            });
        }
        Ok(Reply::value(json!({"attempts": n, "msg": msg})))
    }

    async fn on_count(&self, _: &Ctx<Self>, _: Value) -> Reply {
        Reply::value(json!(self.attempts.load(Ordering::SeqCst)))
    }
}

/// `slow`: never answers, and watches its hop's cancellation from a task of its own
/// (as a component holding a stream or a subprocess would); `cancelled` answers
/// whether the hop was cancelled.
#[derive(Debug, Component, Default)]
#[component(name = "slow")]
pub struct Slow {
    input: Input<Value>,
    cancelled: Input<Value>,
    seen: Arc<AtomicBool>,
}

impl Slow {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let (cancel, seen) = (ctx.hop().cancel.clone(), self.seen.clone());
        tokio::spawn(async move {
            cancel.cancelled().await;
            seen.store(true, Ordering::SeqCst);
        });
        std::future::pending().await
    }

    async fn on_cancelled(&self, _: &Ctx<Self>, _: Value) -> Reply {
        Reply::value(json!(self.seen.load(Ordering::SeqCst)))
    }
}

/// `whoami`: answers `{"leader": <whether the hop says this replica leads>}`.
#[derive(Debug, Component, Default)]
#[component(name = "whoami")]
pub struct Whoami {
    input: Input<Value>,
}

impl Whoami {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Reply {
        Reply::value(json!({"leader": ctx.hop().leader}))
    }
}

/// The flow benchmark's payload, the Node-RED peer's (`bench/node-red/README.md`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Payload {
    /// The message's number.
    pub n: u64,
    /// What a step writes: `v = n`.
    pub v: i64,
    /// A nested object.
    pub user: User,
    /// Some text.
    pub text: String,
}

/// [`Payload::user`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct User {
    /// A name.
    pub name: String,
    /// A few tags.
    pub tags: Vec<String>,
}

/// `step`: one hop of the flow benchmark, `v = n` (Node-RED: `set msg.payload.v =
/// msg.payload.n`), then on along `out`.
#[derive(Debug, Component, Default)]
#[component(name = "step")]
pub struct Step {
    input: Input<Payload>,
    out: Output<Payload>,
}

impl Step {
    async fn on_input(&self, ctx: &Ctx<Self>, mut msg: Payload) -> Result<Reply> {
        msg.v = msg.n as i64;
        self.out.emit(ctx, msg).await
    }
}

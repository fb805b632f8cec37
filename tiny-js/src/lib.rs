//! The `js` runtime of components defined as data (a TinyComponent), as Go's js-module
//! serves them: the script is an ES module whose default export takes `inputData` and
//! returns `outputData`.
//!
//! QuickJS (through `rquickjs`, its optional parts off): each node gets an interpreter
//! of its own on a thread of its own, with a memory limit, a stack limit and a watchdog
//! (30 s by default) that interrupts a call running past it. Scripts have no network
//! and no file access: QuickJS here has no module loader, and an `import` is refused
//! when the definition is applied (Go's js-module fetches `https://` imports; here they
//! are refused with a reason saying so).
//!
//! ```
//! use tiny_sdk::engine::{ComponentRuntime, Definition};
//! let def = Definition {
//!     name: "who".into(),
//!     script: "export default (input) => ({name: input.user.name})".into(),
//!     ..Default::default()
//! };
//! assert!(tiny_js::JsRuntime::default().compile(&def).is_ok());
//! ```
//!
//! # Why QuickJS
//!
//! Issue 45 offered QuickJS (through `rquickjs`) or `boa_engine`. Both were measured on this
//! crate's bench script (`benches/reshape.rs`: pick, uppercase, compare, join, count), called
//! bare the way a node calls it (JSON text in, `JSON.parse`, the default export,
//! `JSON.stringify`, text out), in a scratch crate outside the repository: `rquickjs` 0.14
//! (`std` only, as here) and `boa_engine` 0.22 (default features), release builds, three runs
//! back to back on a loaded 2-core machine:
//!
//! | | QuickJS (`rquickjs` 0.14) | `boa_engine` 0.22 |
//! |---|---|---|
//! | one message, 20,000 in one context | 3.8–5.6 µs | 29–41 µs |
//! | a node's start: new context, compile and run the module | 100–150 µs | 690–1,010 µs |
//! | resident memory of one context (100 created, `VmRSS` before/after) | 190 KiB | 400 KiB |
//! | process `VmRSS` after 300 contexts and 21,000 messages | 22 MiB | 249 MiB |
//! | heap limit / interrupt of a running call | yes / yes | no / no (loop-count, recursion and stack limits only) |
//! | cold release build of the engine (crates, time, both with `serde_json`) | 6 crates, 40 s | about 140 crates, 220 s |
//! | release binary (stripped) | 1.9 MB (1.7 MB) | 16.1 MB (13.1 MB) |
//!
//! QuickJS is 7 to 8 times faster per message and 5 to 7 times cheaper to start a node, holds
//! half the memory per context and keeps the process small, where boa's grew to a quarter of
//! a gigabyte. Above all it has what a runtime for user scripts needs and boa 0.22 does not: a
//! heap limit ([`JsRuntime::memory_limit`]) and an interrupt handler, which the watchdog and a
//! node's stop use to end a call that runs too long; boa can only count loop iterations, so
//! a script that hangs without looping, or a stop asked from outside, cannot be honoured. It
//! also builds five times faster with a binary an eighth the size. boa is pure Rust (no C
//! compiler needed), which is its one advantage here.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use rquickjs::{CatchResultExt as _, CaughtError, Context, Ctx, Function, Module, Persistent, Runtime};
use serde_json::Value;
use tiny_sdk::{
    engine::{CompiledScript, ComponentRuntime, DefineError, Definition, Script},
    error::{Error, code},
};

/// The name definitions give in `spec.runtime` (Go's default).
pub const JS_RUNTIME: &str = "js";

/// How long one call may run before the watchdog stops it, by default (Go's 30 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A node's interpreter's memory, by default.
pub const DEFAULT_MEMORY: usize = 64 << 20;
/// A node's interpreter's stack, by default (its thread has more, so that QuickJS's
/// own check fires first).
pub const DEFAULT_STACK: usize = 1 << 20;
/// The largest stack limit [`JsRuntime::stack_limit`] takes: each interpreter's thread
/// is sized from it.
pub const MAX_STACK: usize = 256 << 20;

/// A limit [`JsRuntime::stack_limit`] refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    /// 0, which turns QuickJS's stack check off.
    ZeroStack,
    /// Above [`MAX_STACK`].
    StackTooLarge {
        /// The limit asked for, in bytes.
        bytes: usize,
    },
}

impl std::fmt::Display for LimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitError::ZeroStack => f.write_str("the stack limit is 0, which would turn QuickJS's stack check off"),
            LimitError::StackTooLarge { bytes } => {
                write!(f, "the stack limit {bytes} bytes is above the most, {MAX_STACK} bytes")
            }
        }
    }
}

impl std::error::Error for LimitError {}

/// The module name scripts are compiled under; errors name it with line and column.
const SCRIPT: &str = "script.js";

/// The `js` runtime. Register it with `Registry::runtime`.
#[derive(Debug, Clone, Copy)]
pub struct JsRuntime {
    timeout: Duration,
    memory: usize,
    stack: usize,
}

impl Default for JsRuntime {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            memory: DEFAULT_MEMORY,
            stack: DEFAULT_STACK,
        }
    }
}

impl JsRuntime {
    /// How long one call (and the module's top-level code) may run.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most memory one node's interpreter may hold, in bytes.
    #[must_use]
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory = bytes;
        self
    }

    /// The most stack one node's interpreter may use, in bytes: above 0 (0 turns
    /// QuickJS's check off) and at most [`MAX_STACK`]. Each interpreter's thread gets
    /// more than this, so that QuickJS's check fires before the thread overflows.
    pub fn stack_limit(mut self, bytes: usize) -> Result<Self, LimitError> {
        if bytes == 0 {
            return Err(LimitError::ZeroStack);
        }
        if bytes > MAX_STACK {
            return Err(LimitError::StackTooLarge { bytes });
        }
        self.stack = bytes;
        Ok(self)
    }

    /// The stack of an interpreter's thread: twice QuickJS's limit and 1 MiB more
    /// (bounded, as the limit is).
    fn thread_stack(&self) -> usize {
        self.stack * 2 + (1 << 20)
    }
}

impl ComponentRuntime for JsRuntime {
    fn name(&self) -> &str {
        JS_RUNTIME
    }

    fn compile(&self, definition: &Definition) -> Result<Arc<dyn CompiledScript>, DefineError> {
        if let Some(specifier) = imports(&definition.script).into_iter().next() {
            let reason = if specifier.starts_with("https://") || specifier.starts_with("http://") {
                "scripts have no network access: imports are not fetched (Go's js-module fetches them)"
            } else {
                "scripts have no file access: nothing can be imported"
            };
            return Err(DefineError::Import {
                specifier,
                reason: reason.to_owned(),
            });
        }
        // Compiled and run once here (top-level code too), so that what will never run
        // is refused while someone is looking at it; on a thread with the stack the
        // limit needs, as a node's.
        let source: Arc<str> = definition.script.as_str().into();
        let (settings, text) = (*self, source.clone());
        let checked = std::thread::Builder::new()
            .name("tiny-js-compile".into())
            .stack_size(self.thread_stack())
            .spawn(move || {
                let watch = Watch::default();
                let vm = Vm::new(settings, &watch).map_err(|reason| DefineError::Script {
                    line: None,
                    column: None,
                    reason,
                })?;
                vm.load(&text, &watch, settings.timeout).map(drop)
            })
            .map_err(|e| DefineError::Script {
                line: None,
                column: None,
                reason: format!("no thread to compile the script on: {e}"),
            })?
            .join()
            .map_err(|_| DefineError::Script {
                line: None,
                column: None,
                reason: "the interpreter failed while compiling the script".to_owned(),
            })?;
        checked?;
        Ok(Arc::new(Compiled {
            source,
            settings: *self,
        }))
    }
}

/// The import specifiers of `script`: `import ... from '...'`, `import '...'`,
/// `import('...')` and `export ... from '...'`. Read from the script's tokens, so that
/// comments and strings that mention an import are not one. A lexer, not a parser (a
/// regular expression literal holding a quote can mislead it): what it misses fails
/// to compile all the same (QuickJS here has no module loader).
fn imports(script: &str) -> Vec<String> {
    let tokens = tokens(script);
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let after_dot = i.checked_sub(1).is_some_and(|j| tokens[j] == Token::Punct('.'));
        if after_dot {
            continue;
        }
        match token {
            Token::Word(w) if w == "import" => match tokens.get(i + 1) {
                Some(Token::Str(s)) => out.push(s.clone()),
                Some(Token::Punct('(')) => {
                    if let Some(Token::Str(s)) = tokens.get(i + 2) {
                        out.push(s.clone());
                    }
                }
                _ => out.extend(from_clause(&tokens[i + 1..])),
            },
            Token::Word(w) if w == "export" => out.extend(from_clause(&tokens[i + 1..])),
            _ => {}
        }
    }
    out
}

/// The specifier of a statement's `from '...'`, before its end (`;`, or a keyword
/// that starts another statement).
fn from_clause(rest: &[Token]) -> Option<String> {
    for (i, token) in rest.iter().enumerate() {
        match token {
            Token::Punct(';') => return None,
            Token::Word(w) if w == "from" => {
                return match rest.get(i + 1) {
                    Some(Token::Str(s)) => Some(s.clone()),
                    _ => None,
                };
            }
            Token::Word(w)
                if matches!(
                    w.as_str(),
                    "import" | "export" | "const" | "let" | "var" | "function" | "class" | "default"
                ) =>
            {
                return None;
            }
            Token::Str(_) | Token::Punct('=' | '(' | ')') => return None,
            _ => {}
        }
    }
    None
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// A string literal's text (its escapes not decoded), or a template's with no
    /// substitutions.
    Str(String),
    Punct(char),
}

/// The tokens of `script`, comments dropped.
fn tokens(script: &str) -> Vec<Token> {
    let chars: Vec<char> = script.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
            }
            '\'' | '"' | '`' => {
                let mut text = String::new();
                let mut plain = true;
                i += 1;
                while i < chars.len() && chars[i] != c {
                    if chars[i] == '\\' {
                        text.push(chars[i]);
                        i += 1;
                    } else if c == '`' && chars[i] == '$' && chars.get(i + 1) == Some(&'{') {
                        plain = false;
                    }
                    if let Some(&ch) = chars.get(i) {
                        text.push(ch);
                    }
                    i += 1;
                }
                i += 1;
                out.push(if plain { Token::Str(text) } else { Token::Punct('`') });
            }
            c if c.is_alphanumeric() || c == '_' || c == '$' => {
                let mut word = String::new();
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                    word.push(chars[i]);
                    i += 1;
                }
                out.push(Token::Word(word));
            }
            c if c.is_whitespace() => i += 1,
            c => {
                out.push(Token::Punct(c));
                i += 1;
            }
        }
    }
    out
}

/// What the watchdog reads: when the running call must end, and whether it was told to
/// stop, and what made it interrupt.
#[derive(Clone, Default)]
struct Watch {
    /// Milliseconds after `base` past which the running call is interrupted; 0: none.
    deadline: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    fired: Arc<AtomicU8>,
}

const FIRED_NONE: u8 = 0;
const FIRED_TIMEOUT: u8 = 1;
const FIRED_STOP: u8 = 2;

/// One interpreter.
struct Vm {
    // Dropped after the context (field order).
    context: Context,
    _runtime: Runtime,
    base: Instant,
}

impl Vm {
    fn new(settings: JsRuntime, watch: &Watch) -> Result<Vm, String> {
        let runtime = Runtime::new().map_err(|e| format!("QuickJS did not start: {e}"))?;
        runtime.set_memory_limit(settings.memory);
        runtime.set_max_stack_size(settings.stack);
        let base = Instant::now();
        let w = watch.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if w.stop.load(Ordering::Relaxed) {
                w.fired.store(FIRED_STOP, Ordering::Relaxed);
                return true;
            }
            let deadline = w.deadline.load(Ordering::Relaxed);
            let late = deadline != 0 && u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX) > deadline;
            if late {
                w.fired.store(FIRED_TIMEOUT, Ordering::Relaxed);
            }
            late
        })));
        let context = Context::full(&runtime).map_err(|e| format!("QuickJS did not start: {e}"))?;
        Ok(Vm {
            context,
            _runtime: runtime,
            base,
        })
    }

    fn arm(&self, watch: &Watch, timeout: Duration) {
        watch.fired.store(FIRED_NONE, Ordering::Relaxed);
        // A timeout too long to add (`Duration::MAX`) is no deadline at all.
        let ms = self
            .base
            .elapsed()
            .checked_add(timeout)
            .map_or(u64::MAX, |until| u64::try_from(until.as_millis()).unwrap_or(u64::MAX))
            .max(1);
        watch.deadline.store(ms, Ordering::Relaxed);
    }

    /// Compiles and runs the module; its default export.
    fn load(
        &self,
        source: &str,
        watch: &Watch,
        timeout: Duration,
    ) -> Result<Persistent<Function<'static>>, DefineError> {
        self.arm(watch, timeout);
        let loaded = self.context.with(|ctx| {
            let module = Module::declare(ctx.clone(), SCRIPT, source)
                .catch(&ctx)
                .map_err(|e| compile_error(&e, watch))?;
            let (module, done) = module.eval().catch(&ctx).map_err(|e| compile_error(&e, watch))?;
            done.finish::<()>().catch(&ctx).map_err(|e| compile_error(&e, watch))?;
            let default: Function = module.get("default").map_err(|_| DefineError::Script {
                line: None,
                column: None,
                reason: "the module's default export is not a function (write `export default (input) => ...`)"
                    .to_owned(),
            })?;
            Ok(Persistent::save(&ctx, default))
        });
        watch.deadline.store(0, Ordering::Relaxed);
        loaded
    }

    /// One call of the default export.
    fn call(
        &self,
        f: &Persistent<Function<'static>>,
        input: &Value,
        watch: &Watch,
        timeout: Duration,
    ) -> tiny_sdk::Result<Value> {
        let text = serde_json::to_string(input).map_err(|e| Error::permanent(format!("input is not JSON: {e}")))?;
        self.arm(watch, timeout);
        let result = self.context.with(|ctx| -> Result<Option<String>, String> {
            let run = |ctx: &Ctx<'_>| -> rquickjs::Result<Option<String>> {
                let f = f.clone().restore(ctx)?;
                let arg = ctx.json_parse(text.as_str())?;
                let mut out: rquickjs::Value = f.call((arg,))?;
                if let Some(promise) = out.as_promise() {
                    out = promise.finish()?;
                }
                match ctx.json_stringify(out)? {
                    Some(s) => Ok(Some(s.to_string()?)),
                    None => Ok(None),
                }
            };
            run(&ctx).catch(&ctx).map_err(|e| caught_message(&e))
        });
        watch.deadline.store(0, Ordering::Relaxed);
        match watch.fired.load(Ordering::Relaxed) {
            FIRED_TIMEOUT => {
                return Err(
                    Error::permanent(format!("the script ran longer than {timeout:?} and was stopped"))
                        .with_code(code::TIMEOUT),
                );
            }
            FIRED_STOP => {
                return Err(Error::permanent("the script was stopped: its node stopped").with_code(code::NODE_REMOVED));
            }
            _ => {}
        }
        match result {
            Ok(Some(json)) => serde_json::from_str(&json)
                .map_err(|e| Error::permanent(format!("the script's output is not JSON: {e}"))),
            // `undefined` (or a function): no output.
            Ok(None) => Ok(Value::Null),
            Err(message) => Err(Error::permanent(format!("the script failed: {message}"))),
        }
    }
}

/// What a thrown value says.
fn caught_message(e: &CaughtError<'_>) -> String {
    match e {
        CaughtError::Exception(ex) => ex.message().unwrap_or_else(|| "an exception".to_owned()),
        CaughtError::Value(v) => format!("threw {v:?}"),
        CaughtError::Error(e) => e.to_string(),
    }
}

/// A failure compiling or loading the module, with the line and column QuickJS gives in
/// the error's first stack frame (`at script.js:LINE:COLUMN`).
fn compile_error(e: &CaughtError<'_>, watch: &Watch) -> DefineError {
    if watch.fired.load(Ordering::Relaxed) == FIRED_TIMEOUT {
        return DefineError::Script {
            line: None,
            column: None,
            reason: "the module's top-level code ran past the time limit and was stopped".to_owned(),
        };
    }
    let (line, column) = match e {
        CaughtError::Exception(ex) => ex.stack().as_deref().map_or((None, None), position),
        _ => (None, None),
    };
    DefineError::Script {
        line,
        column,
        reason: caught_message(e),
    }
}

/// Line and column of the first `script.js:L:C` in a stack.
fn position(stack: &str) -> (Option<u32>, Option<u32>) {
    let Some(at) = stack.find(SCRIPT) else {
        return (None, None);
    };
    let mut parts = stack[at + SCRIPT.len()..].split(':').skip(1);
    let mut number = || {
        parts
            .next()
            .map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|d| d.parse().ok())
    };
    let line = number();
    let column = number();
    (line, column)
}

/// A compiled definition: its source, started afresh for each node.
struct Compiled {
    source: Arc<str>,
    settings: JsRuntime,
}

/// One call to a node's interpreter.
struct Call {
    input: Value,
    reply: futures::channel::oneshot::Sender<tiny_sdk::Result<Value>>,
}

impl CompiledScript for Compiled {
    fn start(&self) -> tiny_sdk::Result<Box<dyn Script>> {
        let (calls, inbox) = mpsc::channel::<Call>();
        let (ready, started) = mpsc::channel::<Result<(), String>>();
        let watch = Watch::default();
        let (source, settings, w) = (self.source.clone(), self.settings, watch.clone());
        // A thread per node: a QuickJS runtime stays on the thread that made it. More
        // stack than QuickJS may use, so that its own check fires first. The engine
        // calls `start` off its workers, so waiting here for the module to load holds
        // no async task.
        std::thread::Builder::new()
            .name("tiny-js".into())
            .stack_size(settings.thread_stack())
            .spawn(move || serve(&source, settings, &w, &inbox, &ready))
            .map_err(|e| Error::permanent(format!("no thread for the script: {e}")))?;
        match started.recv() {
            Ok(Ok(())) => Ok(Box::new(Node { calls, watch })),
            Ok(Err(reason)) => Err(Error::permanent(format!("the script did not start: {reason}"))),
            Err(_) => Err(Error::permanent("the script's interpreter ended before it started")),
        }
    }
}

/// A node's interpreter: loads the module, then answers calls until the node's handle
/// is dropped.
fn serve(
    source: &str,
    settings: JsRuntime,
    watch: &Watch,
    inbox: &mpsc::Receiver<Call>,
    ready: &mpsc::Sender<Result<(), String>>,
) {
    let loaded = Vm::new(settings, watch).and_then(|vm| {
        let f = vm.load(source, watch, settings.timeout).map_err(|e| e.to_string())?;
        Ok((vm, f))
    });
    let (vm, f) = match loaded {
        Ok(v) => {
            let _ = ready.send(Ok(()));
            v
        }
        Err(reason) => {
            let _ = ready.send(Err(reason));
            return;
        }
    };
    while let Ok(call) = inbox.recv() {
        if watch.stop.load(Ordering::Relaxed) {
            let _ = call
                .reply
                .send(Err(Error::permanent("the script was stopped: its node stopped")));
            continue;
        }
        let out = vm.call(&f, &call.input, watch, settings.timeout);
        let _ = call.reply.send(out);
    }
    // The function is released before its runtime.
    drop(f);
}

/// One node's script: calls go to its interpreter's thread.
struct Node {
    calls: mpsc::Sender<Call>,
    watch: Watch,
}

impl Script for Node {
    fn call(&self, input: Value) -> BoxFuture<'_, tiny_sdk::Result<Value>> {
        let (reply, answer) = futures::channel::oneshot::channel();
        let sent = self.calls.send(Call { input, reply });
        Box::pin(async move {
            if sent.is_err() {
                return Err(Error::permanent("the script's interpreter has ended"));
            }
            answer
                .await
                .unwrap_or_else(|_| Err(Error::permanent("the script's interpreter ended during the call")))
        })
    }

    fn stop(&self) {
        self.watch.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_found() {
        let script = "import a from 'https://x.test/a.js';\nimport {b} from \"./b.js\"\nimport 'c';\nconst d = await import(`e`);\nexport * from 'f';\nexport default (important) => important.imports";
        assert_eq!(imports(script), ["https://x.test/a.js", "./b.js", "c", "e", "f"]);
    }

    #[test]
    fn comments_and_strings_that_mention_an_import_are_not_one() {
        let script = "// no need to import 'lodash' here\n/* import x from 'y' */\nconst s = \"import 'z'\";\nconst t = `import('w')`;\nconst from = 'v';\nexport default (input) => ({s, t, from, m: input.import})";
        assert_eq!(imports(script), Vec::<String>::new());
    }

    #[test]
    fn a_position_is_read_from_the_first_frame() {
        assert_eq!(position("    at script.js:2:13\n"), (Some(2), Some(13)));
        assert_eq!(position("    at other\n"), (None, None));
    }
}

//! `chat`: the flow's conversation with a person, on the dashboard.
//!
//! A person types → `message` (with a request id); the flow speaks on `say` (a
//! request id closes that message's "working" state); the flow asks on `ask` (a
//! question card; the submission goes out on `answer`); `clear` starts over.
//! Questions queue first in, first out and expire onto `error` after
//! `timeoutSeconds`. The thread and the queue are kept in node state under Go's
//! keys (`_state/thread`, `_state/queue`, JSON), so the conversation survives
//! restarts and every replica shows it; the widget's schema is Go's (`format:
//! chat`), its data the whole conversation.

use std::{
    hash::{BuildHasher, Hasher},
    sync::atomic::{AtomicBool, Ordering},
};

use serde_json::{Map, Value, json};
use tiny_sdk::{NodeState, PortShape, prelude::*};

/// The state key of the thread (Go's).
pub const THREAD_KEY: &str = "thread";
/// The state key of the question queue (Go's).
pub const QUEUE_KEY: &str = "queue";
const DEFAULT_HISTORY_LIMIT: i64 = 50;
/// Shown where a write-only answer was, in the thread.
const SECRET_MASK: &str = "••••••";

/// The question form when neither the request nor the settings give one.
const DEFAULT_FORM: &str = r#"{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve","format":"button","propertyOrder":1},"deny":{"type":"boolean","title":"Deny","format":"button","propertyOrder":2}}}"#;

/// Settings, as Go's chat.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct ChatSettings {
    /// Default JSON Schema of ask questions (a request's own form overrides it);
    /// empty for Approve/Deny.
    #[tiny(title = "Question Form", format = "code", language = "json")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub form: String,
    /// How long a question may stay unanswered before it expires onto Error (0:
    /// forever); checked when messages arrive and on reconcile.
    #[tiny(title = "Question Timeout Seconds", default = 0)]
    #[serde(default)]
    pub timeout_seconds: i64,
    /// Emit expired questions on Error; without it they are dropped with a log line.
    #[tiny(title = "Enable Error Port")]
    #[serde(default)]
    pub enable_error_port: bool,
    /// Messages kept in the widget's thread (display only).
    #[tiny(title = "History Limit", default = 50)]
    #[serde(default)]
    pub history_limit: i64,
    /// Hint text in the input box.
    #[tiny(title = "Composer Placeholder")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub placeholder: String,
    /// Form mode: only question cards and notes, no free-text input.
    #[tiny(title = "Hide Composer")]
    #[serde(default)]
    pub hide_composer: bool,
}

impl Default for ChatSettings {
    fn default() -> Self {
        Self {
            form: String::new(),
            timeout_seconds: 0,
            enable_error_port: false,
            history_limit: DEFAULT_HISTORY_LIMIT,
            placeholder: String::new(),
            hide_composer: false,
        }
    }
}

/// Flow → person: a bubble.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct Say {
    /// The id of a message from Message: it is then marked answered.
    #[tiny(title = "Request ID")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub request_id: String,
    /// assistant (default), system or error.
    #[tiny(title = "Role", enum("assistant", "system", "error"))]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// Markdown is rendered.
    #[tiny(title = "Text")]
    pub text: String,
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// Flow → person: a question.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
pub struct AskRequest {
    /// Shown on the question card and passed through to the answer.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// JSON Schema of this question's form, over the settings' one; `format: button`
    /// fields are the answers.
    #[tiny(title = "Form", format = "code", language = "json")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub form: String,
}

/// Starts the conversation over: the thread and the pending questions are wiped.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
pub struct ClearRequest {
    /// Carried for correlation only.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// What `message` sends: what a person typed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct ChatMessage {
    /// Carry it back on Say to mark the message answered.
    #[tiny(title = "Request ID")]
    pub request_id: String,
    #[tiny(title = "Text")]
    pub text: String,
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// What `answer` sends: a person's reply to a question.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct ChatAnswer {
    #[tiny(title = "Question ID")]
    pub question_id: String,
    /// What was submitted, by the form's field names.
    #[tiny(title = "Values")]
    pub values: Map<String, Value>,
    /// The ask request's context, unchanged.
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// What `error` sends: a question nobody answered in time.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct ChatError {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(title = "Error")]
    pub error: String,
}

/// The widget: a submission (`_kind`, `text`, `_qid` and the answer's fields) on the
/// way in, the conversation (`thread`, `placeholder`, `pendingQuestion`,
/// `hideComposer`) on the way out.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct ChatControl {
    /// `message` from the composer, `answer` from a question card.
    #[tiny(title = "Kind", readonly)]
    #[serde(rename = "_kind", default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[tiny(title = "Message", format = "textarea")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[tiny(title = "Question ID", readonly)]
    #[serde(rename = "_qid", default, skip_serializing_if = "String::is_empty")]
    pub qid: String,
    /// Everything else: the answer's fields, or the conversation shown.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One bubble of the thread, in Go's JSON layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadEntry {
    pub id: String,
    /// message, reply, question, answer or note.
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub qid: String,
    pub at: String,
    /// A person's message still waiting for its reply, or an open question.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
}

/// One queued question, in Go's JSON layout; its form is kept as asked, so that no
/// later change swaps the question under the person answering it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingQuestion {
    pub id: String,
    #[serde(default)]
    pub context: Value,
    #[serde(default)]
    pub form: Value,
    pub asked_at: String,
}

/// A conversation widget: Message and Say for free text, Ask and Answer for
/// questions, Clear to start over; kept in node state.
#[derive(Component, Default, Debug)]
#[component(
    name = "chat",
    description = "Chat with a human",
    info = "The flow's human touchpoint: one conversation widget on the dashboard. A person types → Message (carry requestId back on Say to mark it answered). The flow speaks → Say. The flow asks → Ask: a question card whose submission emits on Answer as {questionId, values, context}. Questions queue, persist across restarts, and expire onto Error after timeoutSeconds. Clear wipes the thread and pending questions.",
    tags("SDK", "dashboard", "Human"),
    settings = ChatSettings,
    control = ChatControl,
    hooks
)]
pub struct Chat {
    #[port(label = "Say", position = Left)]
    say: Input<Say>,
    #[port(label = "Ask", position = Left)]
    ask: Input<AskRequest>,
    #[port(label = "Clear", position = Left)]
    clear: Input<ClearRequest>,
    #[port(label = "Message", position = Right)]
    message: Output<ChatMessage>,
    #[port(label = "Answer", position = Right)]
    answer: Output<ChatAnswer>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<ChatError>,
    /// Serialises the read-modify-write of thread and queue on this replica.
    lock: tokio::sync::Mutex<()>,
    /// The view was shown once since this instance started (Go's rehydration).
    shown: AtomicBool,
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// An id as Go makes them: `<prefix>-<unix nanos>-<8 hex digits>`.
fn new_id(prefix: &str, at: jiff::Timestamp) -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i128(at.as_nanosecond());
    format!("{prefix}-{}-{:08x}", at.as_nanosecond(), h.finish() as u32)
}

fn limit(s: &ChatSettings) -> usize {
    usize::try_from(s.history_limit)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_HISTORY_LIMIT as usize)
}

/// A list kept under `key`; an unreadable one starts over (it can never be used).
fn load<T: serde::de::DeserializeOwned>(state: &NodeState, key: &str) -> Vec<T> {
    state.get::<Vec<T>>(key).ok().flatten().unwrap_or_default()
}

async fn save<T: Serialize>(state: &NodeState, key: &str, list: &[T]) -> Result<()> {
    if list.is_empty() {
        return state.delete(key).await;
    }
    state.set(key, list).await.map_err(|e| {
        Error::permanent(format!(
            "chat state {key:?} could not be stored (at most {} KiB per node): lower historyLimit or carry smaller context: {e}",
            tiny_sdk::state::MAX_STATE_BYTES / 1024
        ))
    })
}

/// Appends and trims the oldest entries beyond `limit`.
fn append_capped(thread: &mut Vec<ThreadEntry>, limit: usize, entries: Vec<ThreadEntry>) {
    thread.extend(entries);
    if thread.len() > limit {
        thread.drain(..thread.len() - limit);
    }
}

/// Splits the queue into kept and expired at `at` (a timeout of 0 keeps all).
fn sweep(queue: Vec<PendingQuestion>, at: jiff::Timestamp, timeout: i64) -> (Vec<PendingQuestion>, Vec<ChatError>) {
    if timeout <= 0 {
        return (queue, Vec::new());
    }
    let mut kept = Vec::new();
    let mut expired = Vec::new();
    for q in queue {
        let asked = q.asked_at.parse::<jiff::Timestamp>().ok();
        if asked.is_some_and(|t| at.as_millisecond() - t.as_millisecond() > timeout.saturating_mul(1000)) {
            expired.push(ChatError {
                context: q.context,
                error: format!("question expired after {timeout}s"),
            });
        } else {
            kept.push(q);
        }
    }
    (kept, expired)
}

/// Thread notes for expired questions, so that a card does not vanish silently.
fn notes(expired: &[ChatError], at: jiff::Timestamp) -> Vec<ThreadEntry> {
    expired
        .iter()
        .map(|e| ThreadEntry {
            id: new_id("n", at),
            kind: "note".into(),
            role: "error".into(),
            text: e.error.clone(),
            at: at.to_string(),
            ..ThreadEntry::default()
        })
        .collect()
}

/// The form a question uses: the request's, else the settings', else Approve/Deny.
fn form_of(request: &str, settings: &ChatSettings) -> Result<Value> {
    let text = [request, settings.form.as_str(), DEFAULT_FORM]
        .into_iter()
        .find(|f| !f.is_empty())
        .unwrap_or(DEFAULT_FORM);
    serde_json::from_str(text).map_err(|e| Error::permanent(format!("ask form is not valid JSON: {e}")))
}

/// The fields of a form whose values never persist: `writeOnly`, `format:
/// password`, or `secret`.
fn secret_fields(form: &Value) -> Vec<String> {
    form.get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| {
                    p.get("writeOnly") == Some(&json!(true))
                        || p.get("secret") == Some(&json!(true))
                        || p.get("format") == Some(&json!("password"))
                })
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The example values of a form's fields, by their types (for the Answer port).
fn sample_values(form: &Value) -> Map<String, Value> {
    let Some(props) = form.get("properties").and_then(Value::as_object) else {
        return Map::new();
    };
    props
        .iter()
        .map(|(k, p)| {
            let v = match p.get("type").and_then(Value::as_str) {
                Some("boolean") => json!(false),
                Some("string") => json!(""),
                Some("number" | "integer") => json!(0),
                Some("array") => json!([]),
                _ => json!({}),
            };
            (k.clone(), v)
        })
        .collect()
}

/// The widget's data: the whole conversation.
fn view(state: &NodeState, settings: &ChatSettings) -> ChatControl {
    let thread: Vec<ThreadEntry> = load(state, THREAD_KEY);
    let queue: Vec<PendingQuestion> = load(state, QUEUE_KEY);
    let mut rest = Map::new();
    rest.insert("thread".into(), json!(thread));
    rest.insert("placeholder".into(), json!(settings.placeholder));
    if settings.hide_composer {
        rest.insert("hideComposer".into(), json!(true));
    }
    if let Some(head) = queue.first() {
        rest.insert(
            "pendingQuestion".into(),
            json!({"qid": head.id, "form": head.form, "context": head.context, "waiting": queue.len() - 1}),
        );
    }
    ChatControl {
        rest,
        ..ChatControl::default()
    }
}

impl Chat {
    /// Sends expired questions to Error (apart from this call), or logs them.
    fn report_expired(&self, ctx: &Ctx<Self>, expired: Vec<ChatError>) {
        for e in expired {
            if ctx.settings().enable_error_port {
                let port = self.error;
                ctx.detach(move |ctx| async move { port.emit(&ctx, e).await.map(drop) });
            } else {
                tracing::warn!(
                    node = ctx.node_name(),
                    "{} (error port disabled; question dropped)",
                    e.error
                );
            }
        }
    }

    async fn submit_message(&self, ctx: &Ctx<Self>, text: String) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let at = now();
        let id = new_id("m", at);
        {
            let _guard = self.lock.lock().await;
            let mut thread: Vec<ThreadEntry> = load(ctx.state(), THREAD_KEY);
            let entry = ThreadEntry {
                id: id.clone(),
                kind: "message".into(),
                text: text.clone(),
                at: at.to_string(),
                pending: true,
                ..ThreadEntry::default()
            };
            append_capped(&mut thread, limit(ctx.settings()), vec![entry]);
            save(ctx.state(), THREAD_KEY, &thread).await?;
        }
        ctx.show_control(&view(ctx.state(), ctx.settings()));
        let port = self.message;
        let msg = ChatMessage {
            request_id: id,
            text,
            context: Value::Null,
        };
        // The press must not stay open for the length of the flow downstream.
        ctx.detach(move |ctx| async move { port.emit(&ctx, msg).await.map(drop) });
        Ok(())
    }

    async fn submit_answer(&self, ctx: &Ctx<Self>, qid: String, values: Map<String, Value>) -> Result<()> {
        let settings = ctx.settings();
        let at = now();
        let (answered, expired) = {
            let _guard = self.lock.lock().await;
            let mut queue: Vec<PendingQuestion> = load(ctx.state(), QUEUE_KEY);
            if queue.is_empty() {
                return Ok(());
            }
            // Only the head can be answered (the card carries its id), so that a
            // replayed card cannot consume the next question; answering beats expiry.
            let pressed = values.values().any(|v| v == &json!(true));
            let answered = (pressed && (qid.is_empty() || qid == queue[0].id)).then(|| queue.remove(0));
            let (kept, expired) = sweep(queue, at, settings.timeout_seconds);
            if answered.is_none() && expired.is_empty() {
                return Ok(());
            }
            save(ctx.state(), QUEUE_KEY, &kept).await?;
            let mut thread: Vec<ThreadEntry> = load(ctx.state(), THREAD_KEY);
            let mut entries = notes(&expired, at);
            if let Some(q) = &answered {
                for t in thread.iter_mut().filter(|t| t.kind == "question" && t.qid == q.id) {
                    t.pending = false;
                }
                // The thread persists and renders: write-only fields are masked
                // there; the raw values go only to Answer.
                let secrets = secret_fields(&q.form);
                let shown = values
                    .iter()
                    .map(|(k, v)| {
                        let hide = secrets.contains(k) && !v.is_null() && v != &json!("");
                        (k.clone(), if hide { json!(SECRET_MASK) } else { v.clone() })
                    })
                    .collect();
                entries.push(ThreadEntry {
                    id: new_id("a", at),
                    kind: "answer".into(),
                    qid: q.id.clone(),
                    values: Some(shown),
                    at: at.to_string(),
                    ..ThreadEntry::default()
                });
            }
            append_capped(&mut thread, limit(settings), entries);
            save(ctx.state(), THREAD_KEY, &thread).await?;
            (answered, expired)
        };
        self.report_expired(ctx, expired);
        if let Some(q) = answered {
            let port = self.answer;
            let msg = ChatAnswer {
                question_id: q.id,
                values,
                context: q.context,
            };
            ctx.detach(move |ctx| async move { port.emit(&ctx, msg).await.map(drop) });
        }
        ctx.show_control(&view(ctx.state(), settings));
        Ok(())
    }
}

#[handlers]
impl Chat {
    /// Not leader-gated (nor are Ask and Clear): flow traffic reaches any replica and
    /// meets in the node's state.
    async fn on_say(&self, ctx: &Ctx<Self>, msg: Say) -> Result<()> {
        let at = now();
        {
            let _guard = self.lock.lock().await;
            let mut thread: Vec<ThreadEntry> = load(ctx.state(), THREAD_KEY);
            if !msg.request_id.is_empty() {
                for t in thread
                    .iter_mut()
                    .filter(|t| t.kind == "message" && t.id == msg.request_id)
                {
                    t.pending = false;
                }
            }
            let role = if msg.role.is_empty() {
                "assistant".to_owned()
            } else {
                msg.role
            };
            let entry = ThreadEntry {
                id: new_id("r", at),
                kind: "reply".into(),
                role,
                text: msg.text,
                at: at.to_string(),
                ..ThreadEntry::default()
            };
            append_capped(&mut thread, limit(ctx.settings()), vec![entry]);
            save(ctx.state(), THREAD_KEY, &thread).await?;
        }
        ctx.show_control(&view(ctx.state(), ctx.settings()));
        Ok(())
    }

    async fn on_ask(&self, ctx: &Ctx<Self>, msg: AskRequest) -> Result<()> {
        let settings = ctx.settings();
        let form = form_of(&msg.form, settings)?;
        let at = now();
        let expired = {
            let _guard = self.lock.lock().await;
            let queue: Vec<PendingQuestion> = load(ctx.state(), QUEUE_KEY);
            let (mut kept, expired) = sweep(queue, at, settings.timeout_seconds);
            let question = PendingQuestion {
                id: new_id("q", at),
                context: msg.context,
                form,
                asked_at: at.to_string(),
            };
            let qid = question.id.clone();
            kept.push(question);
            save(ctx.state(), QUEUE_KEY, &kept).await?;
            let mut thread: Vec<ThreadEntry> = load(ctx.state(), THREAD_KEY);
            let mut entries = notes(&expired, at);
            entries.push(ThreadEntry {
                id: new_id("t", at),
                kind: "question".into(),
                qid,
                at: at.to_string(),
                pending: true,
                ..ThreadEntry::default()
            });
            append_capped(&mut thread, limit(settings), entries);
            save(ctx.state(), THREAD_KEY, &thread).await?;
            expired
        };
        self.report_expired(ctx, expired);
        ctx.show_control(&view(ctx.state(), settings));
        Ok(())
    }

    /// Pending questions are dropped, not expired: their conversation is gone.
    async fn on_clear(&self, ctx: &Ctx<Self>, _: ClearRequest) -> Result<()> {
        {
            let _guard = self.lock.lock().await;
            ctx.state().delete(THREAD_KEY).await?;
            ctx.state().delete(QUEUE_KEY).await?;
        }
        ctx.show_control(&view(ctx.state(), ctx.settings()));
        Ok(())
    }
}

impl Hooks for Chat {
    async fn on_settings(&self, ctx: &Ctx<Self>, settings: &ChatSettings) -> Result<()> {
        if !settings.form.is_empty() && serde_json::from_str::<Value>(&settings.form).is_err() {
            return Err(Error::permanent("settings: form is not valid JSON"));
        }
        ctx.show_control(&view(ctx.state(), settings));
        Ok(())
    }

    async fn on_control(&self, ctx: &Ctx<Self>, control: ChatControl) -> Result<Reply> {
        if !ctx.is_leader() {
            return Ok(Reply::empty());
        }
        match control.kind.as_str() {
            "message" => self.submit_message(ctx, control.text).await?,
            "answer" => self.submit_answer(ctx, control.qid, control.rest).await?,
            // A re-render or a replayed submission, not an action.
            _ => {}
        }
        Ok(Reply::empty())
    }

    /// The idle expiry tick; the view is shown again when something expired, or
    /// once after a restart, and never otherwise (not under a person typing).
    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &tiny_sdk::flow::Node) -> Result<()> {
        if !ctx.is_leader() {
            return Ok(());
        }
        let settings = ctx.settings();
        let at = now();
        let expired = {
            let _guard = self.lock.lock().await;
            let queue: Vec<PendingQuestion> = load(ctx.state(), QUEUE_KEY);
            let (kept, expired) = sweep(queue, at, settings.timeout_seconds);
            if !expired.is_empty() {
                save(ctx.state(), QUEUE_KEY, &kept).await?;
                let mut thread: Vec<ThreadEntry> = load(ctx.state(), THREAD_KEY);
                append_capped(&mut thread, limit(settings), notes(&expired, at));
                save(ctx.state(), THREAD_KEY, &thread).await?;
            }
            expired
        };
        let first = !self.shown.swap(true, Ordering::Relaxed);
        let changed = !expired.is_empty();
        self.report_expired(ctx, expired);
        if changed || first {
            ctx.show_control(&view(ctx.state(), settings));
        }
        Ok(())
    }

    fn shape_port(&self, settings: &ChatSettings, port: &mut PortShape) {
        match port.name.as_str() {
            // Go's widget schema: the chat renderer reads `format: chat`; hosts
            // without one fall back to a form of the submission fields.
            tiny_sdk::contract::port::CONTROL => {
                if let Some(root) = tiny_sdk::schema::root_mut(&mut port.schema) {
                    root["format"] = json!("chat");
                }
            }
            "answer" => {
                let form = form_of("", settings).unwrap_or_default();
                port.configuration = json!({"questionId": "", "values": sample_values(&form)});
            }
            _ => {}
        }
    }
}

//! [`ToolContext`]: what a running call knows about itself and how it reaches the user.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::chat::file_reads::FileReads;
use crate::files::FileStore;
use crate::spec::ToolSpec;
use crate::{
    error::ToolError,
    question::{Answer, Question},
};

/// The context of one tool call, injected into any `#[tool]` parameter of type `&ToolContext`
/// (or `ToolContext`); it is not part of the schema.
///
/// It gives the call's id, the tool's name and namespace, [`ask`](Self::ask), which asks the
/// user a question while the call runs, and [`files`](Self::files), the chat's file store.
///
/// ```
/// use llm_tools_core::{tool, ToolContext, ToolError};
///
/// /// Deletes a branch after the user confirms
/// #[tool]
/// async fn delete_branch(name: String, ctx: &ToolContext) -> Result<String, ToolError> {
///     let answer = ctx.ask(format!("Delete branch {name}?")).await?;
///     Ok(if answer.is_accepted() { format!("deleted {name}") } else { "kept".into() })
/// }
/// ```
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Inner>,
}

struct Inner {
    call_id: String,
    attempt: u32,
    /// Borrowed from a tool's spec when it names itself with a `&'static str`, as `#[tool]`
    /// does: a call's context then copies no name.
    tool_name: Cow<'static, str>,
    namespace: Option<Cow<'static, str>>,
    questions: Option<Questions>,
    files: Option<Arc<dyn FileStore>>,
    file_reads: Option<FileReads>,
    progress: Option<ProgressFn>,
}

/// Where a call's progress reports go: the chat's stream and `on_tool_progress` callbacks.
pub(crate) type ProgressFn = Arc<dyn Fn(&ToolProgress) + Send + Sync>;

/// How far a running call has got, as reported with [`ToolContext::report_progress`] (an MCP
/// server's progress notifications arrive this way). A chat hands it to its
/// [`on_tool_progress`](crate::Chat::on_tool_progress) callbacks and, while streaming, as a
/// [`ChatEvent::ToolProgress`](crate::chat::ChatEvent::ToolProgress).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolProgress {
    /// The call's id.
    pub call_id: String,
    /// The joined name of the tool.
    pub tool: String,
    /// How much is done, in the unit of `total` (increases with each report).
    pub progress: f64,
    /// How much there is to do, when known.
    pub total: Option<f64>,
    /// What the call is doing now.
    pub message: Option<String>,
}

/// The answers a chat already holds for this call, and the slot where an unanswered question
/// lands.
struct Questions {
    answers: Vec<Answer>,
    asked: AtomicUsize,
    pending: Mutex<Option<Question>>,
}

impl ToolContext {
    /// A context outside any chat: [`ask`](Self::ask) fails with an input-required error.
    pub fn detached(call_id: impl Into<String>) -> Self {
        ToolContextBuilder::new(call_id).build()
    }

    /// Builds a context (the chat loop does this for every call).
    #[inline]
    pub fn builder(call_id: impl Into<String>) -> ToolContextBuilder {
        ToolContextBuilder::new(call_id)
    }

    /// The id of the tool call (the provider's id, or one the chat generated).
    pub fn call_id(&self) -> &str {
        &self.inner.call_id
    }

    /// Which run of this call this is: 1 for the first, more when the call runs again after
    /// its worker died or its claim expired (durable chats), or after an answered question.
    /// With [`call_id`](Self::call_id) it makes an idempotency key for the tool's side effects:
    /// the call id alone says "the same call", the pair says "the same attempt".
    ///
    /// ```
    /// use llm_tools_core::{tool, ToolContext};
    ///
    /// /// Charges a card
    /// #[tool]
    /// async fn charge(cents: u64, ctx: &ToolContext) -> String {
    ///     // The payment API drops a second charge with the same key: a call that runs again
    ///     // after a crash charges once.
    ///     let idempotency_key = ctx.call_id().to_owned();
    ///     format!("charged {cents} (key {idempotency_key}, attempt {})", ctx.attempt())
    /// }
    /// ```
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// The tool's own name.
    pub fn tool_name(&self) -> &str {
        &self.inner.tool_name
    }

    /// The tool's namespace, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
    }

    /// The chat's file store ([`Chat::with_file_store`](crate::Chat::with_file_store)), or
    /// `None` when the chat has none or the call runs outside a chat. See [`crate::files`].
    pub fn files(&self) -> Option<&dyn FileStore> {
        self.inner.files.as_deref()
    }

    /// The chat's memory of what the model read of its files (for the chat's file tools).
    pub(crate) fn file_reads(&self) -> Option<&FileReads> {
        self.inner.file_reads.as_ref()
    }

    /// Reports how far the call has got: logged at debug level, and passed to the chat's
    /// [`on_tool_progress`](crate::Chat::on_tool_progress) callbacks and stream. Outside a chat
    /// it is only logged.
    ///
    /// ```
    /// use llm_tools_core::{tool, ToolContext};
    ///
    /// /// Imports the rows of a file
    /// #[tool]
    /// async fn import(rows: u32, ctx: &ToolContext) -> String {
    ///     for row in 1..=rows {
    ///         ctx.report_progress(f64::from(row), Some(f64::from(rows)), None);
    ///     }
    ///     format!("imported {rows} rows")
    /// }
    /// ```
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        tracing::debug!(
            target: "llm_tools::tool",
            call_id = self.inner.call_id.as_str(),
            tool = &*self.inner.tool_name,
            progress,
            total,
            message,
            "tool progress"
        );
        if let Some(report) = &self.inner.progress {
            let tool = match &self.inner.namespace {
                Some(namespace) => format!("{namespace}_{}", self.inner.tool_name),
                None => self.inner.tool_name.to_string(),
            };
            report(&ToolProgress {
                call_id: self.inner.call_id.clone(),
                tool,
                progress,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Asks the user a question: a plain message, or a [`Question`] with form fields (JSON
    /// Schema properties) or a URL to visit.
    ///
    /// In a chat, the first time the call reaches an unanswered question the call pauses: this
    /// returns an input-required [`ToolError`] (propagate it with `?`), the chat lists the
    /// question in `pending_questions`, and once it is answered `complete` runs the tool again
    /// **from the start**; this time `ask` returns the answer. So ask first, then do the work.
    /// A call can ask several questions one after another; each is answered in turn. An
    /// accepted answer has the defaults of the fields it leaves out filled in; one that leaves
    /// a required field out (an MCP client's, which no chat checked) is a recoverable error
    /// naming the fields, so the tool never runs on it.
    ///
    /// Outside a chat ([`ToolContext::detached`]), nobody can answer: `ask` returns the same
    /// input-required [`ToolError`], the call's outcome is `ToolOutcome::Error` with it, and
    /// [`ToolError::question`] gives the question (a test of a tool that asks checks it that
    /// way; no [`Error`](crate::Error) is involved, as nothing but a chat runs the loop).
    pub async fn ask(&self, question: impl Into<Question>) -> Result<Answer, ToolError> {
        self.answer_or_pause(question.into())
    }

    /// Counts the next `n` answers the chat holds for this call as taken: the next
    /// [`ask`](Self::ask) gets the answer after them (or pauses on its question when there is
    /// none). For a task's [`resume`](crate::Tool::resume) that used answers on an earlier
    /// run and does not ask those questions again: a remote job that was sent the first
    /// answers and has moved on to its next question. Keep the count in the task's data.
    ///
    /// ```
    /// use llm_tools_core::{Answer, ToolContext};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = ToolContext::builder("call_1")
    ///     .answers(vec![Answer::accept(json!({"region": "eu"})), Answer::accept(json!({"ok": true}))])
    ///     .build();
    /// ctx.skip_answers(1); // the region went to the job on an earlier poll
    /// let confirmed = ctx.ask("Delete the old backups?").await.unwrap();
    /// assert_eq!(confirmed, Answer::accept(json!({"ok": true})));
    /// assert!(ctx.ask("And the logs?").await.is_err()); // no answer yet: the call pauses
    /// # });
    /// ```
    pub fn skip_answers(&self, n: usize) {
        if let Some(questions) = &self.inner.questions {
            let _ = questions
                .asked
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |asked| {
                    Some(asked.saturating_add(n))
                });
        }
    }

    /// [`ask`](Self::ask)'s work, which waits for nothing: the answer given on an earlier run,
    /// or the question noted and the error that pauses the call.
    fn answer_or_pause(&self, question: Question) -> Result<Answer, ToolError> {
        let Some(questions) = &self.inner.questions else {
            return Err(ToolError::input_required(question));
        };
        let index = questions.asked.fetch_add(1, Ordering::Relaxed);
        if let Some(answer) = questions.answers.get(index) {
            return answer_to(&question, answer);
        }
        let mut pending = questions
            .pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if pending.is_none() {
            *pending = Some(question.clone());
        }
        Err(ToolError::input_required(question))
    }

    /// The question the call asked and that has no answer yet, taken out of the context. The
    /// chat loop calls this after each run of a call: a call with a pending question pauses,
    /// whatever it returned.
    pub fn take_pending_question(&self) -> Option<Question> {
        self.inner.questions.as_ref().and_then(|q| {
            q.pending
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take()
        })
    }
}

/// `answer` as the answer to `question`: an accepted one with the fields it leaves out that
/// have a default filled in, and every required field given, or the error naming the ones
/// missing (an answer that came from elsewhere than a chat's `answer`, which checks it: an
/// MCP client's, a stored one given to a question that has changed).
fn answer_to(question: &Question, answer: &Answer) -> Result<Answer, ToolError> {
    let Answer::Accept { values } = answer else {
        return Ok(answer.clone());
    };
    let mut values = values.clone();
    question.fill_defaults(&mut values);
    question.check_answer(&values).map_err(|missing| {
        ToolError::recoverable(format!(
            "the answer to \"{}\" does not fill the question: {missing}",
            crate::args::shortened(question.message(), crate::args::QUOTED_CHARS)
        ))
    })?;
    Ok(Answer::Accept { values })
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.inner.call_id)
            .field("attempt", &self.inner.attempt)
            .field("tool_name", &self.inner.tool_name)
            .field("namespace", &self.inner.namespace)
            .field("in_chat", &self.inner.questions.is_some())
            .field("has_files", &self.inner.files.is_some())
            .finish()
    }
}

/// Builds a [`ToolContext`].
pub struct ToolContextBuilder {
    call_id: String,
    attempt: u32,
    tool_name: Cow<'static, str>,
    namespace: Option<Cow<'static, str>>,
    answers: Option<Vec<Answer>>,
    files: Option<Arc<dyn FileStore>>,
    file_reads: Option<FileReads>,
    progress: Option<ProgressFn>,
}

impl std::fmt::Debug for ToolContextBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContextBuilder")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("namespace", &self.namespace)
            .field("answers", &self.answers)
            .field("has_files", &self.files.is_some())
            .finish()
    }
}

impl ToolContextBuilder {
    #[inline]
    fn new(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            attempt: 1,
            tool_name: Cow::Borrowed(""),
            namespace: None,
            answers: None,
            files: None,
            file_reads: None,
            progress: None,
        }
    }

    /// Sets the tool's name and namespace.
    #[must_use]
    #[inline]
    pub fn tool(mut self, name: impl Into<String>, namespace: Option<String>) -> Self {
        self.tool_name = Cow::Owned(name.into());
        self.namespace = namespace.map(Cow::Owned);
        self
    }

    /// Sets the tool's name and namespace from its spec, sharing the spec's names when they
    /// are `&'static str`.
    #[must_use]
    pub(crate) fn tool_of(mut self, spec: &ToolSpec) -> Self {
        self.tool_name = spec.name_cow().clone();
        self.namespace = spec.namespace().map(|n| n.name_cow().clone());
        self
    }

    /// Makes the context part of a chat that answers questions: `answers` are the answers given
    /// so far to this call's questions, in the order it asked them. An unanswered question then
    /// pauses the call instead of failing it.
    #[must_use]
    #[inline]
    pub fn answers(mut self, answers: Vec<Answer>) -> Self {
        self.answers = Some(answers);
        self
    }

    /// Sets which run of the call this is (1 for the first; the default).
    #[must_use]
    #[inline]
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt.max(1);
        self
    }

    /// Gives the call the chat's file store.
    #[must_use]
    #[inline]
    pub fn files(mut self, files: Option<Arc<dyn FileStore>>) -> Self {
        self.files = files;
        self
    }

    /// Sends the call's [progress reports](ToolContext::report_progress) to `f`.
    #[must_use]
    #[inline]
    pub fn on_progress(mut self, f: impl Fn(&ToolProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    #[inline]
    pub(crate) fn file_reads(mut self, file_reads: Option<FileReads>) -> Self {
        self.file_reads = file_reads;
        self
    }

    #[inline]
    pub(crate) fn progress(mut self, progress: Option<ProgressFn>) -> Self {
        self.progress = progress;
        self
    }

    /// The context.
    #[inline]
    pub fn build(self) -> ToolContext {
        ToolContext {
            inner: Arc::new(Inner {
                call_id: self.call_id,
                attempt: self.attempt,
                tool_name: self.tool_name,
                namespace: self.namespace,
                questions: self.answers.map(|answers| Questions {
                    answers,
                    asked: AtomicUsize::new(0),
                    pending: Mutex::new(None),
                }),
                files: self.files,
                file_reads: self.file_reads,
                progress: self.progress,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn detached_ask_is_input_required() {
        let ctx = ToolContext::detached("c1");
        let err = ctx.ask("Sure?").await.unwrap_err();
        assert_eq!(err.question().map(Question::message), Some("Sure?"));
        assert!(ctx.take_pending_question().is_none());
    }

    #[tokio::test]
    async fn chat_ask_returns_answers_in_order_then_pauses() {
        let ctx = ToolContext::builder("c1")
            .answers(vec![Answer::accept(json!({"a": 1}))])
            .build();
        assert_eq!(ctx.ask("first").await.unwrap().get("a"), Some(&json!(1)));
        assert!(ctx.ask("second").await.is_err());
        assert_eq!(
            ctx.take_pending_question().map(|q| q.message().to_owned()),
            Some("second".into())
        );
        assert!(ctx.take_pending_question().is_none());
    }
}

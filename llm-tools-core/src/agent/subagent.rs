//! [`AgentTool`]: an agent run as a tool, its chat inside the call.

use std::time::Duration;

use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::definition::Agent;
use super::pauses::{self, Paused};
use crate::chat::nested::Caller;
use crate::chat::{Chat, ChatEvent, Outcome};
use crate::{
    context::ToolContext,
    error::{Error, ToolError},
    future::BoxFuture,
    output::{ToolOutcome, ToolOutput},
    spec::ToolSpec,
    task::{Task, TaskStatus},
    tool::{RawArgs, Tool},
};

tokio::task_local! {
    /// How many sub-agent calls deep the running code is.
    static DEPTH: usize;
}

fn depth_now() -> usize {
    DEPTH.try_with(|d| *d).unwrap_or(0)
}

#[derive(Clone, Copy, Debug)]
enum Input {
    /// `{"input": "…"}`: the text is the sub-agent's message.
    Text,
    /// Typed arguments: their JSON is the sub-agent's message.
    Typed,
}

/// A tool whose call runs an [`Agent`] in a chat of its own (see
/// [sub-agents](super#sub-agents)); made by [`Agent::as_tool`] or [`Agent::as_tool_with`].
pub struct AgentTool {
    agent: Agent,
    spec: ToolSpec,
    input: Input,
    accepted: Vec<String>,
    check: fn(&str, &[&str]) -> Result<(), ToolError>,
}

impl AgentTool {
    pub(crate) fn text(agent: Agent, name: String, description: String) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "What to ask or tell the agent, with everything it needs to know"}
            },
            "required": ["input"]
        });
        Self::build(
            agent,
            name,
            description,
            parameters,
            Input::Text,
            vec!["input".into()],
            |_, _| Ok(()),
        )
    }

    pub(crate) fn typed<A>(agent: Agent, name: String, description: String) -> Self
    where
        A: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        let parameters = crate::schema::schema_for::<A>();
        let accepted = parameters
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        Self::build(
            agent,
            name,
            description,
            parameters,
            Input::Typed,
            accepted,
            // The errors every tool's arguments get: the failing argument named, the model's
            // value quoted cut.
            |raw, accepted| crate::args::decode::<A>(raw, accepted).map(drop),
        )
    }

    fn build(
        agent: Agent,
        name: String,
        description: String,
        parameters: Value,
        input: Input,
        accepted: Vec<String>,
        check: fn(&str, &[&str]) -> Result<(), ToolError>,
    ) -> Self {
        let description = if description.trim().is_empty() {
            agent.description().to_owned()
        } else {
            description
        };
        let output = agent.inner.output.as_ref().map(|o| o.schema().clone());
        let spec = ToolSpec::new(name, description)
            .with_parameters(parameters)
            .with_output_schema(output);
        Self {
            agent,
            spec,
            input,
            accepted,
            check,
        }
    }

    /// Sets the longest a call may run (the sub-agent's whole turn, tools included) before it
    /// is cancelled; the chat's `max_run_time` otherwise.
    #[must_use]
    pub fn with_max_run_time(mut self, max_run_time: Duration) -> Self {
        self.spec = self.spec.with_max_run_time(Some(max_run_time));
        self
    }

    /// The agent the tool runs.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The sub-agent's first message, from the call's arguments.
    fn message(&self, args: RawArgs<'_>) -> Result<String, ToolError> {
        match self.input {
            Input::Text => {
                #[derive(Deserialize)]
                struct Args {
                    input: String,
                }
                let accepted: Vec<&str> = self.accepted.iter().map(String::as_str).collect();
                Ok(args.decode::<Args>(&accepted)?.input)
            }
            Input::Typed => {
                let accepted: Vec<&str> = self.accepted.iter().map(String::as_str).collect();
                (self.check)(args.as_str(), &accepted)?;
                Ok(args.as_str().to_owned())
            }
        }
    }

    async fn run(&self, mut chat: Chat, message: Option<String>, depth: usize) -> ToolOutcome {
        let name = self.spec.name().to_owned();
        let caller = Caller::current();
        let result = DEPTH
            .scope(depth, async {
                match caller.as_ref().filter(|c| c.streaming()) {
                    Some(caller) => forward(&mut chat, message, caller, &name).await,
                    None => match message {
                        Some(message) => chat.ask(message).await,
                        None => chat.complete().await,
                    },
                }
            })
            .await;
        match result {
            Ok(Outcome::Done(answer)) => self.answer(&answer),
            Ok(Outcome::Paused(_)) => self.pause(chat, depth),
            Ok(Outcome::Stopped(reason)) => ToolOutcome::Error(ToolError::recoverable(format!(
                "sub-agent `{name}` stopped before answering: {reason}"
            ))),
            Ok(Outcome::Busy(_)) => ToolOutcome::Error(ToolError::fatal(format!(
                "sub-agent `{name}` reported its chat busy"
            ))),
            Err(Error::RoundsExceeded { rounds }) => {
                ToolOutcome::Error(ToolError::recoverable(format!(
                    "sub-agent `{name}` asked for tools in {rounds} answers in a row without answering (its round budget); ask it something narrower"
                )))
            }
            Err(e) => ToolOutcome::Error(ToolError::fatal(SubAgentFailed {
                agent: name,
                source: e,
            })),
        }
    }

    fn answer(&self, answer: &crate::message::Message) -> ToolOutcome {
        let text = answer.text();
        if self.agent.inner.output.is_some() {
            // The structured answer, as compact JSON (as it came when it is not JSON).
            // Past the value limit it goes on as text: parsing would cost many times its size.
            if crate::json_values::too_many_values(&text).is_none()
                && let Ok(value) = serde_json::from_str::<Value>(&text)
            {
                return match ToolOutput::json(&value) {
                    Ok(out) => ToolOutcome::Output(out),
                    Err(e) => ToolOutcome::Error(e),
                };
            }
        }
        ToolOutcome::Output(ToolOutput::text(text))
    }

    /// The call pauses on a task holding the sub-agent's state.
    fn pause(&self, chat: Chat, depth: usize) -> ToolOutcome {
        let leaves = pauses::list(&chat, &[], &[self.spec.name().to_owned()]);
        let waits_on_person = leaves.iter().any(|p| {
            !matches!(p.reason, crate::chat::PauseReason::Task(ref t) if !t.is_input_required())
        });
        let poll = leaves
            .iter()
            .filter_map(|p| match &p.reason {
                crate::chat::PauseReason::Task(t) => t.poll_interval(),
                _ => None,
            })
            .min();
        let what: Vec<String> = leaves
            .iter()
            .map(|p| format!("{} ({})", p.path_string(), pauses::reason_name(&p.reason)))
            .collect();
        let message = format!("waiting on {}", what.join(", "));
        let status = if waits_on_person {
            TaskStatus::InputRequired
        } else {
            TaskStatus::Working
        };
        let mut task = Task::new(status, Some(message));
        if let Some(poll) = poll {
            task = task.with_poll_interval(poll);
        }
        let paused = Paused {
            agent: self.agent.name().to_owned(),
            depth,
            chat: chat.into_state(),
            settle: Vec::new(),
        };
        match paused.store(&mut task) {
            Ok(()) => ToolOutcome::Task(task),
            Err(e) => ToolOutcome::Error(ToolError::fatal(format!(
                "the sub-agent's state does not serialize: {e}"
            ))),
        }
    }

    fn restore(&self, task: &Task) -> Result<(Chat, Paused), ToolError> {
        let paused = match Paused::of(task) {
            Some(Ok(paused)) => paused,
            Some(Err(e)) => {
                return Err(ToolError::fatal(format!(
                    "the paused sub-agent's state does not decode: {e}"
                )));
            }
            None => {
                return Err(ToolError::fatal(
                    "the paused call's task holds no sub-agent state",
                ));
            }
        };
        let chat = self
            .agent
            .chat_from_state(paused.chat.clone())
            .map_err(|e| {
                ToolError::fatal(SubAgentFailed {
                    agent: self.spec.name().to_owned(),
                    source: e,
                })
            })?;
        Ok((chat, paused))
    }
}

/// Runs the sub-agent's turn streamed, putting each of its events on the caller's stream
/// under the tool's name.
async fn forward(
    chat: &mut Chat,
    message: Option<String>,
    caller: &Caller,
    name: &str,
) -> Result<Outcome, Error> {
    let mut events = match message {
        Some(message) => chat.ask_stream(message),
        None => chat.complete_stream(),
    };
    let mut outcome = None;
    while let Some(event) = events.next().await {
        let event = event?;
        match &event {
            ChatEvent::Done(m) => outcome = Some(Outcome::Done(m.clone())),
            ChatEvent::Paused(p) => outcome = Some(Outcome::Paused(p.clone())),
            ChatEvent::Busy(b) => outcome = Some(Outcome::Busy(b.clone())),
            ChatEvent::Stopped(r) => outcome = Some(Outcome::Stopped(r.clone())),
            _ => {}
        }
        let (path, event) = match event {
            ChatEvent::Agent { mut path, event } => {
                path.insert(0, name.to_owned());
                (path, event)
            }
            event => (vec![name.to_owned()], Box::new(event)),
        };
        caller.emit(|| ChatEvent::Agent { path, event });
    }
    outcome.ok_or_else(|| Error::NoAnswer("the sub-agent's stream ended without an outcome".into()))
}

/// A sub-agent's fatal error, as its call's fatal error.
#[derive(Debug, thiserror::Error)]
#[error("sub-agent `{agent}` failed: {source}")]
struct SubAgentFailed {
    agent: String,
    #[source]
    source: Error,
}

impl Agent {
    /// This agent as a tool named `name`: its call runs the agent on the model's `input` (a
    /// string) and returns its answer. An empty `description` takes the agent's.
    ///
    /// ```
    /// use llm_tools_core::agent::Agent;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let researcher = Agent::new("researcher", ScriptedProvider::new().then_text("Ruby dates from 1995."))
    ///     .with_instructions("Research the topic; answer in one paragraph.");
    /// let model = ScriptedProvider::new()
    ///     .then_call("researcher", json!({"input": "When was Ruby made?"}))
    ///     .then_text("1995.");
    /// let mut chat = Agent::new("lead", model)
    ///     .with_tools(researcher.as_tool("researcher", "Researches a topic"))
    ///     .chat()?;
    /// assert_eq!(chat.ask("When was Ruby made?").await?.text().as_deref(), Some("1995."));
    /// assert_eq!(chat.messages()[2].text(), "Ruby dates from 1995.");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> AgentTool {
        AgentTool::text(self.clone(), name.into(), description.into())
    }

    /// This agent as a tool whose arguments are `A` (its JSON Schema is the tool's): the
    /// arguments, checked against `A`, are the sub-agent's message as JSON.
    pub fn as_tool_with<A>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> AgentTool
    where
        A: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        AgentTool::typed::<A>(self.clone(), name.into(), description.into())
    }
}

impl Tool for AgentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let depth = depth_now() + 1;
            if depth > self.agent.max_depth() {
                return ToolOutcome::Error(ToolError::recoverable(format!(
                    "sub-agent `{}` cannot run {depth} levels deep (its limit is {}); answer without it",
                    self.spec.name(),
                    self.agent.max_depth()
                )));
            }
            let message = match self.message(args) {
                Ok(message) => message,
                Err(e) => return ToolOutcome::Error(e),
            };
            let chat = match self.agent.chat() {
                Ok(chat) => chat,
                Err(e) => {
                    return ToolOutcome::Error(ToolError::fatal(SubAgentFailed {
                        agent: self.spec.name().to_owned(),
                        source: e,
                    }));
                }
            };
            self.run(chat, Some(message), depth).await
        })
    }

    fn resume<'a>(
        &'a self,
        task: Task,
        _args: RawArgs<'a>,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let (mut chat, paused) = match self.restore(&task) {
                Ok(restored) => restored,
                Err(e) => return ToolOutcome::Error(e),
            };
            for settlement in paused.settle {
                if let Err(e) = pauses::apply(&mut chat, &settlement) {
                    return ToolOutcome::Error(ToolError::fatal(SubAgentFailed {
                        agent: self.spec.name().to_owned(),
                        source: e,
                    }));
                }
            }
            self.run(chat, None, paused.depth).await
        })
    }

    fn cancel<'a>(
        &'a self,
        task: Task,
        _args: RawArgs<'a>,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            match self.restore(&task) {
                Ok((mut chat, paused)) => {
                    if let Err(e) = DEPTH.scope(paused.depth, chat.cancel()).await {
                        tracing::warn!(error = %e, "could not cancel a paused sub-agent");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not cancel a paused sub-agent"),
            }
        })
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.spec.name())
            .field("agent", &self.agent.name())
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

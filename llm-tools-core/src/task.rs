//! [`Task`]: what a tool returns to pause its call.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Returned by a tool to pause its call: the work goes on elsewhere (a job queue, another agent,
/// a person) and the chat returns without a new model request. Each `complete` of the chat calls
/// the tool's `resume` with the task and the call's arguments; `resume` returns the call's
/// result, or the task again to keep waiting.
///
/// What `resume` needs goes with the task as JSON, so the chat's state (task included) can be
/// saved in one process and resumed in another: a typed state ([`Task::with_state`], read back
/// with [`Task::state`]) or loose entries ([`Task::with_data`]).
///
/// ```
/// use llm_tools_core::{Task, TaskStatus};
/// use serde_json::json;
///
/// let task = Task::input_required("Waiting for approval").with_data("run_id", json!(42));
/// assert_eq!(task.status(), TaskStatus::InputRequired);
/// assert_eq!(task.get("run_id"), Some(&json!(42)));
/// ```
///
/// A typed state, for a tool whose `resume` and `cancel` read their own type:
///
/// ```
/// use llm_tools_core::Task;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Debug, PartialEq)]
/// struct Export { job_id: u64, pages_done: u32 }
///
/// let task = Task::working("Exporting").with_state(&Export { job_id: 7, pages_done: 0 })?;
/// // … saved with the chat, loaded in another process …
/// let export: Export = task.state()?;
/// assert_eq!(export, Export { job_id: 7, pages_done: 0 });
/// # Ok::<_, llm_tools_core::TaskStateError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    data: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_millis"
    )]
    poll_interval: Option<Duration>,
}

/// Where a paused call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The work runs on its own; check again after the poll interval.
    Working,
    /// The work waits on a person; nothing changes until they act.
    InputRequired,
}

impl Task {
    /// A task whose work runs on its own.
    pub fn working(status_message: impl Into<String>) -> Self {
        Self::new(TaskStatus::Working, Some(status_message.into()))
    }

    /// A task that waits on a person.
    pub fn input_required(status_message: impl Into<String>) -> Self {
        Self::new(TaskStatus::InputRequired, Some(status_message.into()))
    }

    /// A task with the given status and optional message.
    pub fn new(status: TaskStatus, status_message: Option<String>) -> Self {
        Self {
            status,
            status_message,
            data: Map::new(),
            state: None,
            poll_interval: None,
        }
    }

    /// Adds one entry to the task's data.
    #[must_use]
    pub fn with_data(mut self, key: impl Into<String>, value: Value) -> Self {
        self.data.insert(key.into(), value);
        self
    }

    /// Replaces the task's data.
    #[must_use]
    pub fn with_data_map(mut self, data: Map<String, Value>) -> Self {
        self.data = data;
        self
    }

    /// Sets the task's typed state: any serde type, stored as JSON with the chat. Read it back
    /// with [`Task::state`]. Fails only when `state` cannot be written as JSON (a map whose keys
    /// are not strings); `?` in a tool makes that a fatal error of the call.
    pub fn with_state<T: Serialize + ?Sized>(mut self, state: &T) -> Result<Self, TaskStateError> {
        let value = serde_json::to_value(state).map_err(|e| TaskStateError {
            type_name: std::any::type_name::<T>(),
            action: "written as JSON",
            reason: e.to_string(),
        })?;
        self.state = Some(value);
        Ok(self)
    }

    /// The task's typed state, as set by [`Task::with_state`]. A state that is missing or does
    /// not decode as `T` (written by another version of the tool, or edited in the store) is a
    /// [`TaskStateError`] naming the type; `?` in a tool's `resume` makes it a fatal error of the
    /// call, which the caller gets as [`Error::ToolFailed`](crate::Error::ToolFailed) naming the
    /// tool and the call.
    pub fn state<T: serde::de::DeserializeOwned>(&self) -> Result<T, TaskStateError> {
        let error = |reason: String| TaskStateError {
            type_name: std::any::type_name::<T>(),
            action: "read",
            reason,
        };
        let value = self
            .state
            .as_ref()
            .ok_or_else(|| error("the task has no state".to_owned()))?;
        T::deserialize(value).map_err(|e| error(e.to_string()))
    }

    /// The task's typed state as stored, if it has one.
    pub fn raw_state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// Sets how long to wait before checking a working task again.
    #[must_use]
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }

    /// Changes the status.
    #[must_use]
    pub fn with_status(mut self, status: TaskStatus, status_message: Option<String>) -> Self {
        self.status = status;
        self.status_message = status_message;
        self
    }

    /// The status.
    pub fn status(&self) -> TaskStatus {
        self.status
    }

    /// Whether the task waits on a person.
    pub fn is_input_required(&self) -> bool {
        self.status == TaskStatus::InputRequired
    }

    /// The status message, if any.
    pub fn status_message(&self) -> Option<&str> {
        self.status_message.as_deref()
    }

    /// The task's data.
    pub fn data(&self) -> &Map<String, Value> {
        &self.data
    }

    /// The task's data, to change it before returning the task again.
    pub fn data_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.data
    }

    /// One entry of the task's data.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.get(key)
    }

    /// How long to wait before checking a working task again.
    pub fn poll_interval(&self) -> Option<Duration> {
        self.poll_interval
    }
}

/// A task's typed state could not be written or read as the type asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the task's state could not be {action} as `{type_name}`: {reason}")]
pub struct TaskStateError {
    type_name: &'static str,
    action: &'static str,
    reason: String,
}

impl TaskStateError {
    /// The Rust type the state was written or read as.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// Why it failed, as serde says.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

mod duration_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_round_trips_through_json() {
        let task = Task::working("Rendering")
            .with_data("job", serde_json::json!("j-1"))
            .with_poll_interval(Duration::from_millis(1500));
        let json = serde_json::to_value(&task).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"status": "working", "status_message": "Rendering", "data": {"job": "j-1"}, "poll_interval": 1500})
        );
        assert_eq!(serde_json::from_value::<Task>(json).unwrap(), task);
    }
}

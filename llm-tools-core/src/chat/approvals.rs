//! Approvals bound to what was approved.
//!
//! A call of a tool that needs approval ([`Tool::needs_approval`](crate::Tool::needs_approval))
//! waits until it is approved or denied: by a person ([`Chat::approve`](super::Chat::approve),
//! [`approve_with`](super::Chat::approve_with), [`deny`](super::Chat::deny)), by a rule
//! remembered from an earlier decision ([`approve_always`](super::Chat::approve_always) and its
//! narrower forms, [`deny_always`](super::Chat::deny_always)), or by the application's
//! [resolver](super::Chat::with_approval_resolver).
//!
//! **An approval covers the arguments approved.** The chat keeps, with the call (and in its
//! store), the arguments each approval was given for. When the arguments change afterwards (an
//! `on_tool_call` hook rewrites them, or the stored call was changed), the call needs approval
//! again, unless a remembered rule or the resolver covers the new arguments. Arguments are
//! compared as JSON values, so key order and spacing do not matter. The tool's own rule
//! ([`Tool::needs_approval`](crate::Tool::needs_approval)) is asked again as the arguments
//! stand before a call runs: a rewrite into arguments the rule gates, or a call taken before
//! its tool was registered, waits for approval too.
//!
//! **What a remembered rule covers**, exactly: the calls of one tool, by namespace and name
//! (not by the name the model used), later in the chat and the other calls of the round that
//! waits, with
//! - [`approve_always`](super::Chat::approve_always): any arguments;
//! - [`approve_always_matching`](super::Chat::approve_always_matching): arguments holding each
//!   of the given fields with the given JSON value (stored in the chat's state: it holds in
//!   every process that loads the chat);
//! - [`approve_always_if`](super::Chat::approve_always_if): arguments a named predicate
//!   accepts. A closure cannot be stored: the state keeps the rule with the predicate's name,
//!   and the closure lives in this chat value. A chat loaded elsewhere holds the rule but it
//!   covers nothing (calls wait for approval as if it were not there: it fails closed) until
//!   the predicate is registered again under its name with
//!   [`with_approval_predicate`](super::Chat::with_approval_predicate). A predicate that
//!   panics accepts nothing.
//!
//! [`deny_always`](super::Chat::deny_always) covers every call of the tool. When rules overlap,
//! the latest decision wins. [`forget_decisions`](super::Chat::forget_decisions) drops them all.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::Chat;
use super::callbacks::ApprovalPredicate;
use super::hooks::{self, Decision};
use super::ledger::{CallState, Entry};
use super::registry::Registry;
use super::state::Remembered;
use crate::json_values::too_many_values;
use crate::{error::Error, message::ToolCall};

/// Whether two JSON argument texts hold the same value. Texts past the value limit
/// ([`MAX_JSON_VALUES`](crate::json_values::MAX_JSON_VALUES)) are compared as text only, and
/// values holding a number that reads as a float of 2⁵³ or more only as text too
/// ([`inexact`]).
pub(crate) fn same_arguments(a: &str, b: &str) -> bool {
    a == b
        || (too_many_values(a).is_none() && too_many_values(b).is_none())
            && matches!(
                (serde_json::from_str::<Value>(a), serde_json::from_str::<Value>(b)),
                (Ok(x), Ok(y)) if x == y && !inexact(&x)
            )
}

/// Whether `value` holds a number its parse may have rounded: one read as a float whose
/// magnitude is 2⁵³ or more, where not every integer has a float of its own. An integer past
/// `u64` (`100000000000000000001`) reads as the float of `100000000000000000000`, while a tool
/// taking a `u128` reads each exactly: two such values that compare equal may be different
/// arguments, so a comparison for an approval fails closed on them.
fn inexact(value: &Value) -> bool {
    const EXACT_BELOW: f64 = 9_007_199_254_740_992.0; // 2⁵³
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Number(n) if n.is_f64() && n.as_f64().is_none_or(|f| f.abs() >= EXACT_BELOW) => {
                return true;
            }
            Value::Array(items) => pending.extend(items),
            Value::Object(fields) => pending.extend(fields.values()),
            _ => {}
        }
    }
    false
}

/// The tool a call is of, as a rule names it: namespace and name.
fn key(registry: &Registry, call: &ToolCall) -> (Option<String>, String) {
    registry.find(call).map_or_else(
        || (call.namespace.clone(), call.name.clone()),
        |tool| {
            let spec = tool.spec();
            (
                spec.namespace().map(|n| n.name().to_owned()),
                spec.name().to_owned(),
            )
        },
    )
}

/// Whether `rule` covers a call with these arguments (its tool already matched).
fn covers(
    rule: &Remembered,
    arguments: &str,
    predicates: &HashMap<String, ApprovalPredicate>,
) -> bool {
    if !rule.approved || (rule.matching.is_none() && rule.predicate.is_none()) {
        return true;
    }
    // Arguments past the value limit are covered by no rule with conditions: the call is asked.
    if too_many_values(arguments).is_some() {
        return false;
    }
    let Ok(args) = serde_json::from_str::<Value>(arguments) else {
        return false;
    };
    let fields_match = match &rule.matching {
        None => true,
        Some(Value::Object(fields)) => fields
            .iter()
            .all(|(k, v)| args.get(k) == Some(v) && !inexact(v)),
        // Only an object of fields is a condition (`approve_always_matching` takes no other);
        // anything else read from a store covers nothing.
        Some(_) => false,
    };
    if !fields_match {
        return false;
    }
    match &rule.predicate {
        None => true,
        Some(name) => predicates.get(name).is_some_and(|f| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&args))).unwrap_or(false)
        }),
    }
}

/// Whether `tool` says `call` needs approval; a tool that panics deciding says it does.
pub(crate) fn tool_needs_approval(tool: &dyn crate::tool::Tool, call: &ToolCall) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.needs_approval(call)))
        .unwrap_or(true)
}

/// Whether `call` goes through the approval gate: its tool says it needs approval, or a
/// remembered denial covers it (`deny_always` covers every call of the tool, those the tool's
/// own rule would let through included).
pub(crate) fn is_gated(
    tool: &dyn crate::tool::Tool,
    call: &ToolCall,
    decisions: &[Remembered],
    predicates: &HashMap<String, ApprovalPredicate>,
    registry: &Registry,
) -> bool {
    tool_needs_approval(tool, call)
        || remembered(decisions, predicates, registry, call).is_some_and(|d| !d.approved)
}

/// What the approval of a gated call about to run says.
pub(crate) enum Gate {
    /// Approved for these arguments (by a person or a rule): it runs.
    Runs,
    /// A remembered denial covers it: its result is this text.
    Denied(String),
    /// Nothing covers these arguments: it waits for approval.
    Waits,
}

/// Checks a gated call about to run: its approval covers its arguments, or a remembered rule
/// does now (an approval is then bound to them).
pub(crate) fn gate(
    entry: &mut Entry,
    call: &ToolCall,
    decisions: &[Remembered],
    predicates: &HashMap<String, ApprovalPredicate>,
    registry: &Registry,
) -> Gate {
    let bound = entry
        .approved
        .as_deref()
        .is_some_and(|a| same_arguments(a, &call.arguments));
    if bound {
        return Gate::Runs;
    }
    match remembered(decisions, predicates, registry, call) {
        Some(d) if d.approved => {
            entry.approved = Some(call.arguments.clone());
            entry.dirty = true;
            Gate::Runs
        }
        Some(d) => Gate::Denied(super::calls::denied(
            &call.joined_name(),
            d.reason.as_deref(),
        )),
        None => Gate::Waits,
    }
}

/// The latest remembered rule that covers `call`, if any.
pub(crate) fn remembered<'a>(
    decisions: &'a [Remembered],
    predicates: &HashMap<String, ApprovalPredicate>,
    registry: &Registry,
    call: &ToolCall,
) -> Option<&'a Remembered> {
    if decisions.is_empty() {
        return None;
    }
    let (namespace, name) = key(registry, call);
    decisions.iter().rev().find(|d| {
        d.name == name && d.namespace == namespace && covers(d, &call.arguments, predicates)
    })
}

/// Checks `value` against a JSON schema: types, `enum`, `const`, number bounds, `required`,
/// `properties`,
/// `additionalProperties: false`, `items`, `anyOf`/`oneOf`. `$ref` and the keywords not
/// listed are not checked. Returns where and why it does not fit.
pub(crate) fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "arguments")
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return Err(format!(
            "{at} is {value}, not one of {}",
            Value::from(options.clone())
        ));
    }
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        return Err(format!("{at} is {value}, not {expected}"));
    }
    if let Some(types) = schema.get("type") {
        let names: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|t| is_type(value, t)) {
            return Err(format!("{at} should be of type {}", names.join(" or ")));
        }
    }
    if let Some(n) = value.as_f64() {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        if let Some(min) = bound("minimum").filter(|&min| n < min) {
            return Err(format!("{at} is {value}, below its minimum {min}"));
        }
        if let Some(max) = bound("maximum").filter(|&max| n > max) {
            return Err(format!("{at} is {value}, above its maximum {max}"));
        }
        if let Some(min) = bound("exclusiveMinimum").filter(|&min| n <= min) {
            return Err(format!("{at} is {value}, not above {min}"));
        }
        if let Some(max) = bound("exclusiveMaximum").filter(|&max| n >= max) {
            return Err(format!("{at} is {value}, not below {max}"));
        }
    }
    for any in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(any).and_then(Value::as_array)
            && !options.is_empty()
            && !options.iter().any(|s| check(s, value, at).is_ok())
        {
            return Err(format!("{at} fits none of the schemas it may take"));
        }
    }
    if let Value::Object(fields) = value {
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    return Err(format!("{at} lacks the required field `{name}`"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, field) in fields {
            match properties.and_then(|p| p.get(name)) {
                Some(s) => check(s, field, &format!("`{name}`"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at} has the unknown field `{name}`"));
                }
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(s)) = (value, schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(s, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

/// A rule to remember with a decision: `None` fields cover any arguments.
#[derive(Default)]
pub(crate) struct Rule {
    pub(crate) matching: Option<Value>,
    pub(crate) predicate: Option<String>,
}

impl Chat {
    /// Whether calls wait for approvals.
    pub fn awaiting_approval(&self) -> bool {
        self.entries()
            .any(|(s, _)| matches!(s.state, CallState::AwaitingApproval))
    }

    /// The calls waiting for approvals, in call order.
    pub fn pending_approvals(&self) -> Vec<&ToolCall> {
        self.entries()
            .filter(|(e, _)| matches!(e.state, CallState::AwaitingApproval))
            .map(|(_, call)| call)
            .collect()
    }

    /// Approves a call: it runs at the next `complete`. Fails with
    /// [`Error::ToolNotRegistered`], the call still waiting, when the chat does not have the
    /// call's tool (a durable chat loaded without `with_tools`): register it first. (A denial
    /// needs no tool.)
    ///
    /// ```
    /// use llm_tools_core::tool;
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// /// Drops a database table
    /// #[tool(needs_approval)]
    /// async fn drop_table(table: String) -> String { format!("dropped {table}") }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new()
    ///     .then_calls([("drop_table", json!({"table": "sessions"})), ("drop_table", json!({"table": "users"}))])
    ///     .then_text("Dropped sessions only.");
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(DropTable)?;
    /// assert!(chat.ask("Drop both tables").await?.is_paused()); // nothing ran yet
    ///
    /// let ids: Vec<String> = chat.pending_approvals().iter().map(|c| c.id.clone()).collect();
    /// chat.approve(&ids[0])?;
    /// chat.deny(&ids[1], "users holds customer data")?;
    /// let _ = chat.complete().await?;
    /// assert_eq!(chat.messages()[2].text(), "dropped sessions");
    /// assert!(chat.messages()[3].is_error);
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn approve(&mut self, call_id: &str) -> Result<&mut Self, Error> {
        self.decide(call_id, None, None)
    }

    /// Denies a call: the model gets the denial (with `reason`, if not empty) as an error result
    /// at the next `complete`.
    pub fn deny(&mut self, call_id: &str, reason: impl Into<String>) -> Result<&mut Self, Error> {
        self.decide(call_id, Some(reason.into()), None)
    }

    /// Forgets the approvals given "always" (remembered denials stay): after a handoff, the
    /// tools are another agent's, and one of the same name is another tool, asked about anew.
    pub(crate) fn forget_remembered_approvals(&mut self) {
        self.state.decisions.retain(|rule| !rule.approved);
    }

    /// Approves a call, and remembers to approve every later call of the same tool, whatever
    /// its arguments, for the rest of the chat (the rule is stored with its state), or until
    /// the chat is handed to another agent (whose tool of that name is another tool). The tool
    /// is named by namespace and name; the round's other calls of it waiting for approval are
    /// approved too. For a narrower rule see
    /// [`approve_always_matching`](Self::approve_always_matching) and
    /// [`approve_always_if`](Self::approve_always_if).
    pub fn approve_always(&mut self, call_id: &str) -> Result<&mut Self, Error> {
        self.decide(call_id, None, Some(Rule::default()))
    }

    /// Denies a call and every later call of the same tool (by namespace and name, whatever
    /// the arguments), for the rest of the chat.
    pub fn deny_always(
        &mut self,
        call_id: &str,
        reason: impl Into<String>,
    ) -> Result<&mut Self, Error> {
        self.decide(call_id, Some(reason.into()), Some(Rule::default()))
    }

    /// Forgets the decisions remembered by `approve_always` and `deny_always`.
    pub fn forget_decisions(&mut self) -> &mut Self {
        self.state.decisions.clear();
        self
    }

    /// Decides the call waiting for approval with this id; with a `rule`, remembers the
    /// decision for the later calls of its tool the rule covers (and decides the round's other
    /// waiting calls it covers).
    fn decide(
        &mut self,
        call_id: &str,
        denial: Option<String>,
        rule: Option<Rule>,
    ) -> Result<&mut Self, Error> {
        let index = self.waiting(call_id, "an approval", |s| {
            matches!(s, CallState::AwaitingApproval)
        })?;
        if denial.is_none() {
            self.tool_registered(index)?;
        }
        let Some(round) = &mut self.state.round else {
            return Ok(self);
        };
        let calls = &self.state.messages[round.message].tool_calls;
        let Some(call) = calls.get(index) else {
            return Ok(self);
        };
        round.decide(index, denial.as_deref(), &call.arguments);
        // A person decided: the model's rounds in a row count afresh.
        self.state.tool_rounds = 0;
        let Some(rule) = rule else {
            return Ok(self);
        };
        let (namespace, name) = self.registry.find(call).map_or_else(
            || (call.namespace.clone(), call.name.clone()),
            |tool| {
                let spec = tool.spec();
                (
                    spec.namespace().map(|n| n.name().to_owned()),
                    spec.name().to_owned(),
                )
            },
        );
        let remembered = Remembered {
            namespace,
            name,
            approved: denial.is_none(),
            reason: denial.filter(|r| !r.trim().is_empty()),
            matching: rule.matching,
            predicate: rule.predicate,
        };
        // A rule for the whole tool replaces every rule of the tool; a narrower one, the same
        // narrower rule.
        let whole = remembered.matching.is_none() && remembered.predicate.is_none();
        self.state.decisions.retain(|d| {
            !((d.namespace.as_ref(), &d.name) == (remembered.namespace.as_ref(), &remembered.name)
                && (whole
                    || (d.matching == remembered.matching && d.predicate == remembered.predicate)))
        });
        self.state.decisions.push(remembered.clone());
        let decisions = std::slice::from_ref(&remembered);
        for (other_index, other) in calls.iter().enumerate() {
            if let Some(d) = self::remembered(
                decisions,
                &self.callbacks.approval_predicates,
                &self.registry,
                other,
            ) {
                round.decide(
                    other_index,
                    d.reason.as_deref().or((!d.approved).then_some("")),
                    &other.arguments,
                );
            }
        }
        Ok(self)
    }

    /// The entry of a new call whose tool needs approval: approved or denied by a remembered
    /// rule (the approval bound to its arguments), or waiting.
    pub(crate) fn gated_entry(&self, call: &ToolCall) -> Entry {
        let rule = remembered(
            &self.state.decisions,
            &self.callbacks.approval_predicates,
            &self.registry,
            call,
        );
        let mut entry = Entry::new(
            call.id.as_str(),
            match rule {
                None => CallState::AwaitingApproval,
                Some(d) if d.approved => CallState::Ready,
                Some(d) => CallState::Denied {
                    reason: d.reason.clone(),
                },
            },
        );
        entry.gated = true;
        if matches!(entry.state, CallState::Ready) {
            entry.approved = Some(call.arguments.clone());
        }
        entry
    }

    /// Approves a call with edited arguments: they replace the model's in the transcript and
    /// the approval is bound to them. They must fit the tool's parameter schema: when they do
    /// not, this fails with [`Error::InvalidAnswer`] saying where, and the call still waits
    /// for approval. Fails like [`approve`](Self::approve) otherwise.
    ///
    /// ```
    /// use llm_tools_core::tool;
    /// use llm_tools_core::chat::Chat;
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// /// Sends money
    /// #[tool(needs_approval)]
    /// async fn transfer(to: String, cents: u64) -> String { format!("sent {cents} to {to}") }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new()
    ///     .then_calls([("transfer", json!({"to": "bob", "cents": 100000}))])
    ///     .then_text("Sent.");
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(Transfer)?;
    /// assert!(chat.ask("Pay Bob").await?.is_paused());
    /// let id = chat.pending_approvals()[0].id.clone();
    /// assert!(chat.approve_with(&id, json!({"to": "bob", "cents": "lots"})).is_err());
    /// chat.approve_with(&id, json!({"to": "bob", "cents": 1000}))?;
    /// assert!(chat.complete().await?.text().is_some());
    /// assert_eq!(chat.messages()[2].text(), "sent 1000 to bob");
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn approve_with(&mut self, call_id: &str, arguments: Value) -> Result<&mut Self, Error> {
        let index = self.waiting(call_id, "an approval", |s| {
            matches!(s, CallState::AwaitingApproval)
        })?;
        self.tool_registered(index)?;
        let Some(round) = self.state.round.as_mut() else {
            return Ok(self);
        };
        let message = round.message;
        let Some(call) = self.state.messages[message].tool_calls.get_mut(index) else {
            return Ok(self);
        };
        let invalid = |message: String| Error::InvalidAnswer {
            call_id: call_id.to_owned(),
            message: format!("{message}; the call still waits for approval"),
        };
        if !arguments.is_object() {
            return Err(invalid("the arguments must be one JSON object".into()));
        }
        if let Some(tool) = self.registry.find(call) {
            validate(tool.spec().parameters(), &arguments).map_err(|m| {
                invalid(format!(
                    "the arguments do not fit the schema of `{}`: {m}",
                    call.joined_name()
                ))
            })?;
        }
        call.arguments = arguments.to_string();
        round.decide(index, None, &call.arguments);
        self.state.tool_rounds = 0;
        self.message_changed(message);
        Ok(self)
    }

    /// Approves a call, and remembers to approve every later call of the same tool (by
    /// namespace and name) whose arguments hold each field of `fields` with the same JSON
    /// value; the calls of this round it covers are approved too. The rule is stored with the
    /// chat's state. `fields` must be a JSON object. A field holding a number that JSON reads
    /// only roughly (an integer past `u64`, any number of 2⁵³ or more read as a float) matches
    /// nothing: those calls wait for a person.
    pub fn approve_always_matching(
        &mut self,
        call_id: &str,
        fields: Value,
    ) -> Result<&mut Self, Error> {
        if !fields.is_object() {
            return Err(Error::InvalidAnswer {
                call_id: call_id.to_owned(),
                message: "the fields to match must be one JSON object".into(),
            });
        }
        self.decide(
            call_id,
            None,
            Some(Rule {
                matching: Some(fields),
                predicate: None,
            }),
        )
    }

    /// Approves a call, and remembers to approve every later call of the same tool whose
    /// arguments `predicate` accepts (registered under `name`, as with
    /// [`with_approval_predicate`](Self::with_approval_predicate)). The state stores the rule
    /// with the predicate's name only: in a chat loaded from a store the rule covers nothing
    /// until the predicate is registered again under that name. When the call cannot be
    /// approved (it waits for nothing, its tool is not registered), nothing changes: the
    /// predicate registered under `name` before, if any, stays.
    pub fn approve_always_if(
        &mut self,
        call_id: &str,
        name: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Result<&mut Self, Error> {
        let name = name.into();
        // Registered first: the decision approves the round's other calls it covers.
        let before = self
            .callbacks
            .approval_predicates
            .insert(name.clone(), Arc::new(predicate));
        let rule = Rule {
            matching: None,
            predicate: Some(name.clone()),
        };
        if let Err(error) = self.decide(call_id, None, Some(rule)) {
            match before {
                Some(before) => self.callbacks.approval_predicates.insert(name, before),
                None => self.callbacks.approval_predicates.remove(&name),
            };
            return Err(error);
        }
        Ok(self)
    }

    /// Registers the argument predicate of `approve_always_if` rules named `name` (a chat
    /// loaded from a store gets its rules back, not their closures).
    pub fn with_approval_predicate(
        &mut self,
        name: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.callbacks
            .approval_predicates
            .insert(name.into(), Arc::new(predicate));
        self
    }

    /// Lets `resolver` decide the calls that need approval before a person is asked: it
    /// approves (bound to the call's arguments), denies with a reason the model reads, or asks
    /// a person ([`Decision::Ask`]: the call stays in `pending_approvals`). It runs at each
    /// `complete` (and `step`) for every call waiting for approval, and when a hook rewrites
    /// an approved call. It is bounded by [`with_hook_timeout`](Self::with_hook_timeout); a
    /// resolver that panics or runs out of time asks a person. Like callbacks, it is code: set
    /// it again on a chat loaded from a store.
    ///
    /// ```
    /// use llm_tools_core::tool;
    /// use llm_tools_core::chat::{Chat, Decision};
    /// use llm_tools_core::testing::ScriptedProvider;
    /// use serde_json::json;
    ///
    /// /// Drops a database table
    /// #[tool(needs_approval)]
    /// async fn drop_table(table: String) -> String { format!("dropped {table}") }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new()
    ///     .then_calls([("drop_table", json!({"table": "tmp_1"})), ("drop_table", json!({"table": "users"}))])
    ///     .then_text("Done.");
    /// let mut chat = Chat::new(model);
    /// chat.with_tools(DropTable)?;
    /// chat.with_approval_resolver(|call| async move {
    ///     let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    ///     match args["table"].as_str() {
    ///         Some(t) if t.starts_with("tmp_") => Decision::Approve,
    ///         _ => Decision::Ask,
    ///     }
    /// });
    /// assert!(chat.ask("Clean up").await?.is_paused());
    /// assert_eq!(chat.messages()[2].text(), "dropped tmp_1");
    /// assert_eq!(chat.pending_approvals().len(), 1); // `users` waits for a person
    /// # Ok::<_, llm_tools_core::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_approval_resolver<F, Fut>(&mut self, resolver: F) -> &mut Self
    where
        F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        self.callbacks.resolver = Some(hooks::boxed_resolver(resolver));
        self
    }

    /// How long each hook, the approval resolver and the prepare-request hook may take (30
    /// seconds by default). A call hook that runs out of time vetoes its call, a result hook
    /// stops the turn, the resolver asks a person, the prepare-request hook is an error with
    /// nothing sent.
    pub fn with_hook_timeout(&mut self, limit: std::time::Duration) -> &mut Self {
        self.callbacks.hook_timeout = Some(limit);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_values::MAX_JSON_VALUES;

    /// Arguments alike but for spacing are the same; past the value limit only the same text
    /// is, as parsing them would cost many times their size.
    #[test]
    fn arguments_past_the_value_limit_are_compared_as_text() {
        assert!(same_arguments(r#"{"a": 1}"#, r#"{"a":1}"#));
        let values = "0,".repeat(MAX_JSON_VALUES);
        let dense = format!(r#"{{"a":[{values}0]}}"#);
        let spaced = format!(r#"{{"a": [{values}0]}}"#);
        assert!(same_arguments(&dense, &dense));
        assert!(!same_arguments(&dense, &spaced));
    }
}

//! The loop itself: requests, answers, rounds, the round budget.

use futures::StreamExt as _;
use tracing::Instrument as _;

use super::Chat;
use super::approvals;
use super::calls;
use super::ledger::{CallState, Entry, Ledger};
use super::outcome::{Busy, Outcome, Step};
use super::registry::Search;
use super::retries;
use super::round::Settled;
use super::search;
use super::stream::{ChatEvent, Sink, emit};
use crate::{
    error::{Error, ProviderError, ProviderErrorKind},
    message::{Message, Role},
    provider::{Request, Response, StreamEvent, ToolChoice},
};

/// What one request came to.
enum Sent {
    /// The model answered; `calls`: its answer asks for tools.
    Answered { calls: bool },
    /// Nothing was sent: the request would pass this budget.
    Stopped(super::stop::StopReason),
}

impl Chat {
    /// Runs until the model answers without tools, a call pauses, or the round budget is used:
    /// one turn, closed when it returns, however it ends.
    pub(crate) async fn run(&mut self, sink: Option<&Sink>) -> Result<Outcome, Error> {
        let outcome = self.run_turn(sink).await;
        self.turn.open = false;
        // A cancellation that came while the turn ran is the turn's, even when the turn ended
        // another way (a hook's stop, a pause, a fatal error) before it saw it: none is left to
        // cancel the next turn at once.
        let _ = self.cancel.take();
        outcome
    }

    async fn run_turn(&mut self, sink: Option<&Sink>) -> Result<Outcome, Error> {
        // This turn's rounds (what round conditions see), and the rounds in a row the budget
        // counts, carried over from the turns before when no person spoke since.
        let mut rounds = 0;
        let mut in_a_row = self.state.tool_rounds;
        // The answers asked again for not fitting the output schema. The budgets are read at
        // each pass: a handoff gives the rest of the turn the next agent's.
        let mut retried = 0;
        // Whether the last answer came in this run (an answer already in the transcript is
        // never retried).
        let mut fresh = false;
        self.retries.start_turn(self.open_round_id());
        self.state.stopped = None;
        self.turn = super::prepare::Turn::starting(self.state.usage);
        loop {
            self.checkpoint()?;
            if self.state.round.is_some() {
                match self.settle(sink).await? {
                    Settled::Done => {
                        self.retries_left()?;
                        if let Some(reason) = self.stop_after_round(rounds) {
                            return Ok(self.stop(reason));
                        }
                    }
                    Settled::Paused => {
                        self.retries.hold_stop(self.open_round_id());
                        return Ok(Outcome::Paused(self.pause().unwrap_or_else(empty_pause)));
                    }
                    Settled::ClaimedElsewhere { call_id, until } => {
                        self.retries.hold_stop(self.open_round_id());
                        let busy = Busy::call(call_id, until, self.now_ms());
                        return Ok(Outcome::Busy(busy));
                    }
                    Settled::Stopped(reason) => return Ok(self.stop(reason)),
                }
            }
            if let Some(answer) = self.answer_so_far()? {
                let retries = self
                    .state
                    .output
                    .as_ref()
                    .map_or(0, crate::structured::OutputSchema::retries);
                let mismatch = (fresh && retried < retries)
                    .then(|| self.state.output.as_ref()?.mismatch(answer))
                    .flatten();
                let Some(reason) = mismatch else {
                    let done = answer.clone();
                    // The model answered: its rounds in a row end here. (An answer asked again
                    // ends none: a model that answers wrongly between tasks would otherwise
                    // start the round budget again each time.)
                    self.state.tool_rounds = 0;
                    return Ok(Outcome::Done(done));
                };
                retried += 1;
                tracing::info!(target: "llm_tools::request", reason = reason.as_str(), "the answer does not fit the output schema; asking again");
                let name = self.state.output.as_ref().map_or("", |o| o.name());
                // The reason may quote the answer (a decoder's error names the value it met):
                // cut, so a 5 MB answer is not sent back as a 5 MB question.
                let reason = crate::args::shortened(&reason, 500);
                self.push_message(Message::user(format!(
                    "Your answer does not fit the required JSON schema `{name}`: {reason}. Answer again with only the JSON object."
                )));
            }
            let budget = self.state.options.rounds();
            if in_a_row >= budget {
                // Reported once: the application that calls `complete` goes on with a fresh
                // budget (a durable chat parks here, until it is released).
                self.state.tool_rounds = 0;
                return Err(Error::RoundsExceeded { rounds: in_a_row });
            }
            if let Some(reason) = self.budget_used() {
                return Ok(self.stop(reason));
            }
            match self.request(sink).await? {
                Sent::Stopped(reason) => return Ok(self.stop(reason)),
                Sent::Answered { calls: true } => {
                    rounds += 1;
                    in_a_row += 1;
                    self.state.tool_rounds = in_a_row;
                    fresh = false;
                }
                Sent::Answered { calls: false } => fresh = true,
            }
        }
    }

    pub(crate) async fn step_with(&mut self, sink: Option<&Sink>) -> Result<Step, Error> {
        self.checkpoint()?;
        if !self.turn.open {
            // The first step of a turn: its budgets count from here.
            self.retries.start_turn(self.open_round_id());
            self.state.stopped = None;
            self.turn = super::prepare::Turn::starting(self.state.usage);
        }
        let step = self.step_in_turn(sink).await;
        if matches!(step, Ok(Step::Done(_) | Step::Stopped(_))) {
            self.turn.open = false;
            // As at the end of a whole turn (`run`).
            let _ = self.cancel.take();
        }
        step
    }

    async fn step_in_turn(&mut self, sink: Option<&Sink>) -> Result<Step, Error> {
        if self.state.round.is_some() {
            match self.settle(sink).await? {
                Settled::Done => {
                    if let Some(stopped) = self.round_settled()? {
                        return Ok(stopped);
                    }
                }
                settled => return Ok(self.step_of(settled)),
            }
        }
        if let Some(answer) = self.answer_so_far()? {
            return Ok(Step::Done(answer.clone()));
        }
        if let Some(reason) = self.budget_used() {
            self.mark_stopped(&reason);
            return Ok(Step::Stopped(reason));
        }
        let calls = match self.request(sink).await? {
            Sent::Answered { calls } => calls,
            Sent::Stopped(reason) => {
                self.mark_stopped(&reason);
                return Ok(Step::Stopped(reason));
            }
        };
        if !calls {
            // An answer without tools ends a run of rounds.
            self.state.tool_rounds = 0;
            return Ok(match self.answer_so_far()? {
                Some(answer) => Step::Done(answer.clone()),
                None => Step::Continue,
            });
        }
        let settled = self.settle(sink).await?;
        if settled == Settled::Done
            && let Some(stopped) = self.round_settled()?
        {
            return Ok(stopped);
        }
        Ok(self.step_of(settled))
    }

    /// After a step's round settled: fails once a tool's retries are used up (as the chat
    /// says), and stops the turn when a round condition holds (`StopWhen::tool_ran`,
    /// `StopWhen::round`), as `ask` does.
    fn round_settled(&mut self) -> Result<Option<Step>, Error> {
        self.retries_left()?;
        Ok(self.stop_after_round(self.turn.requests).map(|reason| {
            self.mark_stopped(&reason);
            Step::Stopped(reason)
        }))
    }

    /// The stop condition that holds now that the last round has settled, if any.
    fn stop_after_round(&self, rounds: usize) -> Option<super::stop::StopReason> {
        if self.stops.is_empty() {
            return None;
        }
        let messages = &self.state.messages;
        let at = messages
            .iter()
            .rposition(|m| m.role == Role::Assistant && m.has_tool_calls())?;
        let summary = super::stop::RoundSummary {
            round: rounds.max(1),
            calls: &messages[at].tool_calls,
            results: &messages[at + 1..],
            usage: self.state.usage.since(&self.turn.usage_before),
            requests: self.turn.requests,
            ran: &self.turn.ran_in_last_round,
        };
        super::stop::after_round(&self.stops, &summary)
    }

    /// Runs the preparation hook on what the next request would be; checks that it offers only
    /// tools the chat offers and a choice among them.
    async fn prepared(
        &self,
        prepare: &super::prepare::PrepareFn,
        tools: &[std::sync::Arc<dyn crate::tool::Tool>],
    ) -> Result<super::prepare::RequestPlan, Error> {
        let plan = super::prepare::RequestPlan {
            // The request prepared is counted as it is sent, after the hook.
            round: self.turn.requests.saturating_add(1),
            usage: self.state.usage.since(&self.turn.usage_before),
            messages: self.state.messages.clone(),
            tools: tools
                .iter()
                .map(|t| t.spec().joined_name().to_owned())
                .collect(),
            choice: self.state.options.choice().clone(),
            params: self.state.params.clone(),
            provider: None,
            namespaces: tools
                .iter()
                .filter_map(|t| {
                    let spec = t.spec();
                    let ns = spec.namespace()?;
                    Some((spec.joined_name().to_owned(), ns.name().to_owned()))
                })
                .collect(),
        };
        let panicked = || crate::error::ConfigError::InvalidOption {
            option: "with_prepare_request",
            reason: "panicked while preparing the request; nothing was sent".to_owned(),
        };
        // The hook's synchronous part (building its future) may panic as well as its future.
        let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepare(plan)))
            .map_err(|_| panicked())?;
        let run = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(prepared));
        let limit = self.callbacks.hook_timeout();
        let plan = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Error::Cancelled),
            plan = tokio::time::timeout(limit, run) => match plan {
                Ok(plan) => plan.map_err(|_| panicked())?,
                Err(_) => {
                    return Err(crate::error::ConfigError::InvalidOption {
                        option: "with_prepare_request",
                        reason: format!(
                            "did not prepare the request within {limit:?} (with_hook_timeout); nothing was sent"
                        ),
                    }
                    .into());
                }
            },
        };
        let invalid = |reason: String| {
            Error::from(crate::error::ConfigError::InvalidOption {
                option: "with_prepare_request",
                reason,
            })
        };
        if let Some(name) = plan.tools.iter().find(|name| {
            !tools
                .iter()
                .any(|t| t.spec().joined_name() == name.as_str())
        }) {
            return Err(invalid(format!(
                "offered `{name}`, which this request could not offer (a hook can only leave tools out)"
            )));
        }
        if let ToolChoice::Tool(name) = &plan.choice
            && !plan.tools.iter().any(|n| n == name)
        {
            return Err(invalid(format!(
                "chose the tool `{name}`, which the request does not offer"
            )));
        }
        if plan.messages.is_empty() {
            return Err(invalid("left no message to send".to_owned()));
        }
        Ok(plan)
    }

    /// Ends the turn for `reason`: kept in the state until the next turn starts.
    fn stop(&mut self, reason: super::stop::StopReason) -> Outcome {
        self.mark_stopped(&reason);
        Outcome::Stopped(reason)
    }

    /// Keeps why the turn stopped, in the state, until the next turn starts.
    fn mark_stopped(&mut self, reason: &super::stop::StopReason) {
        tracing::info!(target: "llm_tools::request", reason = %reason, "a stop condition ended the turn");
        self.state.stopped = Some(reason.clone());
    }

    /// The round open now, as [`TurnRetries`](retries::TurnRetries) names it.
    fn open_round_id(&self) -> Option<retries::RoundId> {
        self.state
            .round
            .as_ref()
            .map(|round| (round.message, round.key))
    }

    /// Fails with [`Error::ToolRetriesExhausted`] once a settled round used up a tool's budget
    /// of failed calls in a row and the chat says to stop the turn then.
    fn retries_left(&mut self) -> Result<(), Error> {
        match self.retries.take_stop() {
            None => Ok(()),
            Some((tool, failures)) => {
                self.retries.reset();
                Err(Error::ToolRetriesExhausted { tool, failures })
            }
        }
    }

    /// The first stop condition reached before a request: the chat's own, then its request
    /// budget ([`ToolOptions::max_requests_per_turn`](super::ToolOptions::max_requests_per_turn),
    /// unless a `StopWhen::requests` of its own replaces it), then (for a chat running inside a
    /// call, a sub-agent's) every budget of the chats above it.
    pub(crate) fn budget_used(&self) -> Option<super::stop::StopReason> {
        self.own_budget_used()
            .or_else(|| super::nested::Caller::current()?.budget_reached())
    }

    /// The first of the chat's own budgets reached before a request: its conditions, then its
    /// request budget.
    fn own_budget_used(&self) -> Option<super::stop::StopReason> {
        let own = if self.stops.is_empty() {
            None
        } else {
            let used = self.state.usage.since(&self.turn.usage_before);
            super::stop::before_request(&self.stops, &used, self.turn.requests, &self.state.usage)
        };
        own.or_else(|| super::stop::request_cap_reached(self.request_cap(), self.turn.requests))
    }

    /// Takes the request about to be sent from the turn's budgets and counts it as the turn's:
    /// the first budget reached instead, when one is. The chat's own are checked first; for a
    /// chat running inside a call, the request is then taken from every budget above it at
    /// once, so the chats below sending together never pass a budget above (see
    /// [`nested`](super::nested)). A request is counted as it is sent, whatever becomes of it.
    pub(crate) fn take_request(&mut self) -> Option<super::stop::StopReason> {
        if let Some(reason) = self
            .own_budget_used()
            .or_else(|| super::nested::Caller::take_request(true))
        {
            return Some(reason);
        }
        self.turn.requests = self.turn.requests.saturating_add(1);
        None
    }

    /// The chat's default request budget of a turn, when no `StopWhen::requests` of its own
    /// replaces it.
    pub(crate) fn request_cap(&self) -> Option<usize> {
        super::stop::request_cap(&self.stops, self.state.options.max_requests_per_turn())
    }

    fn step_of(&self, settled: Settled) -> Step {
        match settled {
            Settled::Done => Step::Continue,
            Settled::Paused => Step::Paused(self.pause().unwrap_or_else(empty_pause)),
            Settled::ClaimedElsewhere { call_id, until } => {
                Step::Busy(Busy::call(call_id, until, self.now_ms()))
            }
            Settled::Stopped(reason) => Step::Stopped(reason),
        }
    }

    /// Uses a pending cancellation.
    fn checkpoint(&self) -> Result<(), Error> {
        if self.cancel.take() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The model's answer, when the transcript ends with one that asks for no tools; `None`
    /// when the model owes an answer.
    fn answer_so_far(&self) -> Result<Option<&Message>, Error> {
        match self.state.messages.last() {
            None => Err(crate::error::ConfigError::NoMessage.into()),
            Some(last) if last.role == Role::Assistant && last.tool_calls.is_empty() => {
                Ok(Some(last))
            }
            Some(_) => Ok(None),
        }
    }

    /// Sends one request and adds the answer; returns whether it asks for tools, or the budget
    /// that the request would pass (nothing is sent then).
    async fn request(&mut self, sink: Option<&Sink>) -> Result<Sent, Error> {
        // The last round's results are stored before the request that carries them is sent,
        // so a process that dies waiting for the model runs no call again. (A new message from
        // the application goes with the answer's commit.)
        if self
            .state
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool)
        {
            self.persist().await?;
        }
        if let Some(compact) = self.compact_before_request
            && compact(self).await?
        {
            self.persist().await?;
        }
        if !self.sources.is_empty() {
            self.sources.refresh(&mut self.registry).await;
        }
        self.check_choice(self.state.options.choice())?;
        let options = &self.state.options;
        let search =
            search::is_local(&self.registry, self.provider.native_tool_search()).then(|| Search {
                found: &self.state.found_tools,
                forced: match options.choice() {
                    ToolChoice::Tool(name) => Some(name.as_str()),
                    _ => None,
                },
                tool: search::search_tool(),
            });
        // The chat chose which deferred tools go out: the ones its search found or forced.
        let search_chosen = search.is_some();
        let mut tools = self.registry.offered(search);
        if self.retries.any_exhausted() {
            let retries = &self.retries;
            tools = std::borrow::Cow::Owned(
                tools
                    .iter()
                    .filter(|tool| !retries.is_exhausted(tool.spec().joined_name()))
                    .cloned()
                    .collect(),
            );
        }
        let plan = match self.prepare.clone() {
            None => None,
            Some(prepare) => Some(self.prepared(&prepare, &tools).await?),
        };
        let (messages, choice, params) = match &plan {
            Some(plan) => (plan.messages.as_slice(), &plan.choice, plan.params.as_ref()),
            None => (
                self.state.messages.as_slice(),
                options.choice(),
                self.state.params.as_ref(),
            ),
        };
        if let Some(plan) = &plan {
            tools = std::borrow::Cow::Owned(
                tools
                    .iter()
                    .filter(|t| plan.tools.iter().any(|n| n == t.spec().joined_name()))
                    .cloned()
                    .collect(),
            );
        }
        // When this request leaves tools out, the ones it offers: a call of another is refused.
        let leaves_out = plan.is_some()
            || matches!(choice, ToolChoice::None)
            || (search_chosen && self.registry.has_deferred());
        let offered = leaves_out.then(|| match choice {
            ToolChoice::None => std::collections::HashSet::new(),
            _ => tools
                .iter()
                .map(|t| t.spec().joined_name().to_owned())
                .collect(),
        });
        let request = Request::new(messages, &tools)
            .with_choice(choice)
            .with_deferred_chosen(search_chosen)
            .with_parallel_tool_calls((options.calls() == Some(1)).then_some(false))
            .with_params(params)
            .with_output(self.state.output.as_ref())
            .with_provider_tools(&self.state.provider_tools);
        // The request counts as the turn's (and in every turn above) now, as it is sent: the
        // budgets are checked again, a summary (compaction) or the chats beside this one (a
        // sub-agent) may have taken the last request since the turn looked.
        if let Some(reason) = self
            .own_budget_used()
            .or_else(|| super::nested::Caller::take_request(true))
        {
            return Ok(Sent::Stopped(reason));
        }
        self.turn.requests = self.turn.requests.saturating_add(1);
        self.callbacks.before_request(&request);
        let provider = plan
            .as_ref()
            .and_then(|plan| plan.provider.as_deref())
            .unwrap_or(&*self.provider);
        let span = tracing::info_span!(
            "chat",
            otel.name = tracing::field::Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider.protocol(),
            gen_ai.request.model = provider.model(),
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.response.id = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            llm_tools.messages = request.messages.len(),
            llm_tools.tools = request.tools.len(),
            error.type = tracing::field::Empty,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("chat {}", provider.model()).as_str());
        }
        let send = async {
            tracing::debug!(
                target: "llm_tools::request",
                messages = request.messages.len(),
                tools = request.tools.len(),
                choice = ?request.choice,
                "sending a request"
            );
            match sink {
                None => provider.complete(request).await,
                Some(sink) => streamed(provider, request, sink).await,
            }
        }
        .instrument(span.clone());
        let response = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(Error::Cancelled),
            response = send => response,
        };
        let response = match response {
            Ok(response) => response,
            Err(e) => {
                span.record(
                    "error.type",
                    e.status()
                        .map_or("provider_error".to_owned(), |s| s.to_string())
                        .as_str(),
                );
                return Err(e.into());
            }
        };
        record_response(&span, &response);
        if let Some(cap) = options_cap_past(&self.state.options, &response) {
            let error = ProviderError::new(
                provider.protocol(),
                ProviderErrorKind::Decode,
                format!(
                    "the answer asks for {} tool calls, more than the calls cap ({cap}) and \
                     {} more that a chat keeps with an error result (MAX_CALLS_PAST_CAP); \
                     nothing of it is kept",
                    response.message.tool_calls.len(),
                    super::MAX_CALLS_PAST_CAP
                ),
            );
            span.record("error.type", "provider_error");
            return Err(error.into());
        }
        tracing::debug!(
            target: "llm_tools::request",
            parent: &span,
            text = response.message.text().as_str(),
            tool_calls = response.message.tool_calls.len(),
            "the model answered"
        );
        // A durable chat writes the answer with the first transition of its calls (before any
        // of them starts), or at the end of the turn when it asks for none.
        self.turn.offered = offered;
        Ok(Sent::Answered {
            calls: self.accept(response),
        })
    }

    /// Counts what an answer (the model's, or a summary's) used: in the chat's usage, and for a
    /// chat running inside a call against the budgets above it, as it goes (its request was
    /// counted as it was sent, [`take_request`](Self::take_request)).
    pub(crate) fn answered(&mut self, usage: Option<crate::message::Usage>) {
        if let Some(usage) = usage {
            self.state.usage += usage;
            super::nested::Caller::record_usage(usage);
        }
    }

    /// Adds the model's answer; opens a round for its calls. Returns whether it has calls.
    fn accept(&mut self, response: Response) -> bool {
        let mut message = response.message;
        message.role = Role::Assistant;
        self.answered(message.usage);
        let has_calls = message.has_tool_calls();
        self.push_message(message);
        // What the request offered holds for its answer only (`open_round` took it when the
        // answer has calls): a message the application adds later is not checked against it.
        self.turn.offered = None;
        if has_calls {
            self.state.options.reset_forced_choice();
        }
        has_calls
    }

    /// Appends a message; an assistant message with calls opens a round for them.
    pub(crate) fn push_message(&mut self, mut message: Message) {
        let index = self.state.messages.len();
        if message.role == Role::Assistant && message.has_tool_calls() {
            let calls = self.open_round(index, &mut message);
            let mut round = Ledger::open(index, calls);
            if self.state.compacted_away > 0 {
                round.key = Some(
                    self.state
                        .compacted_away
                        .saturating_add(u64::try_from(index).unwrap_or(u64::MAX)),
                );
            }
            self.state.round = Some(round);
        }
        self.state.messages.push(message);
        self.callbacks.after_message(&self.state.messages[index]);
    }

    /// Checks each call of a new answer: ids, arguments, the calls cap, approvals. Calls that
    /// cannot run get their error result now; the transcript keeps only `{}` for arguments
    /// that are not one JSON object, so the next request stays valid.
    fn open_round(&mut self, index: usize, message: &mut Message) -> Vec<Entry> {
        let cap = self.state.options.calls();
        let offered = self.turn.offered.take();
        let calls = &mut message.tool_calls;
        unique_call_ids(
            index,
            calls,
            &self.state.messages,
            &self.state.retired_call_ids,
        );
        // The error of each call whose arguments are not one JSON object (none allocated
        // while every call's are).
        let mut checked: Vec<Option<String>> = Vec::new();
        let count = calls.len();
        for (i, call) in calls.iter_mut().enumerate() {
            if let Err(text) = calls::check_arguments(call) {
                checked.resize(count, None);
                checked[i] = Some(text);
            }
        }
        // Arguments that are not one JSON object are a failed call of their tool.
        let action = self.state.options.on_retries_exhausted();
        for (i, (call, text)) in calls.iter().zip(checked.iter_mut()).enumerate() {
            let (Some(text), false) = (text, cap.is_some_and(|cap| i >= cap)) else {
                continue;
            };
            let limit = retries::limit_of(&self.registry, &self.state.options, call);
            self.retries
                .count_failure(&call.joined_name(), limit, action, text);
        }
        calls
            .iter_mut()
            .enumerate()
            .map(|(i, call)| {
                let checked = checked.get_mut(i).and_then(Option::take);
                let entry = |state| Entry::new(call.id.as_str(), state);
                let error = |text: String| {
                    entry(CallState::Finished {
                        result: Message::tool_result(call.id.as_str(), text, true),
                    })
                };
                if let Some(cap) = cap.filter(|&cap| i >= cap) {
                    return error(calls::over_cap(&call.joined_name(), cap));
                }
                if let Some(text) = checked {
                    return error(text);
                }
                // The chat's own search, when the request did not offer it.
                if search::is_search(call)
                    && offered
                        .as_ref()
                        .is_some_and(|o| !o.contains(search::TOOL_SEARCH_NAME))
                {
                    return error(calls::not_offered(search::TOOL_SEARCH_NAME, false));
                }
                let Some(tool) = self.registry.find(call) else {
                    return entry(CallState::Ready);
                };
                // A tool the request did not offer (a tool past its retry budget is left out
                // for its own reason, which its call gets when the round plans its calls).
                let name = tool.spec().joined_name();
                if offered
                    .as_ref()
                    .is_some_and(|o| !o.contains(name) && !self.retries.is_exhausted(name))
                {
                    return error(calls::not_offered(name, tool.spec().defer()));
                }
                if !approvals::is_gated(
                    tool.as_ref(),
                    call,
                    &self.state.decisions,
                    &self.callbacks.approval_predicates,
                    &self.registry,
                ) {
                    return entry(CallState::Ready);
                }
                self.gated_entry(call)
            })
            .collect()
    }
}

fn empty_pause() -> super::outcome::Pause {
    super::outcome::Pause { calls: Vec::new() }
}

/// Streams one answer: forwards its events to the sink (the assembled answer too) and returns
/// the answer.
async fn streamed(
    provider: &dyn crate::provider::Provider,
    request: Request<'_>,
    sink: &Sink,
) -> Result<Response, ProviderError> {
    let mut events = provider.stream(request).await?;
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::Completed(response) => {
                emit(Some(sink), || {
                    ChatEvent::Model(StreamEvent::Completed(response.clone()))
                });
                return Ok(*response);
            }
            event => emit(Some(sink), || ChatEvent::Model(event)),
        }
    }
    Err(ProviderError::new(
        provider.protocol(),
        ProviderErrorKind::Stream,
        "the stream ended before the answer was complete",
    ))
}

fn record_response(span: &tracing::Span, response: &Response) {
    if span.is_disabled() {
        return;
    }
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(id) = &response.request_id {
        span.record("gen_ai.response.id", id.as_str());
    }
    if let Some(reason) = &response.finish_reason {
        span.record("gen_ai.response.finish_reasons", reason.as_str());
    }
    if let Some(usage) = &response.message.usage {
        span.record("gen_ai.usage.input_tokens", usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", usage.output_tokens);
    }
}

/// The chat's calls cap when `response` holds more calls than the cap and
/// [`MAX_CALLS_PAST_CAP`](super::MAX_CALLS_PAST_CAP) more; `None` for an answer the chat keeps.
fn options_cap_past(options: &super::ToolOptions, response: &Response) -> Option<usize> {
    let cap = options.calls()?;
    (response.message.tool_calls.len() > cap.saturating_add(super::MAX_CALLS_PAST_CAP))
        .then_some(cap)
}

/// Gives every call of the answer at `index` an id of its own: an empty id, one longer than
/// [`MAX_CALL_ID_BYTES`](super::MAX_CALL_ID_BYTES), one holding a control character or the
/// [`PATH_SEPARATOR`](crate::agent::PATH_SEPARATOR), one an earlier
/// call of the answer has, or one a call of the chat's history has, becomes `call_{index}_{i}`
/// (with a suffix in the rare case that one is taken too). So each result finds its call; a
/// decision addressed by id (`approve("x")`, clicked late) never reaches a later call the model
/// gave the id of a call decided before; a paused sub-agent call's path of ids names one call
/// only (a call `p/x` beside a sub-agent call `p` whose own call is `x` would share its path);
/// and a stored call's id is text every store keeps (PostgreSQL refuses NUL). Ids are the
/// model's: sets of those seen keep this linear in the number of calls, and the standard
/// library's keyed hasher keeps them from being driven into collisions. The ids of calls
/// compaction took out of the history (`retired`) count as the history's.
fn unique_call_ids(
    index: usize,
    calls: &mut [crate::ToolCall],
    earlier: &[Message],
    retired: &[String],
) {
    if !needs_new_ids(calls, earlier, retired) {
        return;
    }
    let history: std::collections::HashSet<&str> = history_ids(earlier, retired).collect();
    let mut seen: std::collections::HashSet<String> =
        std::collections::HashSet::with_capacity(calls.len());
    let all: std::collections::HashSet<String> = calls.iter().map(|c| c.id.clone()).collect();
    for (i, call) in calls.iter_mut().enumerate() {
        if unusable_id(&call.id) || seen.contains(&call.id) || history.contains(call.id.as_str()) {
            let mut fresh = format!("call_{index}_{i}");
            let mut n = 0u32;
            while seen.contains(&fresh) || all.contains(&fresh) || history.contains(fresh.as_str())
            {
                n += 1;
                fresh = format!("call_{index}_{i}_{n}");
            }
            call.id = fresh;
        }
        seen.insert(call.id.clone());
    }
}

/// Whether a call's id cannot stand as it is: empty, longer than
/// [`MAX_CALL_ID_BYTES`](super::MAX_CALL_ID_BYTES), or holding a control character or the path
/// separator.
fn unusable_id(id: &str) -> bool {
    if id.len() > super::MAX_CALL_ID_BYTES {
        return true;
    }
    const SEPARATOR: u8 = {
        assert!(crate::agent::PATH_SEPARATOR.is_ascii());
        crate::agent::PATH_SEPARATOR as u8
    };
    // The usual id is printable ASCII: one pass over its bytes says it can stand.
    if !id.is_empty()
        && id
            .bytes()
            .all(|b| matches!(b, b' '..=b'~') && b != SEPARATOR)
    {
        return false;
    }
    id.is_empty() || id.contains(crate::agent::PATH_SEPARATOR) || id.chars().any(char::is_control)
}

/// Whether some call of an answer has an id that cannot stand, one an earlier call of the
/// answer has, or one a call of the history has: for the few calls of a usual answer and a
/// short history, by comparing them (nothing allocated); else with a set.
fn needs_new_ids(calls: &[crate::ToolCall], earlier: &[Message], retired: &[String]) -> bool {
    if calls.iter().any(|c| unusable_id(&c.id)) {
        return true;
    }
    let repeated = if calls.len() <= 16 {
        calls
            .iter()
            .enumerate()
            .any(|(i, c)| calls[..i].iter().any(|before| before.id == c.id))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(calls.len());
        !calls.iter().all(|c| seen.insert(c.id.as_str()))
    };
    if repeated {
        return true;
    }
    let mut history = history_ids(earlier, retired);
    if calls.len() <= 4 {
        return history.any(|id| calls.iter().any(|c| c.id == id));
    }
    let ids: std::collections::HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    history.any(|id| ids.contains(id))
}

/// The ids of the calls of the history, and of those compaction took out of it.
fn history_ids<'a>(earlier: &'a [Message], retired: &'a [String]) -> impl Iterator<Item = &'a str> {
    earlier
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .chain(retired.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_after(ids: &[&str]) -> Vec<String> {
        let mut calls: Vec<crate::ToolCall> = ids
            .iter()
            .map(|id| crate::ToolCall::new(*id, "f", "{}"))
            .collect();
        unique_call_ids(1, &mut calls, &[], &[]);
        calls.into_iter().map(|c| c.id).collect()
    }

    /// An id a call of the history has, or one holding a control character, gets one of its
    /// own; the fresh id avoids the history's ids too.
    #[test]
    fn ids_the_history_has_or_holding_control_characters_get_ids_of_their_own() {
        let earlier = [
            Message::user("u"),
            Message::assistant_with_calls(
                "",
                vec![
                    crate::ToolCall::new("x", "f", "{}"),
                    crate::ToolCall::new("call_3_0", "f", "{}"),
                ],
            ),
        ];
        let mut calls = vec![
            crate::ToolCall::new("x", "f", "{}"),
            crate::ToolCall::new("y", "f", "{}"),
            crate::ToolCall::new("a\u{0}b", "f", "{}"),
        ];
        unique_call_ids(3, &mut calls, &earlier, &[]);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_3_0_1", "y", "call_3_2"]);
        let mut many: Vec<crate::ToolCall> = (0..20)
            .map(|i| crate::ToolCall::new(format!("id{i}"), "f", "{}"))
            .collect();
        many[7].id = "x".into();
        unique_call_ids(3, &mut many, &earlier, &[]);
        assert_eq!(many[7].id, "call_3_7");
        assert_eq!(many[8].id, "id8");
    }

    #[test]
    fn ids_past_the_length_limit_get_ids_of_their_own() {
        let longest = "i".repeat(super::super::MAX_CALL_ID_BYTES);
        let past = "i".repeat(super::super::MAX_CALL_ID_BYTES + 1);
        assert_eq!(
            ids_after(&[&longest, &past, &"é".repeat(200)]),
            [longest.as_str(), "call_1_1", "call_1_2"]
        );
    }

    #[test]
    fn empty_and_repeated_ids_get_ids_of_their_own() {
        assert_eq!(ids_after(&["a", "b"]), ["a", "b"]);
        assert_eq!(ids_after(&["a", "a", ""]), ["a", "call_1_1", "call_1_2"]);
    }

    /// A fresh id the model happened to use elsewhere, before or after, is not given again.
    #[test]
    fn a_fresh_id_the_model_used_is_not_given_again() {
        assert_eq!(
            ids_after(&["call_1_1", "call_1_1"]),
            ["call_1_1", "call_1_1_1"]
        );
        assert_eq!(
            ids_after(&["a", "a", "call_1_1"]),
            ["a", "call_1_1_1", "call_1_1"]
        );
    }

    /// An id holding the path separator gets one of its own, so a sub-agent pause's path of
    /// ids names one call only.
    #[test]
    fn ids_holding_the_path_separator_get_ids_of_their_own() {
        assert_eq!(ids_after(&["p", "p/x"]), ["p", "call_1_1"]);
        assert_eq!(ids_after(&["/"]), ["call_1_0"]);
    }

    #[test]
    fn many_calls_with_one_id_all_end_unique() {
        let ids = vec!["same"; 5000];
        let after = ids_after(&ids);
        let unique: std::collections::HashSet<&String> = after.iter().collect();
        assert_eq!(unique.len(), 5000);
        assert_eq!(after[0], "same");
    }
}

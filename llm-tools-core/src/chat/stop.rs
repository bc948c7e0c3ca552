//! Stop conditions: [`StopWhen`] ends a turn early, with [`Outcome::Stopped`](super::Outcome)
//! saying why, after a named tool ran, when a condition over the round holds, or at a budget of
//! tokens, requests or cost. The chat carries on later (`complete`, or a new message).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolCall, Usage};

/// What a round-condition sees once a round's calls all have their results.
#[derive(Debug)]
#[non_exhaustive]
pub struct RoundSummary<'a> {
    /// The round's number within the turn, from 1.
    pub round: usize,
    /// The round's calls, as the model made them.
    pub calls: &'a [ToolCall],
    /// Their results, in call order.
    pub results: &'a [Message],
    /// The tokens the turn has used so far.
    pub usage: Usage,
    /// The requests the turn has sent so far.
    pub requests: usize,
    /// The places (in `calls`) of the calls whose tool ran.
    pub(crate) ran: &'a [usize],
}

impl RoundSummary<'_> {
    /// Whether a call of `joined_name` is in the round, whether it ran or not (denied, refused,
    /// vetoed).
    pub fn called(&self, joined_name: &str) -> bool {
        self.calls.iter().any(|c| c.joined_name() == joined_name)
    }

    /// Whether `joined_name` ran for a call of the round: it gave its outcome (a result, an
    /// error of its own, a task). A call denied, refused before it ran (arguments that are not
    /// an object, over the cap, not offered) or vetoed by a hook did not run.
    pub fn ran(&self, joined_name: &str) -> bool {
        self.ran.iter().any(|&index| {
            self.calls
                .get(index)
                .is_some_and(|c| c.joined_name() == joined_name)
        })
    }
}

type RoundCondition = Arc<dyn Fn(&RoundSummary<'_>) -> bool + Send + Sync>;

/// Prices per million tokens, for a cost budget ([`StopWhen::cost`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Prices {
    /// Per million input tokens not served from the cache.
    pub input: f64,
    /// Per million input tokens served from the cache.
    pub cached_input: f64,
    /// Per million output tokens (reasoning included).
    pub output: f64,
}

impl Prices {
    /// Input and output prices per million tokens; cached input at the input price.
    pub fn per_million(input: f64, output: f64) -> Self {
        Self {
            input,
            cached_input: input,
            output,
        }
    }

    /// Sets the price of cached input tokens.
    #[must_use]
    pub fn with_cached_input(mut self, per_million: f64) -> Self {
        self.cached_input = per_million;
        self
    }

    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        #[allow(clippy::cast_precision_loss)] // token counts far below 2^52
        let cost = (fresh as f64) * self.input
            + (cached as f64) * self.cached_input
            + (usage.output_tokens as f64) * self.output;
        cost / 1_000_000.0
    }
}

/// When a turn stops before the model answers. Register with
/// [`Chat::stop_when`](super::Chat::stop_when); the first that holds stops the turn with
/// [`Outcome::Stopped`](super::Outcome::Stopped). Conditions are the chat's configuration (set
/// them again on a chat loaded from a store), checked once a round's calls all have their
/// results (a tool that ran, a round condition) or before each request (budgets: a turn's
/// count from the start of the turn, a chat's over all its turns). A budget stops the turn
/// before the next request once it is reached, so the last request may take it past.
///
/// ```
/// use llm_tools_core::chat::{Chat, Outcome, StopReason, StopWhen};
/// use llm_tools_core::testing::ScriptedProvider;
/// use llm_tools_core::tool;
/// use serde_json::json;
///
/// /// Submits the order
/// #[tool]
/// async fn submit_order(id: u64) -> String { format!("order {id} submitted") }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let model = ScriptedProvider::new().then_call("submit_order", json!({"id": 7}));
/// let mut chat = Chat::new(model);
/// chat.with_tools(SubmitOrder)?
///     .stop_when(StopWhen::tool_ran("submit_order"))
///     .stop_when(StopWhen::tokens(50_000));
/// let Outcome::Stopped(reason) = chat.ask("Order it").await? else { panic!() };
/// assert_eq!(reason, StopReason::ToolRan { tool: "submit_order".into() });
/// assert_eq!(chat.messages().last().unwrap().text(), "order 7 submitted");
/// # Ok::<_, llm_tools_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum StopWhen {
    /// Once a round in which a call of this tool (joined name) ran has settled.
    ToolRan(String),
    /// Once a round has settled and the condition holds; `reason` says why in the outcome.
    Round {
        /// What the outcome says.
        reason: String,
        /// The condition.
        condition: RoundCondition,
    },
    /// Before a request, when the turn has used this many tokens (input and output).
    Tokens(u64),
    /// Before a request, when the turn has sent this many.
    Requests(usize),
    /// Before a request, when the turn's usage costs this much at these prices.
    Cost {
        /// The budget, in the prices' currency.
        limit: f64,
        /// The prices.
        prices: Prices,
    },
    /// Before a request, when the chat has used this many tokens over all its turns.
    ChatTokens(u64),
    /// Before a request, when the chat's usage over all its turns costs this much.
    ChatCost {
        /// The budget, in the prices' currency.
        limit: f64,
        /// The prices.
        prices: Prices,
    },
}

impl StopWhen {
    /// Once a round in which `joined_name` ran has settled.
    pub fn tool_ran(joined_name: impl Into<String>) -> Self {
        Self::ToolRan(joined_name.into())
    }

    /// Once a round has settled and `condition` holds over it.
    pub fn round(
        reason: impl Into<String>,
        condition: impl Fn(&RoundSummary<'_>) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self::Round {
            reason: reason.into(),
            condition: Arc::new(condition),
        }
    }

    /// When the turn has used `tokens` tokens (input and output).
    pub fn tokens(tokens: u64) -> Self {
        Self::Tokens(tokens)
    }

    /// When the turn has sent `requests` requests, those of its sub-agents included, each
    /// counted as it is sent: no request past the budget is sent, however many sub-agents send
    /// at once, and a request counts whatever becomes of it (answered, failed, or cut off with
    /// its sub-agent). It replaces the chat's default request budget
    /// ([`ToolOptions::max_requests_per_turn`](super::ToolOptions::max_requests_per_turn),
    /// [`DEFAULT_MAX_REQUESTS_PER_TURN`](super::DEFAULT_MAX_REQUESTS_PER_TURN)), which stops a
    /// chat without one the same way.
    pub fn requests(requests: usize) -> Self {
        Self::Requests(requests)
    }

    /// When the turn's usage costs `limit` at `prices`.
    pub fn cost(limit: f64, prices: Prices) -> Self {
        Self::Cost { limit, prices }
    }

    /// When the chat has used `tokens` tokens (input and output) over all its turns: the
    /// chat's usage, kept with its state, so a durable chat's budget holds across every
    /// worker's turns, where a turn's budget starts again with each turn.
    pub fn chat_tokens(tokens: u64) -> Self {
        Self::ChatTokens(tokens)
    }

    /// When the chat's usage over all its turns costs `limit` at `prices` (see
    /// [`chat_tokens`](Self::chat_tokens)).
    pub fn chat_cost(limit: f64, prices: Prices) -> Self {
        Self::ChatCost { limit, prices }
    }
}

impl std::fmt::Debug for StopWhen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ToolRan(tool) => f.debug_tuple("ToolRan").field(tool).finish(),
            Self::Round { reason, .. } => f.debug_struct("Round").field("reason", reason).finish(),
            Self::Tokens(n) => f.debug_tuple("Tokens").field(n).finish(),
            Self::Requests(n) => f.debug_tuple("Requests").field(n).finish(),
            Self::Cost { limit, prices } => f
                .debug_struct("Cost")
                .field("limit", limit)
                .field("prices", prices)
                .finish(),
            Self::ChatTokens(n) => f.debug_tuple("ChatTokens").field(n).finish(),
            Self::ChatCost { limit, prices } => f
                .debug_struct("ChatCost")
                .field("limit", limit)
                .field("prices", prices)
                .finish(),
        }
    }
}

/// Why a turn stopped before the model answered ([`Outcome::Stopped`](super::Outcome::Stopped)).
/// Every call of the last round has its result; `complete` (or a new message) carries on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A call of this tool ran.
    ToolRan {
        /// The tool's joined name.
        tool: String,
    },
    /// A round condition held.
    Condition {
        /// Its reason.
        reason: String,
    },
    /// The turn used its token budget.
    Tokens {
        /// The budget.
        limit: u64,
        /// Tokens used in the turn.
        used: u64,
    },
    /// The turn sent its budget of requests.
    Requests {
        /// The budget.
        limit: usize,
        /// Requests sent in the turn, those of its sub-agents included (answered or not).
        used: usize,
    },
    /// The turn's usage reached its cost budget.
    Cost {
        /// The budget.
        limit: f64,
        /// The turn's cost.
        used: f64,
    },
    /// The chat used its token budget over all its turns.
    ChatTokens {
        /// The budget.
        limit: u64,
        /// Tokens used by the chat.
        used: u64,
    },
    /// The chat's usage over all its turns reached its cost budget.
    ChatCost {
        /// The budget.
        limit: f64,
        /// The chat's cost.
        used: f64,
    },
    /// An `on_tool_call` or `on_tool_result_async` hook stopped the turn (or failed, for a
    /// result hook).
    Hook {
        /// The joined name of the tool of the call the hook saw.
        tool: String,
        /// The call's id.
        call_id: String,
        /// The hook's reason.
        reason: String,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ToolRan { tool } => write!(f, "`{tool}` ran"),
            Self::Condition { reason } => f.write_str(reason),
            Self::Hook {
                tool,
                call_id,
                reason,
            } => write!(
                f,
                "a hook stopped the turn at `{tool}` (call `{call_id}`): {reason}"
            ),
            Self::Tokens { limit, used } => {
                write!(f, "the turn used {used} tokens, its budget {limit}")
            }
            Self::Requests { limit, used } => {
                write!(f, "the turn sent {used} requests, its budget {limit}")
            }
            Self::Cost { limit, used } => {
                write!(f, "the turn cost {used:.4}, its budget {limit:.4}")
            }
            Self::ChatTokens { limit, used } => {
                write!(f, "the chat used {used} tokens, its budget {limit}")
            }
            Self::ChatCost { limit, used } => {
                write!(f, "the chat cost {used:.4}, its budget {limit:.4}")
            }
        }
    }
}

/// The first condition among `conditions` that holds once `summary`'s round has settled.
pub(crate) fn after_round(
    conditions: &[StopWhen],
    summary: &RoundSummary<'_>,
) -> Option<StopReason> {
    conditions.iter().find_map(|c| match c {
        StopWhen::ToolRan(tool) if summary.ran(tool) => {
            Some(StopReason::ToolRan { tool: tool.clone() })
        }
        StopWhen::Round { reason, condition } => {
            let holds =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| condition(summary)))
                    .unwrap_or(true);
            holds.then(|| StopReason::Condition {
                reason: reason.clone(),
            })
        }
        _ => None,
    })
}

/// The first budget among `conditions` used up before the next request: `usage` and
/// `requests` are the turn's, `chat_usage` the chat's over all its turns.
pub(crate) fn before_request(
    conditions: &[StopWhen],
    usage: &Usage,
    requests: usize,
    chat_usage: &Usage,
) -> Option<StopReason> {
    let tokens = usage.input_tokens.saturating_add(usage.output_tokens);
    let chat_tokens = chat_usage
        .input_tokens
        .saturating_add(chat_usage.output_tokens);
    conditions.iter().find_map(|c| match c {
        StopWhen::Tokens(limit) if tokens >= *limit => Some(StopReason::Tokens {
            limit: *limit,
            used: tokens,
        }),
        StopWhen::Requests(limit) if requests >= *limit => Some(StopReason::Requests {
            limit: *limit,
            used: requests,
        }),
        StopWhen::Cost { limit, prices } => {
            let used = prices.cost(usage);
            (used >= *limit).then_some(StopReason::Cost {
                limit: *limit,
                used,
            })
        }
        StopWhen::ChatTokens(limit) if chat_tokens >= *limit => Some(StopReason::ChatTokens {
            limit: *limit,
            used: chat_tokens,
        }),
        StopWhen::ChatCost { limit, prices } => {
            let used = prices.cost(chat_usage);
            (used >= *limit).then_some(StopReason::ChatCost {
                limit: *limit,
                used,
            })
        }
        _ => None,
    })
}

/// The request budget that applies beside `conditions`: `cap`
/// ([`ToolOptions::max_requests_per_turn`](super::ToolOptions::max_requests_per_turn)), unless
/// the conditions hold a [`StopWhen::Requests`] of their own, which replaces it.
pub(crate) fn request_cap(conditions: &[StopWhen], cap: Option<usize>) -> Option<usize> {
    cap.filter(|_| {
        !conditions
            .iter()
            .any(|c| matches!(c, StopWhen::Requests(_)))
    })
}

/// The stop at the request budget `cap` (see [`request_cap`]), once the turn has sent
/// `requests`: the reason a [`StopWhen::Requests`] of that budget gives.
pub(crate) fn request_cap_reached(cap: Option<usize>, requests: usize) -> Option<StopReason> {
    cap.filter(|&limit| requests >= limit)
        .map(|limit| StopReason::Requests {
            limit,
            used: requests,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_count_cached_input_at_its_price() {
        let prices = Prices::per_million(2.0, 8.0).with_cached_input(0.5);
        let usage = Usage::new(1_000_000, 500_000).with_cached_input_tokens(400_000);
        let cost = prices.cost(&usage);
        assert!(
            (cost - (0.6 * 2.0 + 0.4 * 0.5 + 0.5 * 8.0)).abs() < 1e-9,
            "{cost}"
        );
    }

    #[test]
    fn budgets_hold_at_their_limit() {
        let conditions = [StopWhen::requests(2), StopWhen::tokens(100)];
        let chat = Usage::new(1_000, 1_000);
        assert_eq!(
            before_request(&conditions, &Usage::new(10, 10), 1, &chat),
            None
        );
        assert_eq!(
            before_request(&conditions, &Usage::new(90, 10), 1, &chat),
            Some(StopReason::Tokens {
                limit: 100,
                used: 100
            })
        );
        assert_eq!(
            before_request(&conditions, &Usage::default(), 2, &chat),
            Some(StopReason::Requests { limit: 2, used: 2 })
        );
    }

    #[test]
    fn a_request_budget_of_the_chat_replaces_the_default_one() {
        assert_eq!(request_cap(&[StopWhen::tokens(10)], Some(256)), Some(256));
        assert_eq!(request_cap(&[StopWhen::requests(5)], Some(256)), None);
        assert_eq!(request_cap(&[], None), None);
        assert_eq!(request_cap_reached(Some(256), 255), None);
        assert_eq!(
            request_cap_reached(Some(256), 256),
            Some(StopReason::Requests {
                limit: 256,
                used: 256
            })
        );
        assert_eq!(request_cap_reached(None, usize::MAX), None);
    }

    #[test]
    fn chat_budgets_count_every_turn() {
        let prices = Prices::per_million(2.0, 8.0);
        let conditions = [
            StopWhen::chat_tokens(1_000),
            StopWhen::chat_cost(0.01, prices),
        ];
        let turn = Usage::default();
        assert_eq!(
            before_request(&conditions, &turn, 0, &Usage::new(600, 399)),
            None
        );
        assert_eq!(
            before_request(&conditions, &turn, 0, &Usage::new(600, 400)),
            Some(StopReason::ChatTokens {
                limit: 1_000,
                used: 1_000
            })
        );
        let only_cost = [StopWhen::chat_cost(0.01, prices)];
        let Some(StopReason::ChatCost { limit, used }) =
            before_request(&only_cost, &turn, 0, &Usage::new(1_000, 1_000))
        else {
            panic!("the chat's cost is 0.01");
        };
        assert!(
            (limit - 0.01).abs() < 1e-12 && (used - 0.01).abs() < 1e-12,
            "{used}"
        );
    }

    #[test]
    fn a_condition_that_panics_stops_the_turn() {
        let conditions = [StopWhen::round("broken", |_| panic!("a bug"))];
        let summary = RoundSummary {
            round: 1,
            calls: &[],
            results: &[],
            usage: Usage::default(),
            requests: 1,
            ran: &[],
        };
        assert_eq!(
            after_round(&conditions, &summary),
            Some(StopReason::Condition {
                reason: "broken".into()
            })
        );
    }
}

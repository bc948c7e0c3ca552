//! One suite of durable-chat cases every [`Store`] must pass, run against SQLite
//! (`tests/tests/durable/durable_sqlite.rs`) and PostgreSQL (`tests/tests/durable/durable_postgres.rs`): every
//! transition written and read back by a fresh chat, the run claim, call claims and their
//! fencing tokens, stale writes refused, the commits a round costs, and workers. Each case gets an empty store.
//!
//! [`SPENDING_CASES`] are the cases about what failing chats may spend (bounded attempts, a
//! doubling delay, a bounded number of claims abandoned by workers that died mid-turn, parked
//! chats the application sees and releases), run against both stores
//! by `tests/tests/durable/hostile_spending.rs`.
#![allow(
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_used,
    clippy::print_stdout
)] // a test suite, which names each case as it runs

mod chats;
mod commits;
mod edges;

pub use edges::a_stale_holders_file_writes_are_refused;
mod spending;
mod workers;

use std::future::Future;
use std::sync::Arc;

use llm_tools_core::BoxFuture;
use llm_tools_core::store::Store;

/// One case: its name and the test.
pub type Case = (&'static str, fn(Arc<dyn Store>) -> BoxFuture<'static, ()>);

macro_rules! case {
    ($module:ident :: $name:ident) => {
        (stringify!($name), |store| Box::pin($module::$name(store)))
    };
}

/// Every case of the suite.
pub const CASES: &[Case] = &[
    case!(chats::every_transition_is_stored_and_read_back_by_a_fresh_chat),
    case!(chats::a_paused_call_gives_its_claim_up_and_a_running_one_holds_it),
    case!(chats::two_chats_race_for_one_run_claim_and_one_gets_busy),
    case!(chats::an_expired_call_claim_runs_again_and_the_stale_holder_is_refused),
    case!(chats::a_write_under_a_stale_token_is_refused_and_changes_nothing),
    case!(commits::a_round_of_quick_calls_is_two_commits_and_the_last_releases),
    case!(commits::a_renewal_after_the_release_leaves_the_chat_free),
    case!(commits::each_round_of_a_turn_is_two_commits_and_its_end_one),
    case!(commits::a_long_calls_result_is_written_while_the_round_still_runs),
    case!(commits::a_message_changed_in_place_is_replaced_with_the_next_commit),
    case!(commits::a_refused_commit_of_many_calls_writes_none_of_them),
    case!(commits::a_turn_that_failed_to_commit_its_claims_leaves_its_calls_ready),
    case!(workers::a_working_task_is_resumed_by_a_worker_once_its_poll_interval_passed),
    case!(workers::a_chat_waiting_on_a_person_is_not_due_until_they_act),
    case!(workers::a_failed_turn_is_retried_after_the_retry_delay),
    case!(workers::a_worker_runs_many_chats_at_once_until_shutdown),
    case!(workers::a_graceful_shutdown_finishes_running_turns_and_picks_nothing_more),
    case!(workers::a_chat_whose_call_is_claimed_elsewhere_is_not_due_before_the_claim_ends),
    case!(workers::a_release_past_a_call_claimed_elsewhere_moves_the_wake_time_to_the_claims_end),
];

/// The cases about spending: failed turns, round budgets, undecodable chats, parking.
pub const SPENDING_CASES: &[Case] = &[
    case!(spending::a_failing_provider_is_asked_max_attempts_times_then_the_chat_is_parked),
    case!(spending::a_model_that_asks_for_tools_every_round_is_parked_at_the_round_budget),
    case!(spending::a_model_that_asks_for_tools_without_end_stops_at_the_request_budget),
    case!(spending::a_chat_that_tasks_keep_going_stops_at_its_chat_budget),
    case!(spending::a_stored_chat_that_does_not_decode_is_parked_and_the_others_still_run),
    case!(spending::failed_turns_are_tried_again_after_a_doubling_delay_up_to_its_cap),
    case!(spending::a_turn_that_ends_well_starts_the_attempt_count_again),
    case!(spending::parked_chats_are_listed_a_page_at_a_time),
    case!(spending::a_turn_that_panics_counts_as_a_failed_attempt),
    case!(spending::a_provider_that_panics_in_a_workers_turn_counts_as_a_failed_attempt),
    case!(spending::a_provider_that_panics_in_an_ask_counts_as_a_failed_turn),
    case!(spending::a_turn_dropped_by_another_turns_panic_is_not_a_failed_turn),
    case!(spending::a_chat_whose_turn_ends_its_worker_every_time_is_parked_at_the_bound),
    case!(spending::a_chat_that_ended_its_worker_once_and_then_finished_starts_its_count_again),
    case!(spending::a_crashed_chat_the_application_claims_after_the_lease_is_parked_at_the_bound),
    case!(spending::a_worker_taking_back_its_own_lapsed_claim_counts_no_abandoned_claim),
];

/// The cases about the edges: renewals that hang, two turns of one worker, what is added to a
/// chat behind its store, calls without their tools, cancelling from elsewhere, fenced files
/// (`tests/tests/durable/durable_edges.rs`).
pub const EDGE_CASES: &[Case] = &[
    case!(edges::a_worker_whose_renewals_hang_never_runs_a_call_twice_at_once),
    case!(edges::a_worker_gives_back_a_chat_its_turn_still_runs_until_that_turn_has_stopped),
    case!(edges::a_store_that_stops_answering_holds_no_turn_or_pick_past_the_lease),
    case!(edges::a_turn_that_cannot_renew_stops_and_a_sequential_call_stays_a_barrier),
    case!(edges::a_message_enqueued_to_a_chat_behind_its_store_is_stored),
    case!(edges::an_edit_in_place_on_a_chat_behind_its_store_is_refused_never_dropped),
    case!(edges::a_decision_on_a_chat_behind_its_store_is_refused_never_dropped),
    case!(edges::a_decision_on_a_chat_another_process_holds_is_an_error_never_dropped),
    case!(edges::an_applications_mistakes_count_toward_no_parking),
    case!(edges::a_decision_a_cancel_request_overrides_is_an_error_never_silent),
    case!(edges::a_call_whose_tool_the_chat_lacks_stays_pending),
    case!(edges::a_cancel_without_a_paused_tasks_tool_is_refused),
    case!(edges::a_cancel_made_here_leaves_the_chat_at_rest),
    case!(edges::a_cancel_from_another_process_reaches_the_holder_and_a_worker),
    case!(edges::a_dropped_turn_gives_its_run_claim_up),
    case!(edges::a_release_after_a_commit_that_gave_the_claim_up_changes_nothing),
    case!(edges::a_cancel_the_holder_never_saw_is_carried_out_and_later_work_answered),
    case!(edges::an_answer_nested_as_deep_as_json_is_read_is_loaded_again),
];

/// Runs every case of [`CASES`], each on the empty store `make` gives for its number; prints
/// each name.
pub async fn run_all<F, Fut>(make: F)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    run_cases(CASES, make).await;
}

/// Runs `cases`, each on the empty store `make` gives for its number; prints each name.
pub async fn run_cases<F, Fut>(cases: &[Case], make: F)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    for (number, (name, case)) in cases.iter().enumerate() {
        println!("store suite: {name}");
        case(make(number).await).await;
    }
}

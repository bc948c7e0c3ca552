//! What the stream assemblers' unit tests read out of the events they produce.

use llm_tools_core::StreamEvent;

/// The calls of the `Completed` answer that ends `events`: each one's id and arguments.
pub(crate) fn completed_calls(events: &[StreamEvent]) -> Vec<(String, String)> {
    let Some(StreamEvent::Completed(response)) = events.last() else {
        panic!("the stream did not end with its answer: {events:?}");
    };
    response
        .message
        .tool_calls
        .iter()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect()
}

/// The indexes of the `ToolCallReady` events, in the order they came.
pub(crate) fn ready_indexes(events: &[StreamEvent]) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallReady { index } => Some(*index),
            _ => None,
        })
        .collect()
}

/// Checks that each `ToolCallStarted` event's `index` is its call's place in the `Completed`
/// answer that ends `events`, and returns the answer's call ids.
pub(crate) fn calls_at_their_started_places(events: &[StreamEvent]) -> Vec<String> {
    let calls = completed_calls(events);
    for event in events {
        if let StreamEvent::ToolCallStarted { index, id, .. } = event {
            assert_eq!(
                calls.get(*index).map(|(call, _)| call),
                Some(id),
                "call `{id}` started at {index}; the answer: {calls:?}"
            );
        }
    }
    calls.into_iter().map(|(id, _)| id).collect()
}

//! The setup both chat benchmarks share: 20 tools of three parameters each, an answer asking
//! for 3 calls, and a chat of 50 messages of history ending with a user message.

use std::sync::Arc;

use llm_tools_core::chat::{Chat, ChatState};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Tool, ToolCall};

macro_rules! tools {
    ($($name:ident => $ty:ident),* $(,)?) => {
        $(
            /// Gets the weather forecast for a city
            ///
            /// # Arguments
            /// * `city` - The city
            /// * `days` - How many days ahead
            /// * `units` - metric or imperial
            #[llm_tools_core::tool]
            async fn $name(city: String, days: u32, units: Option<String>) -> String {
                let _ = (days, units);
                city
            }
        )*
        pub(crate) fn all_tools() -> Vec<Arc<dyn Tool>> {
            vec![$(Arc::new($ty) as Arc<dyn Tool>),*]
        }
    };
}

tools! {
    tool_00 => Tool00, tool_01 => Tool01, tool_02 => Tool02, tool_03 => Tool03,
    tool_04 => Tool04, tool_05 => Tool05, tool_06 => Tool06, tool_07 => Tool07,
    tool_08 => Tool08, tool_09 => Tool09, tool_10 => Tool10, tool_11 => Tool11,
    tool_12 => Tool12, tool_13 => Tool13, tool_14 => Tool14, tool_15 => Tool15,
    tool_16 => Tool16, tool_17 => Tool17, tool_18 => Tool18, tool_19 => Tool19,
}

const ARGS: &str = r#"{"city":"Berlin","days":3,"units":"metric"}"#;

pub(crate) fn three_calls() -> Message {
    Message::assistant_with_calls(
        "",
        ["tool_00", "tool_07", "tool_13"]
            .iter()
            .enumerate()
            .map(|(i, name)| ToolCall::new(format!("call_{i}"), *name, ARGS))
            .collect(),
    )
}

/// A chat with 50 messages of history (earlier rounds included), ending with a user message.
pub(crate) fn history() -> ChatState {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_instructions("You are a weather assistant.");
    while chat.messages().len() < 43 {
        let n = chat.messages().len();
        chat.add_message(Message::user(format!("Question {n}?")))
            .unwrap();
        chat.add_message(Message::assistant(format!("Answer {n}.")))
            .unwrap();
    }
    let mut state = serde_json::to_value(chat.state()).unwrap();
    let messages = state["messages"].as_array_mut().unwrap();
    let round = three_calls();
    messages.push(serde_json::to_value(Message::user("Weather?")).unwrap());
    messages.push(serde_json::to_value(&round).unwrap());
    for call in &round.tool_calls {
        let result = Message::tool_result(call.id.as_str(), "Berlin", false);
        messages.push(serde_json::to_value(result).unwrap());
    }
    messages.push(serde_json::to_value(Message::assistant("Sunny in Berlin.")).unwrap());
    messages.push(serde_json::to_value(Message::user("And tomorrow?")).unwrap());
    assert_eq!(messages.len(), 50);
    serde_json::from_value(state).unwrap()
}

//! The scenario's conversations with llm-tools: 20 `#[tool]` fns, a `Chat` on the Chat
//! Completions provider pointed at the mock, `ask` (or `ask_stream`) until the final answer.
//!
//! ```sh
//! e2e-llm-tools --url http://127.0.0.1:PORT [--conversations 200] [--warmup 20] [--stream]
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use e2e_bench::client::{self, Client};
use e2e_bench::scenario::{self, Units};
use futures::StreamExt as _;
use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{Provider, Tool, tool};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig};

fn main() -> ExitCode {
    client::main(LlmTools::new)
}

macro_rules! forecast_tools {
    ($($name:ident $ty:ident $doc:tt;)*) => {
        $(
            #[doc = $doc]
            ///
            /// # Arguments
            /// * `city` - City name, e.g. Berlin
            /// * `days` - Number of days to forecast, 1 to 14
            /// * `units` - Unit system of the answer
            #[tool]
            async fn $name(city: String, days: u32, units: Units) -> String {
                scenario::forecast(stringify!($name), &city, days, units).await
            }
        )*

        fn tools() -> Vec<Arc<dyn Tool>> {
            vec![$(Arc::new($ty) as Arc<dyn Tool>),*]
        }
    };
}

forecast_tools! {
    tool_00 Tool00 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 00)";
    tool_01 Tool01 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 01)";
    tool_02 Tool02 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 02)";
    tool_03 Tool03 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 03)";
    tool_04 Tool04 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 04)";
    tool_05 Tool05 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 05)";
    tool_06 Tool06 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 06)";
    tool_07 Tool07 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 07)";
    tool_08 Tool08 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 08)";
    tool_09 Tool09 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 09)";
    tool_10 Tool10 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 10)";
    tool_11 Tool11 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 11)";
    tool_12 Tool12 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 12)";
    tool_13 Tool13 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 13)";
    tool_14 Tool14 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 14)";
    tool_15 Tool15 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 15)";
    tool_16 Tool16 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 16)";
    tool_17 Tool17 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 17)";
    tool_18 Tool18 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 18)";
    tool_19 Tool19 " Gets the weather forecast for a city: temperature, wind and rain for the coming days (source 19)";
}

struct LlmTools {
    provider: Arc<dyn Provider>,
    tools: Vec<Arc<dyn Tool>>,
}

impl LlmTools {
    fn new(args: &e2e_bench::cli::ClientArgs) -> Result<Self, String> {
        let config = OpenAiConfig::compatible(format!("{}/v1", args.url), scenario::MODEL);
        let provider = OpenAiChat::new(config).map_err(|e| e.to_string())?;
        Ok(Self {
            provider: Arc::new(provider),
            tools: tools(),
        })
    }
}

impl Client for LlmTools {
    const NAME: &'static str = "llm-tools";

    async fn conversation(&mut self, stream: bool) -> Result<String, String> {
        let mut chat = Chat::with_shared_provider(Arc::clone(&self.provider));
        chat.with_tools(self.tools.clone())
            .map_err(|e| e.to_string())?;
        if !stream {
            let outcome = chat
                .ask(scenario::PROMPT)
                .await
                .map_err(|e| e.to_string())?;
            return outcome
                .text()
                .ok_or_else(|| format!("the chat paused: {outcome:?}"));
        }
        let mut events = chat.ask_stream(scenario::PROMPT);
        while let Some(event) = events.next().await {
            if let ChatEvent::Done(answer) = event.map_err(|e| e.to_string())? {
                return Ok(answer.text());
            }
        }
        Err("the stream ended without an answer".into())
    }
}

use llm_tools_core::Chat;
use llm_tools_core::testing::ScriptedProvider;

struct Settings;

fn main() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_tools(Settings).unwrap();
}

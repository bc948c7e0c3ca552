// Tools register themselves at compile time, in a crate that forbids unsafe code (the
// registration's platform plumbing lives in `inventory`, not in the expansion).
#![forbid(unsafe_code)]

use llm_tools_core::{all_tool_specs, tool, toolset, Namespace};

/// Gets the weather
#[tool]
async fn weather(city: String) -> String {
    city
}

const KB: Namespace = Namespace::new("kb").description("The knowledge base");

struct Kb;

#[toolset(namespace = KB)]
impl Kb {
    /// Searches the knowledge base
    #[tool]
    async fn search(&self, query: String) -> Vec<String> {
        vec![query]
    }
}

fn main() {
    fn local() {
        /// Declared inside a fn body
        #[tool]
        async fn local_tool() {}
    }
    local();
    let _ = (weather, Kb);
    let names: Vec<&str> = all_tool_specs().iter().map(|s| s.joined_name()).collect();
    assert_eq!(names, ["kb_search", "local_tool", "weather"]);
}

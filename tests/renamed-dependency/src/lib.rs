//! Tools declared in a crate that depends on `llm-tools-core` under the name `tools`
//! (`tools = { package = "llm-tools-core", … }`): `#[tool]` and `#[toolset]` find the crate by the
//! name the manifest gives it, with no `crate = …` key. Building this crate is the test; the unit
//! tests check the tools work.

use std::sync::Arc;

use tools::schemars::JsonSchema;
use tools::serde::Deserialize;
use tools::{Namespace, tool, toolset};

/// Customer records.
pub const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// A place on the map.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tools::serde")]
#[schemars(crate = "tools::schemars")]
pub struct Place {
    /// The city.
    pub city: String,
}

/// Gets the weather at a place
///
/// # Arguments
/// * `place` - Where
/// * `days` - How many days ahead
#[tool(max_run_time = "30s")]
pub async fn weather(place: Place, #[arg(default)] days: u8) -> String {
    format!("sunny in {} for {days} days", place.city)
}

/// Records about customers.
pub struct Crm {
    /// The customers' emails.
    pub emails: Vec<String>,
}

#[toolset(namespace = CRM)]
impl Crm {
    /// Counts the customers
    #[tool]
    pub async fn count(&self) -> usize {
        self.emails.len()
    }
}

/// Every tool of this crate, as a chat takes them.
pub fn all_tools(crm: Crm) -> Vec<Arc<dyn tools::Tool>> {
    let mut all: Vec<Arc<dyn tools::Tool>> = vec![Arc::new(Weather)];
    all.extend(Arc::new(crm).tools());
    all
}

#[cfg(test)]
mod tests {
    use tools::{RawArgs, Tool, ToolContext, ToolOutcome};

    use super::*;

    async fn call(tool: &dyn Tool, args: &str) -> String {
        match tool
            .call(RawArgs::new(args), ToolContext::detached("c1"))
            .await
        {
            ToolOutcome::Output(o) => o.into_text(),
            other => format!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn tools_of_a_crate_that_renames_the_dependency_work() {
        let all = all_tools(Crm {
            emails: vec!["a@example.com".into(), "b@example.com".into()],
        });
        let names: Vec<_> = all
            .iter()
            .map(|t| t.spec().joined_name().to_owned())
            .collect();
        assert_eq!(names, ["weather", "crm_count"]);
        let place = &Weather::tool_spec().parameters()["properties"]["place"];
        assert_eq!(place["properties"]["city"]["description"], "The city.");
        assert_eq!(
            call(&Weather, r#"{"place": {"city": "Oslo"}}"#).await,
            "sunny in Oslo for 0 days"
        );
        assert_eq!(call(all[1].as_ref(), "{}").await, "2");
    }
}

//! Every `#[tool]` and `#[toolset]` tool registers itself: `all_tool_specs` lists them without a
//! list kept by hand, so a check over it covers a tool added later without being edited.

use llm_tools_core::{Namespace, all_tool_specs, is_valid_tool_name, tool, toolset};

/// Gets the weather
#[tool]
async fn weather(city: String) -> String {
    format!("15°C in {city}")
}

const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Customer records
struct Crm;

#[toolset(namespace = CRM)]
impl Crm {
    /// Finds a customer
    #[tool]
    async fn lookup(&self, email: String) -> String {
        email
    }
}

/// A tool type with its own state
struct Clock;

#[tool]
impl Clock {
    /// Tells the time
    async fn execute(&self) -> &'static str {
        "12:00"
    }
}

/// Stands for a tool someone adds later, in another module, without touching the check below.
mod added_later {
    use llm_tools_core::tool;

    /// Converts a currency
    #[tool]
    pub(crate) async fn convert(amount: f64, to: String) -> String {
        format!("{amount} {to}")
    }
}

/// The check a project keeps: every registered tool, whatever it is, meets it. It names no tool.
fn check_every_tool() -> Vec<String> {
    let specs = all_tool_specs();
    for spec in &specs {
        assert!(
            is_valid_tool_name(spec.joined_name()),
            "{}",
            spec.joined_name()
        );
        assert!(!spec.description().is_empty(), "{}", spec.joined_name());
        assert_eq!(
            spec.parameters()["type"],
            "object",
            "{}",
            spec.joined_name()
        );
    }
    specs.iter().map(|s| s.joined_name().to_owned()).collect()
}

#[test]
fn every_form_of_tool_is_registered_and_checked() {
    let checked = check_every_tool();
    assert_eq!(checked, ["clock", "convert", "crm_lookup", "weather"]);
}

#[test]
fn a_tool_added_in_another_module_is_checked_without_touching_the_check() {
    let checked = check_every_tool();
    assert!(
        checked
            .iter()
            .any(|n| n == added_later::Convert::JOINED_NAME)
    );
    // The registry hands out the same spec the tool type does.
    assert!(
        all_tool_specs()
            .iter()
            .any(|s| std::ptr::eq(*s, added_later::Convert::tool_spec()))
    );
    // The fns stay callable as written.
    let _ = (weather, added_later::convert, Crm, Clock);
}

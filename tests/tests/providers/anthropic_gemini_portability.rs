//! The portability check on every provider's dialects at once, as a user's CI would run it: a
//! set of ordinary tools is portable everywhere, and tools that are not are named with the
//! dialect, the place in the schema and the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::{Namespace, Tool, tool};
use llm_tools_providers::schema::{Dialect, FindingKind, check_portability};
use llm_tools_tests::fixtures::{AnyOfParams, BestLanguageToLearn, Weather};

const CRM: Namespace = Namespace::new("crm").description("Customer records and orders");

/// One stop of a trip.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Stop {
    /// The city
    city: String,
    /// How many nights
    nights: Option<u8>,
}

/// How to travel.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Mode {
    Train,
    Plane,
}

/// Plans a trip
///
/// # Arguments
/// * `stops` - Where to stop, in order
/// * `mode` - How to travel
#[tool]
async fn plan_trip(stops: Vec<Stop>, mode: Option<Mode>) -> String {
    format!(
        "{} stops, by {}",
        stops.len(),
        if mode.is_some() {
            "choice"
        } else {
            "any means"
        }
    )
}

/// Finds a customer's open orders
#[tool(namespace = CRM)]
async fn open_orders(customer_id: String, limit: Option<u32>) -> String {
    format!("{customer_id}: {} orders", limit.unwrap_or(0))
}

#[test]
fn a_set_of_tools_is_portable_to_every_provider() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Weather),
        Arc::new(BestLanguageToLearn),
        Arc::new(AnyOfParams),
        Arc::new(PlanTrip),
        Arc::new(OpenOrders),
    ];
    let report = check_portability(&tools, Dialect::ALL);
    assert!(report.is_portable(), "{report}");
    // What is left: Gemini's older `parameters` field cannot say that an object is closed,
    // Anthropic's strict mode does not enforce numeric bounds (they move to the description),
    // Bedrock forwards bounds to models that may ignore them, and Ollama drops them (they move to
    // the description). Every other dialect takes these tools whole.
    let mut left: Vec<(Dialect, &str, &str)> = report
        .findings()
        .iter()
        .map(|f| {
            assert_eq!(f.kind, FindingKind::Weakened, "{f}");
            let keyword = ["additionalProperties", "minimum", "maximum"]
                .into_iter()
                .find(|k| f.message.contains(k))
                .unwrap_or_else(|| panic!("unexpected finding: {f}"));
            (f.dialect, f.tool.as_str(), keyword)
        })
        .collect();
    left.sort_by_key(|(d, t, k)| (d.name(), *t, *k));
    assert_eq!(
        left,
        [
            (Dialect::AnthropicStrict, "crm_open_orders", "minimum"),
            (Dialect::AnthropicStrict, "plan_trip", "maximum"),
            (Dialect::AnthropicStrict, "plan_trip", "minimum"),
            (Dialect::Bedrock, "crm_open_orders", "minimum"),
            (Dialect::Bedrock, "plan_trip", "minimum"),
            (
                Dialect::GeminiParameters,
                "any_of_params",
                "additionalProperties"
            ),
            (
                Dialect::GeminiParameters,
                "crm_open_orders",
                "additionalProperties"
            ),
            (
                Dialect::GeminiParameters,
                "plan_trip",
                "additionalProperties"
            ),
            (Dialect::GeminiParameters, "weather", "additionalProperties"),
            (Dialect::Ollama, "crm_open_orders", "minimum"),
            (Dialect::Ollama, "plan_trip", "maximum"),
            (Dialect::Ollama, "plan_trip", "minimum"),
        ],
        "{report}"
    );
}

/// Sets labels
#[tool(schema = serde_json::json!({
    "type": "object",
    "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["labels"]
}))]
async fn set_labels(labels: serde_json::Map<String, serde_json::Value>) -> String {
    format!("{} labels", labels.len())
}

/// Sends a form
#[tool(schema = serde_json::json!({
    "type": "object",
    "properties": {
        "first-name": {"type": "string"},
        "values": {"type": "array"},
        "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    },
    "required": ["first-name"]
}))]
async fn send_form(values: Vec<serde_json::Value>) -> String {
    format!("{} values", values.len())
}

/// Opens a page
#[tool(namespace = "browser")]
async fn open(url: String) -> String {
    url
}

#[test]
fn tools_that_are_not_portable_are_named_per_dialect() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SetLabels), Arc::new(SendForm), Arc::new(Open)];
    let report = check_portability(&tools, Dialect::ALL);
    assert!(!report.is_portable());
    let has = |tool: &str, dialect: Dialect, kind: FindingKind, path: &str| {
        report
            .for_tool(tool)
            .any(|f| f.dialect == dialect && f.kind == kind && f.path == path)
    };
    // A map cannot be strict anywhere, and Gemini's `parameters` loses its value type.
    assert_eq!(report.not_strict(Dialect::AnthropicStrict), ["set_labels"]);
    assert!(has(
        "set_labels",
        Dialect::OpenAiChat,
        FindingKind::NotStrict,
        "/properties/labels"
    ));
    assert!(has(
        "set_labels",
        Dialect::GeminiParameters,
        FindingKind::Weakened,
        "/properties/labels"
    ));
    assert!(
        report
            .for_tool("set_labels")
            .all(|f| f.dialect != Dialect::Anthropic && f.dialect != Dialect::GeminiJsonSchema)
    );
    // An array without items: OpenAI and Gemini's `parameters` reject it.
    assert!(has(
        "send_form",
        Dialect::OpenAiChat,
        FindingKind::Rejected,
        "/properties/values"
    ));
    assert!(has(
        "send_form",
        Dialect::GeminiParameters,
        FindingKind::Rejected,
        "/properties/values"
    ));
    // A property name Gemini's `parameters` does not accept.
    assert!(has(
        "send_form",
        Dialect::GeminiParameters,
        FindingKind::Rejected,
        "/properties/first-name"
    ));
    // `oneOf` goes as `anyOf` where it must.
    assert!(has(
        "send_form",
        Dialect::GeminiJsonSchema,
        FindingKind::Weakened,
        "/properties/id"
    ));
    assert!(has(
        "send_form",
        Dialect::AnthropicStrict,
        FindingKind::Weakened,
        "/properties/id"
    ));
    // The `browser` namespace is reserved on Responses and Anthropic, not elsewhere.
    let rejected: Vec<Dialect> = report
        .for_tool("browser_open")
        .filter(|f| f.kind == FindingKind::Rejected)
        .map(|f| f.dialect)
        .collect();
    assert!(rejected.contains(&Dialect::OpenAiResponses));
    assert!(rejected.contains(&Dialect::Anthropic) && rejected.contains(&Dialect::AnthropicStrict));
    assert!(
        !rejected.contains(&Dialect::GeminiJsonSchema) && !rejected.contains(&Dialect::OpenAiChat)
    );
}

#[test]
fn assert_portable_fails_with_every_blocking_finding() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SetLabels), Arc::new(Open)];
    let report = check_portability(&tools, Dialect::ALL);
    let panicked = std::panic::catch_unwind(|| report.assert_portable())
        .expect_err("a map parameter is not portable");
    let message = panicked
        .downcast_ref::<String>()
        .expect("the assertion's message is a String");
    assert!(message.contains("block portability"), "{message}");
    assert!(
        message.contains("openai-chat: tool `set_labels` not strict at `/properties/labels`"),
        "{message}"
    );
    // Weakenings alone do not fail it.
    assert!(!message.contains("weakened"), "{message}");
    let portable: Vec<Arc<dyn Tool>> = vec![];
    check_portability(&portable, Dialect::ALL).assert_portable();
}

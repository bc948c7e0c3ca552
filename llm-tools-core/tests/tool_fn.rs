//! `#[tool]` on an `async fn`: the generated type, its spec, and real calls through `Tool::call`.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use std::future::Future;
use std::sync::Arc;

use llm_tools_core::{
    Attachment, IntoTools, Namespace, RawArgs, SpillToFile, Task, Tool, ToolContext, ToolError,
    ToolOutcome, ToolOutput, tool,
};
use serde_json::json;

fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn call(tool: &dyn Tool, args: &str) -> ToolOutcome {
    run(tool.call(RawArgs::new(args), ToolContext::detached("call-1")))
}

fn text(outcome: ToolOutcome) -> String {
    match outcome {
        ToolOutcome::Output(o) => o.into_text(),
        other => panic!("expected an output, got {other:?}"),
    }
}

fn error(outcome: ToolOutcome) -> ToolError {
    match outcome {
        ToolOutcome::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Metric,
    Imperial,
}

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude in decimal degrees, e.g. 52.52
/// * `longitude` - Longitude in decimal degrees
/// * `units` - Unit system for the answer
#[tool]
async fn weather(latitude: f64, longitude: f64, units: Option<Units>) -> Result<String, ToolError> {
    Ok(format!("15 at {latitude},{longitude} in {units:?}"))
}

#[test]
fn fn_stays_callable_as_written() {
    let out = run(weather(1.0, 2.0, None)).unwrap();
    assert_eq!(out, "15 at 1,2 in None");
}

#[test]
fn name_description_and_schema_come_from_the_fn() {
    let spec = Weather.spec();
    assert_eq!(spec.name(), "weather");
    assert_eq!(spec.joined_name(), "weather");
    assert!(spec.namespace().is_none());
    assert_eq!(spec.description(), "Gets current weather for a location");
    let params = spec.parameters();
    assert_eq!(params["type"], "object");
    assert_eq!(params["required"], json!(["latitude", "longitude"]));
    assert_eq!(
        params["properties"]["latitude"],
        json!({"type": "number", "description": "Latitude in decimal degrees, e.g. 52.52"})
    );
    assert_eq!(
        params["properties"]["units"]["description"],
        "Unit system for the answer"
    );
    assert_eq!(params["additionalProperties"], false);
    assert!(spec.validate().is_ok());
}

#[test]
fn consts_are_readable_without_an_instance() {
    const NAME: &str = Weather::NAME;
    const JOINED: &str = Weather::JOINED_NAME;
    assert_eq!(NAME, "weather");
    assert_eq!(JOINED, "weather");
    assert!(Weather::NAMESPACE.is_none());
}

#[test]
fn spec_is_built_once() {
    let a: *const _ = Weather.spec();
    let b: *const _ = Weather.spec();
    assert!(std::ptr::eq(a, b));
    let shared: Arc<dyn Tool> = Arc::new(Weather);
    assert!(std::ptr::eq(shared.spec(), Weather.spec()));
}

#[test]
fn arguments_are_decoded_and_passed() {
    let out = text(call(
        &Weather,
        r#"{"latitude": 52.5, "longitude": 13.4, "units": "metric"}"#,
    ));
    assert_eq!(out, "15 at 52.5,13.4 in Some(Metric)");
    // Gemini sends integral numbers as floats; `null` for an option is `None`.
    let out = text(call(
        &Weather,
        r#"{"latitude": 1, "longitude": 2.0, "units": null}"#,
    ));
    assert_eq!(out, "15 at 1,2 in None");
}

#[test]
fn bad_arguments_are_recoverable_errors_naming_the_argument() {
    let e = error(call(&Weather, r#"{"latitude": "north", "longitude": 1}"#));
    assert!(e.is_recoverable());
    let msg = e.to_string();
    assert!(msg.contains("argument `latitude`"), "{msg}");
    assert!(
        msg.contains("accepted arguments: `latitude`, `longitude`, `units`"),
        "{msg}"
    );
    let msg = error(call(&Weather, r#"{"latitude": 1}"#)).to_string();
    assert!(msg.contains("missing field `longitude`"), "{msg}");
    let msg = error(call(
        &Weather,
        r#"{"latitude": 1, "longitude": 2, "city": "x"}"#,
    ))
    .to_string();
    assert!(msg.contains("unknown field `city`"), "{msg}");
    let msg = error(call(
        &Weather,
        r#"{"latitude": 1, "longitude": 2, "units": "kelvin"}"#,
    ))
    .to_string();
    assert!(msg.contains("argument `units`"), "{msg}");
    let msg = error(call(&Weather, "{not json")).to_string();
    assert!(msg.contains("not valid JSON"), "{msg}");
}

/// Counts to n
#[tool]
async fn count(n: u8) -> String {
    n.to_string()
}

#[test]
fn integral_floats_decode_into_integer_parameters() {
    assert_eq!(text(call(&Count, r#"{"n": 3.0}"#)), "3");
    let msg = error(call(&Count, r#"{"n": 3.5}"#)).to_string();
    assert!(msg.contains("argument `n`"), "{msg}");
}

/// Returns the current date, time, and time zone
#[tool]
pub async fn current_time() -> String {
    "2026-01-01T12:00:00Z".into()
}

#[test]
fn a_tool_without_parameters_has_an_empty_object_schema() {
    let spec = CurrentTime.spec();
    assert_eq!(spec.name(), "current_time");
    assert_eq!(
        spec.parameters(),
        &json!({"type": "object", "properties": {}})
    );
    assert_eq!(text(call(&CurrentTime, "{}")), "2026-01-01T12:00:00Z");
    assert_eq!(text(call(&CurrentTime, "")), "2026-01-01T12:00:00Z");
    let msg = error(call(&CurrentTime, r#"{"zone": "UTC"}"#)).to_string();
    assert!(msg.contains("takes no arguments"), "{msg}");
}

/// Says who called
///
/// # Arguments
/// * `greeting` - How to greet
/// * `ctx` - The call's context (injected, so not in the schema)
#[tool]
async fn whoami(mut greeting: String, ctx: &ToolContext) -> String {
    greeting.push('!');
    format!("{greeting} from {}", ctx.call_id())
}

/// Same, with the context by value
#[tool]
async fn whoami_owned(ctx: ToolContext, greeting: String) -> String {
    format!("{greeting} from {}", ctx.call_id())
}

#[test]
fn the_context_is_injected_and_not_in_the_schema() {
    assert_eq!(
        Whoami.spec().parameters()["properties"],
        json!({"greeting": {"type": "string", "description": "How to greet"}})
    );
    assert_eq!(
        text(call(&Whoami, r#"{"greeting":"hi"}"#)),
        "hi! from call-1"
    );
    assert_eq!(
        text(call(&WhoamiOwned, r#"{"greeting":"yo"}"#)),
        "yo from call-1"
    );
}

#[derive(serde::Serialize)]
struct Forecast {
    temperature: f64,
}

/// Structured
#[tool]
async fn get_forecast() -> Forecast {
    Forecast { temperature: 15.5 }
}

/// Structured or failing
#[tool]
async fn maybe_forecast(fail: bool) -> Result<Forecast, ToolError> {
    if fail {
        Err(ToolError::recoverable("no station nearby"))
    } else {
        Ok(Forecast { temperature: 1.0 })
    }
}

/// Fails with I/O
#[tool]
async fn read_missing() -> Result<String, ToolError> {
    Ok(std::fs::read_to_string("/definitely/not/here")?)
}

/// Static text
#[tool]
async fn hello() -> &'static str {
    "hello"
}

/// Nothing
#[tool]
async fn nothing() {}

/// A file
#[tool]
async fn fetch_file() -> (String, Vec<Attachment>) {
    (
        "Fetched the file.".into(),
        vec![
            Attachment::bytes("text/plain", b"Ruby is the best.".to_vec())
                .with_filename("ruby.txt"),
        ],
    )
}

/// Rich output
#[tool]
async fn rich() -> ToolOutput {
    ToolOutput::text("rich")
}

/// A render that runs in the background.
pub struct Render;

/// Pauses
#[tool]
impl Render {
    async fn execute(&self) -> Task {
        Task::working("Rendering")
    }

    async fn resume(&self, task: Task) -> Task {
        task
    }
}

#[test]
fn results_of_every_kind_convert() {
    assert_eq!(text(call(&GetForecast, "{}")), r#"{"temperature":15.5}"#);
    assert_eq!(
        text(call(&MaybeForecast, r#"{"fail":false}"#)),
        r#"{"temperature":1.0}"#
    );
    let e = error(call(&MaybeForecast, r#"{"fail":true}"#));
    assert!(e.is_recoverable() && e.to_string() == "no station nearby");
    assert!(error(call(&ReadMissing, "{}")).is_fatal());
    assert_eq!(text(call(&Hello, "{}")), "hello");
    assert_eq!(text(call(&Nothing, "{}")), "");
    let ToolOutcome::Output(out) = call(&FetchFile, "{}") else {
        panic!()
    };
    assert_eq!(out.as_text(), "Fetched the file.");
    assert_eq!(out.attachments()[0].media_type(), "text/plain");
    assert_eq!(text(call(&Rich, "{}")), "rich");
    assert!(
        matches!(call(&Render, "{}"), ToolOutcome::Task(t) if t.status_message() == Some("Rendering"))
    );
}

/// Shouts
#[tool(name = "shout", description = "Repeats the text in capitals")]
async fn loud(
    /// The text to repeat
    text: String,
    #[arg(description = "How many times", default)] times: u8,
    #[arg(default = 1)] gap: usize,
) -> String {
    let times = times.max(1);
    vec![text.to_uppercase(); usize::from(times)].join(&" ".repeat(gap))
}

#[test]
fn name_description_and_parameter_attributes() {
    let spec = Loud.spec();
    assert_eq!(Loud::NAME, "shout");
    assert_eq!(spec.name(), "shout");
    assert_eq!(spec.description(), "Repeats the text in capitals");
    let params = spec.parameters();
    assert_eq!(params["required"], json!(["text"]));
    assert_eq!(
        params["properties"]["text"]["description"],
        "The text to repeat"
    );
    assert_eq!(
        params["properties"]["times"]["description"],
        "How many times"
    );
    assert_eq!(params["properties"]["times"]["default"], 0);
    assert_eq!(params["properties"]["gap"]["default"], 1);
    assert_eq!(text(call(&Loud, r#"{"text":"hi"}"#)), "HI");
    // OpenAI strict mode sends `null` for optional parameters: the default applies.
    assert_eq!(
        text(call(&Loud, r#"{"text":"hi","times":null,"gap":null}"#)),
        "HI"
    );
    assert_eq!(
        text(call(&Loud, r#"{"text":"hi","times":2,"gap":2}"#)),
        "HI  HI"
    );
}

/// The CRM namespace.
pub const CRM: Namespace = Namespace::new("crm").description("Customer records");

fn is_vip(call: &llm_tools_core::ToolCall) -> bool {
    call.arguments.contains("vip")
}

/// Finds a customer
#[tool(
    namespace = CRM,
    max_run_time = "90s",
    defer,
    spill_to_file = 20_000,
    needs_approval = is_vip,
    sequential
)]
async fn lookup(email: String) -> String {
    email
}

/// Deletes a customer
#[tool(
    namespace = "crm",
    namespace_description = "Customer records",
    needs_approval,
    spill_to_file = false,
    max_run_time = "1h30m"
)]
async fn delete_customer(email: String) -> String {
    email
}

/// Pings
#[tool(namespace = none, defer = false)]
async fn ping() -> &'static str {
    "pong"
}

#[test]
fn namespaces_and_settings() {
    const JOINED: &str = Lookup::JOINED_NAME;
    assert_eq!(JOINED, "crm_lookup");
    assert_eq!(Lookup::NAMESPACE.as_ref().map(Namespace::name), Some("crm"));
    let spec = Lookup.spec();
    assert_eq!(spec.joined_name(), "crm_lookup");
    assert_eq!(
        spec.namespace().and_then(Namespace::get_description),
        Some("Customer records")
    );
    assert_eq!(
        spec.max_run_time(),
        Some(std::time::Duration::from_secs(90))
    );
    assert!(spec.defer());
    assert_eq!(spec.spill_to_file(), SpillToFile::After(20_000));
    assert!(spec.sequential());
    assert!(!spec.needs_approval());
    let vip = llm_tools_core::ToolCall::new("c", "lookup", r#"{"email":"vip@x"}"#);
    let plain = llm_tools_core::ToolCall::new("c", "lookup", r#"{"email":"a@x"}"#);
    assert!(Lookup.needs_approval(&vip));
    assert!(!Lookup.needs_approval(&plain));

    assert_eq!(DeleteCustomer::JOINED_NAME, "crm_delete_customer");
    let spec = DeleteCustomer.spec();
    assert_eq!(spec.joined_name(), "crm_delete_customer");
    let namespace = spec.namespace().map(|ns| (ns.name(), ns.get_description()));
    assert_eq!(namespace, Some(("crm", Some("Customer records"))));
    assert!(spec.needs_approval());
    assert!(DeleteCustomer.needs_approval(&plain));
    assert_eq!(spec.spill_to_file(), SpillToFile::Never);
    assert_eq!(
        spec.max_run_time(),
        Some(std::time::Duration::from_secs(5400))
    );
    assert!(!spec.defer() && !spec.sequential());

    assert_eq!(Ping::JOINED_NAME, "ping");
    assert!(Ping.spec().namespace().is_none());
    assert!(!Ping.spec().defer());
}

#[test]
fn tools_go_into_a_registry() {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    (Weather, CurrentTime, Lookup).into_tools(&mut tools);
    let names: Vec<&str> = tools.iter().map(|t| t.spec().joined_name()).collect();
    assert_eq!(names, ["weather", "current_time", "crm_lookup"]);
}

/// Finds a place
///
/// # Arguments
/// * latitude - In degrees north
/// - longitude: In degrees east
/// * **radius** – In kilometres
#[tool]
async fn find_place(latitude: f64, longitude: f64, radius: f64) -> String {
    format!("{latitude},{longitude},{radius}")
}

#[test]
fn argument_docs_without_backticks_are_read() {
    use llm_tools_core::Tool as _;
    let properties = &FindPlace.spec().parameters()["properties"];
    assert_eq!(properties["latitude"]["description"], "In degrees north");
    assert_eq!(properties["longitude"]["description"], "In degrees east");
    assert_eq!(properties["radius"]["description"], "In kilometres");
}

/// A sign-up form, a type of the application's own
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Signup {
    /// Their email
    pub email: String,
}

/// Signs a user up
#[tool(struct_name = SignupTool)]
async fn signup(form: Signup) -> String {
    format!("signed up {}", form.email)
}

#[test]
fn struct_name_names_the_generated_type_so_it_cannot_clash() {
    use llm_tools_core::Tool as _;
    assert_eq!(SignupTool::NAME, "signup");
    assert_eq!(SignupTool.spec().name(), "signup");
    let form = Signup {
        email: "ada@example.com".into(),
    };
    assert_eq!(form.email, "ada@example.com");
    assert_eq!(
        text(call(&SignupTool, r#"{"form":{"email":"ada@x"}}"#)),
        "signed up ada@x"
    );
}

/// What the transfer rule reads of a call: only the amount.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TransferAmount {
    amount: u64,
}

fn large(transfer: &TransferAmount) -> bool {
    transfer.amount > 1_000
}

/// Transfers money
#[tool(needs_approval = large)]
async fn transfer(to: String, amount: u64) -> String {
    format!("sent {amount} to {to}")
}

#[test]
fn a_typed_approval_rule_reads_the_decoded_arguments() {
    use llm_tools_core::{Tool as _, ToolCall};
    let call = |args: &str| ToolCall::new("c1", "transfer", args);
    assert!(!Transfer.needs_approval(&call(r#"{"to":"ada","amount":20}"#)));
    assert!(Transfer.needs_approval(&call(r#"{"to":"ada","amount":5000}"#)));
    // Integral floats decode as they do for the tool itself.
    assert!(Transfer.needs_approval(&call(r#"{"to":"ada","amount":5000.0}"#)));
    // Arguments the rule cannot read need approval.
    assert!(Transfer.needs_approval(&call(r#"{"to":"ada"}"#)));
    assert!(Transfer.needs_approval(&call("not json")));
    // The raw-call form still works.
    assert!(Lookup.needs_approval(&call(r#"{"email":"vip@x"}"#)));
    assert!(!Lookup.needs_approval(&call(r#"{"email":"a@x"}"#)));
}

//! `#[tool]` on an `impl` block (`execute`, `resume`) and `#[toolset]`.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use llm_tools_core::{
    IntoTools, Namespace, RawArgs, Task, Tool, ToolContext, ToolError, ToolOutcome, tool, toolset,
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

/// The CRM namespace.
pub const CRM: Namespace = Namespace::new("crm").description("Customer records and orders");

/// A customer record.
#[derive(Clone, serde::Serialize)]
pub struct Customer {
    /// Their email.
    pub email: String,
    /// Their name.
    pub name: String,
}

struct Db(Vec<Customer>);

/// Finds customers.
pub struct CustomerLookup {
    db: Db,
    calls: AtomicUsize,
}

#[tool(namespace = CRM)]
impl CustomerLookup {
    /// Finds a customer by email
    ///
    /// # Arguments
    /// * `email` - The customer's email address
    async fn execute(&self, email: String) -> Result<Option<Customer>, ToolError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(self.db.0.iter().find(|c| c.email == email).cloned())
    }

    fn helper(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

fn lookup() -> CustomerLookup {
    CustomerLookup {
        db: Db(vec![Customer {
            email: "ada@example.com".into(),
            name: "Ada".into(),
        }]),
        calls: AtomicUsize::new(0),
    }
}

#[test]
fn impl_form_implements_tool_for_the_type() {
    let tool = lookup();
    assert_eq!(CustomerLookup::NAME, "customer_lookup");
    assert_eq!(CustomerLookup::JOINED_NAME, "crm_customer_lookup");
    let spec = tool.spec();
    assert_eq!(spec.joined_name(), "crm_customer_lookup");
    assert_eq!(spec.description(), "Finds a customer by email");
    assert_eq!(
        spec.parameters()["properties"]["email"],
        json!({"type": "string", "description": "The customer's email address"})
    );
    assert_eq!(
        text(call(&tool, r#"{"email":"ada@example.com"}"#)),
        r#"{"email":"ada@example.com","name":"Ada"}"#
    );
    assert_eq!(text(call(&tool, r#"{"email":"bob@example.com"}"#)), "null");
    assert_eq!(tool.helper(), 2);
}

/// Gets the weather.
pub struct WeatherTool;

/// Gets the weather
#[tool(name = "Weather")]
impl WeatherTool {
    async fn execute(&self, city: String) -> String {
        format!("sunny in {city}")
    }
}

/// Fetches URLs.
pub struct HTTPClientTool;

#[tool]
impl HTTPClientTool {
    /// Fetches a URL
    async fn execute(&self, url: String, ctx: &ToolContext) -> String {
        format!("{url} for {}", ctx.call_id())
    }
}

#[test]
fn names_come_from_the_type_or_the_attribute() {
    assert_eq!(WeatherTool::NAME, "Weather");
    // The impl block's doc comment is the description when `execute` has none.
    assert_eq!(WeatherTool.spec().description(), "Gets the weather");
    assert_eq!(HTTPClientTool::NAME, "http_client");
    assert_eq!(
        text(call(&HTTPClientTool, r#"{"url":"https://x"}"#)),
        "https://x for call-1"
    );
    assert_eq!(
        HTTPClientTool.spec().parameters()["properties"],
        json!({"url": {"type": "string"}})
    );
}

/// A long job that pauses its call and is resumed by the chat.
pub struct RenderVideo {
    finished: Mutex<HashMap<String, String>>,
}

#[tool(max_run_time = "2h")]
impl RenderVideo {
    /// Renders a video
    async fn execute(&self, scene: String) -> Task {
        Task::working(format!("Rendering {scene}")).with_data("job", json!(format!("job-{scene}")))
    }

    async fn resume(&self, task: Task, scene: String) -> Result<Task, ToolError> {
        let job = task
            .get("job")
            .and_then(|j| j.as_str())
            .unwrap_or("")
            .to_owned();
        match self.finished.lock().unwrap().get(&job) {
            Some(url) => Err(ToolError::recoverable(format!("{scene} done: {url}"))),
            None => Ok(task),
        }
    }
}

#[test]
fn resume_receives_the_task_and_the_arguments() {
    let tool = RenderVideo {
        finished: Mutex::new(HashMap::new()),
    };
    assert_eq!(
        tool.spec().max_run_time(),
        Some(std::time::Duration::from_secs(7200))
    );
    let ToolOutcome::Task(task) = call(&tool, r#"{"scene":"intro"}"#) else {
        panic!("expected a task")
    };
    assert_eq!(task.status_message(), Some("Rendering intro"));
    let args = r#"{"scene":"intro"}"#;
    let again = run(Tool::resume(
        &tool,
        task.clone(),
        RawArgs::new(args),
        ToolContext::detached("c"),
    ));
    assert!(matches!(again, ToolOutcome::Task(_)));
    tool.finished
        .lock()
        .unwrap()
        .insert("job-intro".into(), "https://cdn/intro.mp4".into());
    let done = run(Tool::resume(
        &tool,
        task,
        RawArgs::new(args),
        ToolContext::detached("c"),
    ));
    let ToolOutcome::Error(e) = done else {
        panic!("expected the error arm")
    };
    assert_eq!(e.to_string(), "intro done: https://cdn/intro.mp4");
}

#[test]
fn a_tool_without_resume_fails_a_resumed_call() {
    let tool = lookup();
    let out = run(tool.resume(
        Task::working("x"),
        RawArgs::new("{}"),
        ToolContext::detached("c"),
    ));
    assert!(matches!(out, ToolOutcome::Error(e) if e.is_fatal()));
}

/// Shared state of the CRM tools.
pub struct Crm {
    customers: Mutex<Vec<Customer>>,
}

#[toolset(namespace = CRM)]
impl Crm {
    /// Finds a customer by email
    #[tool]
    pub async fn find_customer(&self, email: String) -> Option<Customer> {
        self.customers
            .lock()
            .unwrap()
            .iter()
            .find(|c| c.email == email)
            .cloned()
    }

    /// Adds a customer
    ///
    /// # Arguments
    /// * `email` - Their email
    /// * `name` - Their full name
    #[tool(needs_approval)]
    pub async fn add_customer(&self, email: String, name: String) -> &'static str {
        self.customers
            .lock()
            .unwrap()
            .push(Customer { email, name });
        "added"
    }

    /// Counts the customers
    #[tool(namespace = none, name = "count_crm_customers")]
    async fn count(&self) -> usize {
        self.customers.lock().unwrap().len()
    }

    fn not_a_tool(&self) -> bool {
        true
    }
}

#[test]
fn toolset_tools_share_state_and_namespace() {
    assert_eq!(CrmFindCustomer::JOINED_NAME, "crm_find_customer");
    assert_eq!(CrmAddCustomer::JOINED_NAME, "crm_add_customer");
    assert_eq!(CrmCount::NAME, "count_crm_customers");
    assert_eq!(CrmCount::JOINED_NAME, "count_crm_customers");
    let crm = Arc::new(Crm {
        customers: Mutex::new(Vec::new()),
    });
    assert!(crm.not_a_tool());
    let tools = Crm::tools(Arc::clone(&crm));
    let names: Vec<&str> = tools.iter().map(|t| t.spec().joined_name()).collect();
    assert_eq!(
        names,
        [
            "crm_find_customer",
            "crm_add_customer",
            "count_crm_customers"
        ]
    );
    let add = &tools[1];
    assert!(add.spec().needs_approval());
    assert_eq!(
        add.spec().parameters()["properties"]["name"]["description"],
        "Their full name"
    );
    assert_eq!(add.spec().namespace().map(Namespace::name), Some("crm"));
    assert_eq!(
        text(call(&**add, r#"{"email":"ada@x","name":"Ada"}"#)),
        "added"
    );
    assert_eq!(text(call(&*tools[2], "{}")), "1");
    assert_eq!(
        text(call(&*tools[0], r#"{"email":"ada@x"}"#)),
        r#"{"email":"ada@x","name":"Ada"}"#
    );
    // The state is shared with the caller's handle.
    assert_eq!(crm.customers.lock().unwrap().len(), 1);
    assert_eq!(Arc::strong_count(&crm), 4);
}

#[test]
fn a_toolset_value_goes_into_a_registry() {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    (
        Crm {
            customers: Mutex::new(Vec::new()),
        },
        lookup(),
    )
        .into_tools(&mut tools);
    assert_eq!(tools.len(), 4);
    let single = CrmCount::new(Arc::new(Crm {
        customers: Mutex::new(Vec::new()),
    }));
    assert_eq!(text(call(&single, "{}")), "0");
}

#[test]
fn an_arc_of_a_toolset_goes_into_a_registry_and_the_caller_keeps_its_state() {
    let crm = Arc::new(Crm {
        customers: Mutex::new(Vec::new()),
    });
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    (Arc::clone(&crm), Arc::new(lookup())).into_tools(&mut tools);
    assert_eq!(tools.len(), 4);
    assert_eq!(
        text(call(&*tools[1], r#"{"email":"ada@x","name":"Ada"}"#)),
        "added"
    );
    // The chat's tools and the application's handle are the same state.
    assert_eq!(crm.customers.lock().unwrap().len(), 1);
}

#[test]
fn specs_are_readable_without_an_instance() {
    let specs = Crm::tool_specs();
    let names: Vec<&str> = specs.iter().map(|s| s.joined_name()).collect();
    assert_eq!(
        names,
        [
            "crm_find_customer",
            "crm_add_customer",
            "count_crm_customers"
        ]
    );
    // The same spec a tool instance returns, built once.
    let crm = Arc::new(Crm {
        customers: Mutex::new(Vec::new()),
    });
    let tools = Crm::tools(crm);
    assert!(std::ptr::eq(specs[1], tools[1].spec()));
    assert!(std::ptr::eq(CrmAddCustomer::tool_spec(), tools[1].spec()));
    assert_eq!(CustomerLookup::tool_spec().name(), lookup().spec().name());
}

/// An export that pauses its call; `cancel` stops the job behind it.
pub struct Export {
    cancelled: Mutex<Vec<(String, String)>>,
}

#[tool]
impl Export {
    /// Exports a report
    async fn execute(&self, report: String, format: String) -> Task {
        Task::working(format!("Exporting {report} as {format}"))
            .with_data("job", json!(format!("job-{report}")))
    }

    async fn resume(&self, task: Task) -> Task {
        task
    }

    async fn cancel(&self, task: Task, report: String) {
        let job = task.get("job").and_then(|j| j.as_str()).unwrap_or("");
        self.cancelled
            .lock()
            .unwrap()
            .push((job.to_owned(), report));
    }
}

#[test]
fn cancel_on_the_impl_form_receives_the_task_and_the_arguments() {
    let tool = Export {
        cancelled: Mutex::new(Vec::new()),
    };
    let args = r#"{"report":"q3","format":"pdf"}"#;
    let ToolOutcome::Task(task) = call(&tool, args) else {
        panic!("expected a task")
    };
    run(Tool::cancel(
        &tool,
        task.clone(),
        RawArgs::new(args),
        ToolContext::detached("c"),
    ));
    assert_eq!(
        *tool.cancelled.lock().unwrap(),
        [("job-q3".to_owned(), "q3".to_owned())]
    );
    // Arguments it cannot decode leave the task alone instead of failing the cancellation.
    run(Tool::cancel(
        &tool,
        task,
        RawArgs::new(r#"{"report":7}"#),
        ToolContext::detached("c"),
    ));
    assert_eq!(tool.cancelled.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn cancelling_a_chat_runs_the_impl_forms_cancel() {
    use llm_tools_core::chat::{Chat, Outcome};
    use llm_tools_core::testing::ScriptedProvider;

    let model = ScriptedProvider::new()
        .then_call("export", json!({"report": "q3", "format": "csv"}))
        .then_text("Cancelled.");
    let tool = Arc::new(Export {
        cancelled: Mutex::new(Vec::new()),
    });
    let mut chat = Chat::new(model);
    chat.with_tools(Arc::clone(&tool)).unwrap();
    let outcome = chat.ask("Export Q3").await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)), "{outcome:?}");
    chat.cancel().await.expect("cancelled");
    assert!(!chat.is_paused());
    assert_eq!(
        *tool.cancelled.lock().unwrap(),
        [("job-q3".to_owned(), "q3".to_owned())]
    );
}

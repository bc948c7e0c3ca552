//! Structured output in the chat loop: the schema each request carries, typed answers, tools
//! beside it, removing it mid-conversation, answers that do not fit (with and without retries),
//! refusals, pauses, and the schema kept in a saved state.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use llm_tools_core::chat::{Chat, ChatState, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{ConfigError, Error, Message, OutputSchema, Role, tool};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct Person {
    name: String,
    age: u32,
}

/// Looks up a person's age in the registry
#[tool]
async fn registry_age(name: String) -> String {
    format!("{name} is 30")
}

/// Books a meeting (needs the user's approval)
#[tool(needs_approval)]
async fn book_meeting(with: String) -> String {
    format!("booked with {with}")
}

fn person_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name", "age"]
    })
}

#[tokio::test]
async fn a_typed_output_goes_with_every_request_and_the_answer_decodes_as_its_type() {
    let model = ScriptedProvider::new().then_text(r#"{"name": "John", "age": 30}"#);
    let mut chat = Chat::new(model.clone());
    chat.with_output::<Person>().unwrap();
    let person: Person = chat
        .ask("Generate John, 30")
        .await
        .unwrap()
        .parsed()
        .unwrap();
    assert_eq!(
        person,
        Person {
            name: "John".into(),
            age: 30
        }
    );
    let sent = model.requests()[0].output.clone().unwrap();
    assert_eq!(sent.name(), "Person");
    assert_eq!(sent.schema(), &person_schema());
    assert!(sent.is_strict());
}

#[tokio::test]
async fn tools_run_first_and_the_turn_ends_on_the_structured_answer() {
    let model = ScriptedProvider::new()
        .then_call("registry_age", json!({"name": "John"}))
        .then_text(r#"{"name": "John", "age": 30}"#);
    let mut chat = Chat::new(model.clone());
    chat.with_tools(RegistryAge)
        .unwrap()
        .with_output::<Person>()
        .unwrap();
    let person: Person = chat
        .ask("How old is John?")
        .await
        .unwrap()
        .parsed()
        .unwrap();
    assert_eq!(person.age, 30);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.output.is_some()));
    assert_eq!(requests[1].messages[2].role, Role::Tool);
}

#[tokio::test]
async fn removing_the_schema_mid_conversation_sends_none_from_the_next_request() {
    let model = ScriptedProvider::new()
        .then_text(r#"{"name": "Bob", "age": 30}"#)
        .then_text("Ruby is a programming language.");
    let mut chat = Chat::new(model.clone());
    chat.with_output_schema(OutputSchema::new("response", person_schema()).unwrap());
    let first = chat.ask("Generate Bob").await.unwrap();
    assert_eq!(first.parsed::<Person>().unwrap().name, "Bob");
    chat.without_output();
    assert!(chat.output_schema().is_none());
    let second = chat.ask("Now tell me about Ruby").await.unwrap();
    assert_eq!(
        second.text().as_deref(),
        Some("Ruby is a programming language.")
    );
    let requests = model.requests();
    assert_eq!(requests[0].output.as_ref().unwrap().name(), "response");
    assert!(requests[1].output.is_none());
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_a_typed_error_with_the_raw_text_and_the_history_stays_valid()
 {
    let model = ScriptedProvider::new()
        .then_text("Sure! John is 30.")
        .then_text(r#"{"name": "John", "age": "thirty"}"#)
        .then_text(r#"{"name": "John", "age": 30}"#);
    let mut chat = Chat::new(model.clone());
    chat.with_output::<Person>().unwrap();

    match chat.ask("Generate John").await.unwrap().parsed::<Person>() {
        Err(Error::OutputInvalid { raw, reason }) => {
            assert_eq!(raw, "Sure! John is 30.");
            assert!(reason.contains("expected value"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    match chat.ask("Again").await.unwrap().parsed::<Person>() {
        Err(Error::OutputInvalid { reason, .. }) => {
            assert!(reason.contains("invalid type"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing was lost: both answers are in the transcript, and the chat goes on.
    assert_eq!(chat.messages().len(), 4);
    let person: Person = chat.ask("Once more").await.unwrap().parsed().unwrap();
    assert_eq!(person.age, 30);
}

#[tokio::test]
async fn with_retries_the_chat_says_what_was_wrong_and_asks_again() {
    let model = ScriptedProvider::new()
        .then_text(r#"{"name": "John"}"#)
        .then_text(r#"{"name": "John", "age": 30}"#);
    let mut chat = Chat::new(model.clone());
    chat.with_output_schema(OutputSchema::of::<Person>().unwrap().with_retries(1));
    let person: Person = chat.ask("Generate John").await.unwrap().parsed().unwrap();
    assert_eq!(person.age, 30);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let retry = requests[1].messages.last().unwrap();
    assert_eq!(retry.role, Role::User);
    assert!(
        retry.text().contains("missing field `age`"),
        "{}",
        retry.text()
    );
    assert!(retry.text().contains("`Person`"), "{}", retry.text());
}

/// An answer whose mistyped field holds megabytes is asked again in a few hundred bytes: the
/// decoder's error quotes the value, and the question quotes the error cut.
#[tokio::test]
async fn a_retry_of_an_answer_of_megabytes_asks_in_a_few_hundred_bytes() {
    let huge = "a".repeat(5 << 20);
    let model = ScriptedProvider::new()
        .then_text(format!(r#"{{"name": "John", "age": "{huge}"}}"#))
        .then_text(r#"{"name": "John", "age": 30}"#);
    let mut chat = Chat::new(model.clone());
    chat.with_output_schema(OutputSchema::of::<Person>().unwrap().with_retries(1));
    let person: Person = chat.ask("Generate John").await.unwrap().parsed().unwrap();
    assert_eq!(person.age, 30);
    let retry = model.requests()[1].messages.last().unwrap().text();
    assert!(retry.contains("invalid type"), "{retry}");
    assert!(retry.len() < 1_000, "{} bytes", retry.len());
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_answer_is_returned_as_it_came() {
    let model = ScriptedProvider::new()
        .then_text("no")
        .then_text("still no")
        .then_text("unused");
    let mut chat = Chat::new(model.clone());
    chat.with_output_schema(OutputSchema::of::<Person>().unwrap().with_retries(1));
    let outcome = chat.ask("Generate John").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("still no"));
    assert!(matches!(
        outcome.parsed::<Person>(),
        Err(Error::OutputInvalid { .. })
    ));
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn a_literal_schema_retries_an_answer_that_is_not_one_json_object() {
    let model = ScriptedProvider::new()
        .then_text("[1, 2]")
        .then_text(r#"{"name": "Ann", "age": 3}"#);
    let mut chat = Chat::new(model.clone());
    chat.with_output_schema(
        OutputSchema::new("person", person_schema())
            .unwrap()
            .with_retries(2),
    );
    let person: Person = chat.ask("Generate Ann").await.unwrap().parsed().unwrap();
    assert_eq!(person.name, "Ann");
    assert_eq!(model.request_count(), 2);
}

#[tokio::test]
async fn a_refusal_is_its_own_error() {
    let mut refusal = Message::assistant("");
    refusal.refusal = Some("I can't help with that.".into());
    let mut chat = Chat::new(ScriptedProvider::new().then(refusal));
    chat.with_output::<Person>().unwrap();
    match chat
        .ask("Generate someone")
        .await
        .unwrap()
        .parsed::<Person>()
    {
        Err(Error::OutputRefused(text)) => assert_eq!(text, "I can't help with that."),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_paused_turn_has_no_answer_to_decode() {
    let model = ScriptedProvider::new().then_call("book_meeting", json!({"with": "Ann"}));
    let mut chat = Chat::new(model);
    chat.with_tools(BookMeeting)
        .unwrap()
        .with_output::<Person>()
        .unwrap();
    let outcome = chat.ask("Book Ann").await.unwrap();
    assert!(matches!(outcome, Outcome::Paused(_)));
    match outcome.parsed::<Person>() {
        Err(Error::NoAnswer(why)) => assert!(why.contains("paused on 1"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_object_schemas_are_accepted() {
    let mut chat = Chat::new(ScriptedProvider::new());
    match chat.with_output::<String>() {
        Err(Error::InvalidConfig(ConfigError::InvalidOutputSchema { name, reason })) => {
            assert_eq!(name, "string");
            assert!(reason.contains("object root"), "{reason}");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(chat.output_schema().is_none());
}

#[test]
fn the_schema_is_part_of_the_saved_state() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_output_schema(
        OutputSchema::new("person", person_schema())
            .unwrap()
            .with_strict(false)
            .with_retries(2),
    );
    let saved = serde_json::to_string(chat.state()).unwrap();
    let state: ChatState = serde_json::from_str(&saved).unwrap();
    let restored = Chat::from_state(ScriptedProvider::new(), state).unwrap();
    let schema = restored.output_schema().unwrap();
    assert_eq!(schema.name(), "person");
    assert!(!schema.is_strict());
    assert_eq!(schema.retries(), 2);
    assert_eq!(schema.schema(), &person_schema());
}

//! Inferred schemas (insta snapshots in `tests/snapshots/`) and decoding real argument JSON
//! into the same tools.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns
#![allow(dead_code)] // argument types are only read through `Debug`

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use llm_tools_core::{RawArgs, Tool, ToolContext, ToolOutcome, tool};
use schemars::JsonSchema;
use serde::Deserialize;

fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// Calls the tool; its output is the `Debug` of what it received.
fn call(tool: &dyn Tool, args: &str) -> Result<String, String> {
    match run(tool.call(RawArgs::new(args), ToolContext::detached("c"))) {
        ToolOutcome::Output(o) => Ok(o.into_text()),
        ToolOutcome::Error(e) => Err(e.to_string()),
        other => panic!("unexpected {other:?}"),
    }
}

/// Every primitive
#[tool]
async fn primitives(
    text: String,
    flag: bool,
    small: i8,
    count: u32,
    big: i64,
    ratio: f64,
    letter: char,
) -> String {
    format!("{text} {flag} {small} {count} {big} {ratio} {letter}")
}

#[test]
fn primitives_schema_and_decoding() {
    insta::assert_json_snapshot!(Primitives.spec().parameters());
    assert_eq!(
        call(
            &Primitives,
            r#"{"text":"t","flag":true,"small":-3,"count":3.0,"big":-9007199254740992,"ratio":0.5,"letter":"x"}"#
        ),
        Ok("t true -3 3 -9007199254740992 0.5 x".into())
    );
    let e = call(
        &Primitives,
        r#"{"text":"t","flag":true,"small":300,"count":1,"big":1,"ratio":1,"letter":"x"}"#,
    )
    .unwrap_err();
    assert!(e.contains("argument `small`"), "{e}");
    let e = call(
        &Primitives,
        r#"{"text":"t","flag":"yes","small":1,"count":1,"big":1,"ratio":1,"letter":"x"}"#,
    )
    .unwrap_err();
    assert!(
        e.contains("argument `flag`: invalid type: string \"yes\", expected a boolean"),
        "{e}"
    );
    let e = call(
        &Primitives,
        r#"{"text":"t","flag":true,"small":1,"count":-1,"big":1,"ratio":1,"letter":"x"}"#,
    )
    .unwrap_err();
    assert!(e.contains("argument `count`"), "{e}");
}

/// Optional values
#[tool]
async fn optional(name: Option<String>, tags: Option<Vec<String>>, limit: Option<u8>) -> String {
    format!("{name:?} {tags:?} {limit:?}")
}

#[test]
fn options_are_not_required_and_not_nullable() {
    insta::assert_json_snapshot!(Optional.spec().parameters());
    assert_eq!(call(&Optional, "{}"), Ok("None None None".into()));
    assert_eq!(
        call(&Optional, r#"{"name":null,"tags":["a"],"limit":2.0}"#),
        Ok(r#"None Some(["a"]) Some(2)"#.into())
    );
}

/// Lists
#[tool]
async fn lists(
    tags: Vec<String>,
    matrix: Vec<Vec<f64>>,
    scores: Vec<Option<u8>>,
    pair: (String, u8),
) -> String {
    format!("{tags:?} {matrix:?} {scores:?} {pair:?}")
}

#[test]
fn vectors_tuples_and_nullable_items() {
    insta::assert_json_snapshot!(Lists.spec().parameters());
    assert_eq!(
        call(
            &Lists,
            r#"{"tags":[],"matrix":[[1,2.5]],"scores":[1.0,null],"pair":["a",1]}"#
        ),
        Ok(r#"[] [[1.0, 2.5]] [Some(1), None] ("a", 1)"#.into())
    );
    let e = call(
        &Lists,
        r#"{"tags":["a",2],"matrix":[],"scores":[],"pair":["a",1]}"#,
    )
    .unwrap_err();
    assert!(e.contains("argument `tags[1]`"), "{e}");
}

/// Maps
#[tool]
async fn maps(counts: HashMap<String, u32>, groups: BTreeMap<String, Vec<String>>) -> String {
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort();
    format!("{counts:?} {groups:?}")
}

#[test]
fn maps_are_objects_with_typed_values() {
    insta::assert_json_snapshot!(Maps.spec().parameters());
    assert_eq!(
        call(&Maps, r#"{"counts":{"a":1,"b":2.0},"groups":{"x":["y"]}}"#),
        Ok(r#"[("a", 1), ("b", 2)] {"x": ["y"]}"#.into())
    );
    let e = call(&Maps, r#"{"counts":{"a":"one"},"groups":{}}"#).unwrap_err();
    assert!(e.contains("argument `counts.a`"), "{e}");
}

/// A unit system
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Units {
    /// Celsius and kilometres
    Metric,
    /// Fahrenheit and miles
    Imperial,
    #[serde(rename = "SI")]
    Si,
}

/// A shape
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Shape {
    Circle { radius: f64 },
    Square(f64),
    Point,
}

/// An event, tagged by its kind
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Event {
    Click { x: i32, y: i32 },
    Key { code: String },
}

/// A number or a word
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Loose {
    Number(f64),
    Word(String),
}

/// Enums of every kind
#[tool]
async fn enums(units: Units, shape: Shape, event: Event, loose: Loose) -> String {
    format!("{units:?} {shape:?} {event:?} {loose:?}")
}

#[test]
fn unit_and_data_enums() {
    insta::assert_json_snapshot!(Enums.spec().parameters());
    assert_eq!(
        call(
            &Enums,
            r#"{"units":"SI","shape":{"circle":{"radius":2}},"event":{"kind":"click","x":1.0,"y":2},"loose":"w"}"#
        ),
        Ok(r#"Si Circle { radius: 2.0 } Click { x: 1, y: 2 } Word("w")"#.into())
    );
    assert_eq!(
        call(
            &Enums,
            r#"{"units":"metric","shape":"point","event":{"kind":"key","code":"a"},"loose":3}"#
        ),
        Ok(r#"Metric Point Key { code: "a" } Number(3.0)"#.into())
    );
    let e = call(
        &Enums,
        r#"{"units":"kelvin","shape":"point","event":{"kind":"key","code":"a"},"loose":3}"#,
    )
    .unwrap_err();
    assert!(
        e.contains(
            "argument `units`: unknown variant `kelvin`, expected one of `metric`, `imperial`, `SI`"
        ),
        "{e}"
    );
}

/// A postal address
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Address {
    /// Street and number
    street: String,
    /// Postal code
    #[serde(rename = "zip_code")]
    zip: String,
    #[serde(default)]
    country: Option<String>,
}

/// A person
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Person {
    first_name: String,
    #[serde(alias = "surname")]
    last_name: String,
    home: Address,
    previous_homes: Vec<Address>,
    #[serde(default = "default_age")]
    age: u8,
    #[serde(skip_deserializing)]
    internal_id: u64,
}

fn default_age() -> u8 {
    30
}

/// Registers a person
#[tool]
async fn register(person: Person, referrer: Option<Person>) -> String {
    format!("{person:?} {}", referrer.is_some())
}

#[test]
fn nested_and_renamed_structs_go_through_defs() {
    insta::assert_json_snapshot!(Register.spec().parameters());
    let out = call(
        &Register,
        r#"{"person":{"firstName":"Ada","surname":"Lovelace","home":{"street":"1 St","zip_code":"N1"},"previousHomes":[]}}"#,
    )
    .unwrap();
    assert_eq!(
        out,
        r#"Person { first_name: "Ada", last_name: "Lovelace", home: Address { street: "1 St", zip: "N1", country: None }, previous_homes: [], age: 30, internal_id: 0 } false"#
    );
    let e = call(
        &Register,
        r#"{"person":{"firstName":"Ada","lastName":"L","home":{"street":"1 St","zip":"N1"},"previousHomes":[]}}"#,
    )
    .unwrap_err();
    assert!(
        e.contains("argument `person.home.zip`: unknown field `zip`, expected one of `street`, `zip_code`, `country`"),
        "{e}"
    );
    let e = call(
        &Register,
        r#"{"person":{"firstName":"Ada","lastName":"L","home":{"street":"1 St","zip_code":5},"previousHomes":[]}}"#,
    )
    .unwrap_err();
    assert!(e.contains("argument `person.home.zip_code`"), "{e}");
}

/// With defaults
#[tool]
async fn defaults(
    query: String,
    #[arg(default)] page: u32,
    #[arg(default = 20)] per_page: u32,
    #[arg(default = Units::Metric, description = "Unit system")] units: Units,
    #[arg(default)] tags: Vec<String>,
) -> String {
    format!("{query} {page} {per_page} {units:?} {tags:?}")
}

#[test]
fn defaults_are_optional_and_shown() {
    insta::assert_json_snapshot!(Defaults.spec().parameters());
    assert_eq!(
        call(&Defaults, r#"{"query":"q"}"#),
        Ok("q 0 20 Metric []".into())
    );
    assert_eq!(
        call(
            &Defaults,
            r#"{"query":"q","page":null,"per_page":null,"units":null,"tags":null}"#
        ),
        Ok("q 0 20 Metric []".into())
    );
    assert_eq!(
        call(
            &Defaults,
            r#"{"query":"q","page":2,"per_page":5.0,"units":"imperial","tags":["a"]}"#
        ),
        Ok(r#"q 2 5 Imperial ["a"]"#.into())
    );
}

/// Search arguments
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    /// What to look for
    query: String,
    /// At most this many hits
    #[serde(default)]
    limit: Option<u32>,
    #[serde(flatten)]
    filter: Filter,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Filter {
    /// Only this language
    language: Option<String>,
}

/// Searches
#[tool(args)]
async fn search(args: SearchArgs) -> String {
    format!("{args:?}")
}

#[test]
fn a_whole_arguments_struct() {
    insta::assert_json_snapshot!(Search.spec().parameters());
    assert_eq!(
        call(&Search, r#"{"query":"q","limit":3.0,"language":"rust"}"#),
        Ok(r#"SearchArgs { query: "q", limit: Some(3), filter: Filter { language: Some("rust") } }"#.into())
    );
    let e = call(&Search, r#"{"limit":1}"#).unwrap_err();
    assert!(e.contains("missing field `query`"), "{e}");
    assert!(
        e.contains("accepted arguments: `query`, `limit`, `language`"),
        "{e}"
    );
}

/// Echoes
#[tool(schema = serde_json::json!({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Echo",
    "type": "object",
    "properties": {"text": {"type": "string"}, "times": {"type": "integer", "format": "int32"}},
    "required": ["text"]
}))]
async fn echo(args: serde_json::Value) -> String {
    args.to_string()
}

#[test]
fn a_literal_schema_is_normalized_and_arguments_arrive_as_json() {
    insta::assert_json_snapshot!(Echo.spec().parameters());
    assert_eq!(
        call(&Echo, r#"{"text":"hi","times":2}"#),
        Ok(r#"{"text":"hi","times":2}"#.into())
    );
    // A `Value` receives the arguments as sent (no schema check); only invalid JSON fails.
    assert_eq!(call(&Echo, "[1]"), Ok("[1]".into()));
    let e = call(&Echo, r#"{"text": "#).unwrap_err();
    assert!(e.contains("not valid JSON"), "{e}");
}

// The fields of `mixed`, for schemars to derive the schema of (no doc comment: the generated
// argument struct has no description either).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MixedArgs {
    /// The city
    city: String,
    days: Option<u8>,
    /// Unit system
    units: Units,
    other_units: Option<Units>,
    person: Person,
    tags: Vec<String>,
    /// Hits per page
    #[serde(default = "twenty")]
    per_page: u32,
    raw: serde_json::Value,
    r#type: Option<String>,
}

fn twenty() -> u32 {
    20
}

/// Mixed parameters
///
/// # Arguments
/// * `city` - The city
/// * `units` - Unit system
/// * `per_page` - Hits per page
#[tool]
#[allow(clippy::too_many_arguments)] // a tool's parameters are the model's arguments
async fn mixed(
    city: String,
    days: Option<u8>,
    units: Units,
    other_units: Option<Units>,
    person: Person,
    tags: Vec<String>,
    #[arg(default = 20)] per_page: u32,
    raw: serde_json::Value,
    r#type: Option<String>,
) -> String {
    format!(
        "{city} {days:?} {units:?} {other_units:?} {person:?} {tags:?} {per_page} {raw} {type:?}"
    )
}

#[test]
fn a_tools_schema_is_the_one_schemars_derives_for_its_parameters() {
    // `#[tool]` builds the schema from a table of its parameters, not a derive per tool: the
    // JSON is the same, byte for byte (key order included), as the derive's on a struct of the
    // same fields.
    let derived = llm_tools_core::schema_for::<MixedArgs>();
    let generated = Mixed.spec().parameters();
    assert_eq!(generated.to_string(), derived.to_string());
    let required = serde_json::json!(["city", "units", "person", "tags", "raw"]);
    assert_eq!(generated["required"], required);
}

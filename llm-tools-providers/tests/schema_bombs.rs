//! Schemas that multiply when their `$ref`s are followed, through every dialect's conversion:
//! a schema from an MCP server is input like any other. Each dialect, in the form a provider
//! sends (a strict form that cannot be sent falls back to the plain one), refuses a schema past
//! its [`SchemaBudget`] with [`SchemaTooLarge`] naming the limit and its value, whatever the
//! fan-out; a schema just within the budget converts, to an output within it (its objects and
//! bytes counted); one object or byte less refuses it. The strict converters stop where they
//! pass the budget instead of expanding the whole schema first (a fan-out of 8 over 40
//! definitions is 8^40 objects: expanded first, the test would never end).
#![cfg(all(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock",
    feature = "ollama"
))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use llm_tools_providers::schema::{
    ConversionError, SchemaBudget, SchemaLimit, SchemaTooLarge, anthropic, bedrock, gemini, ollama,
    openai,
};
use serde_json::{Map, Value, json};

/// The fan-outs every bomb is built with.
const FAN_OUTS: [usize; 4] = [2, 3, 5, 8];

/// `levels` definitions, each with `fan_out` properties that name the one before (with a
/// description beside the `$ref`, so the strict dialects inline it): fan_out^levels objects
/// once the references are followed.
fn chain(fan_out: usize, levels: usize) -> Value {
    let mut defs = Map::new();
    defs.insert("D0".into(), json!({"type": "string"}));
    for level in 1..=levels {
        let before = format!("#/$defs/D{}", level - 1);
        let properties: Map<String, Value> = (0..fan_out)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"$ref": before, "description": "again"}),
                )
            })
            .collect();
        let required: Vec<String> = properties.keys().cloned().collect();
        defs.insert(
            format!("D{level}"),
            json!({"type": "object", "properties": properties, "required": required,
                   "additionalProperties": false}),
        );
    }
    json!({"type": "object", "properties": {"x": {"$ref": format!("#/$defs/D{levels}"), "description": "root"}},
           "required": ["x"], "additionalProperties": false, "$defs": defs})
}

/// One definition whose `fan_out` properties each refer back to it (with a description beside
/// the `$ref`): a few hundred bytes, fan_out^8 objects once a strict dialect inlines
/// it and fan_out^16 in Ollama's.
fn refers_back(fan_out: usize) -> Value {
    let properties: Map<String, Value> = (0..fan_out)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"$ref": "#/$defs/D", "description": "d"}),
            )
        })
        .collect();
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D", "description": "x"}},
           "$defs": {"D": {"type": "object", "properties": properties}}})
}

/// A dialect as a provider sends it: the converted schema, or the limit it passes.
type Convert = fn(&Value, &SchemaBudget) -> Result<Value, SchemaTooLarge>;

/// The limit a conversion passed; anything else it refused for fails the test.
fn too_large(e: ConversionError) -> SchemaTooLarge {
    match e {
        ConversionError::TooLarge(e) => e,
        other => panic!("refused for another reason: {other}"),
    }
}

/// Every dialect, as its provider sends a tool's schema.
const DIALECTS: &[(&str, Convert)] = &[
    ("openai strict (or plain)", |s, b| {
        match openai::strict(s, b) {
            Ok(strict) => Ok(strict.schema),
            Err(_) => openai::non_strict(s, b),
        }
    }),
    ("openai plain", openai::non_strict),
    (
        "anthropic strict (or plain)",
        |s, b| match anthropic::strict(s, b) {
            Ok(strict) => Ok(strict.schema),
            Err(_) => anthropic::input_schema(s, b),
        },
    ),
    ("anthropic plain", anthropic::input_schema),
    ("gemini parametersJsonSchema", |s, b| {
        gemini::json_schema(s, b)
            .map(|c| c.schema)
            .map_err(too_large)
    }),
    ("gemini parameters", |s, b| {
        gemini::parameters(s, b)
            .map(|c| c.schema)
            .map_err(too_large)
    }),
    ("ollama", |s, b| ollama::parameters(s, b).map(|c| c.schema)),
    ("bedrock", bedrock::input_schema),
    // Cohere sends the schema as it is, once it is within the budget.
    ("cohere", |s, b| b.check(s).map(|()| s.clone())),
];

/// A refusal names one of the budget's limits and its value (which one a conversion passes
/// first depends on the schema: a wide definition copies its bytes faster than it counts
/// objects, a long chain nests deep).
fn refused_by(refused: &SchemaTooLarge, budget: &SchemaBudget, what: &str) {
    assert_eq!(
        refused.max,
        budget.limit(refused.limit),
        "{what}: {refused}"
    );
    let named = format!("{} is {}", refused.limit.name(), refused.max);
    assert!(refused.to_string().contains(&named), "{what}: {refused}");
}

/// The schema objects in `v`, as the budget counts them before `$ref`s are followed: every
/// object but the maps of named schemas (`properties`, `$defs`, …) and the values of data
/// keywords (`enum`, `default`, …).
fn objects(v: &Value) -> usize {
    let children = |(key, child): (&String, &Value)| match (key.as_str(), child) {
        ("enum" | "const" | "default" | "example" | "examples", _) => 0,
        (
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas",
            Value::Object(named),
        ) => named.values().map(objects).sum(),
        (_, child) => objects(child),
    };
    match v {
        Value::Object(o) => 1 + o.iter().map(children).sum::<usize>(),
        Value::Array(items) => items.iter().map(objects).sum(),
        _ => 0,
    }
}

/// The output is within the budget: its objects and its bytes.
fn within(name: &str, out: &Value, budget: &SchemaBudget) {
    let bytes = serde_json::to_vec(out).unwrap().len();
    assert!(
        bytes <= budget.max_bytes(),
        "{name}: {bytes} bytes past {}",
        budget.max_bytes()
    );
    let nodes = objects(out);
    assert!(
        nodes <= budget.max_nodes(),
        "{name}: {nodes} objects past {}",
        budget.max_nodes()
    );
}

#[test]
fn every_dialect_refuses_definitions_that_multiply_at_fan_outs_2_3_5_and_8() {
    let budget = SchemaBudget::default();
    for fan_out in FAN_OUTS {
        // fan_out^40 objects once followed; the core's normalization leaves `$ref`s alone.
        let bomb = llm_tools_core::normalize_schema(chain(fan_out, 40));
        for (name, convert) in DIALECTS {
            let refused =
                convert(&bomb, &budget).expect_err(&format!("{name} refuses fan-out {fan_out}"));
            refused_by(&refused, &budget, &format!("{name}, fan-out {fan_out}"));
        }
        // The portability check's other passes read the schema without expanding it.
        let _ = openai::rejected(&bomb);
        let _ = anthropic::rejected(&bomb);
        let _ = bedrock::rejected("t", &bomb);
        let _ = bedrock::weakened(&bomb);
    }
}

#[test]
fn the_strict_converters_stop_where_they_pass_the_budget() {
    // Inlined eight levels deep: fan_out^8 copies. Past the budget, the conversion stops there
    // (a fan-out of 8 is 16 million copies: built first, they would not fit in memory).
    for fan_out in FAN_OUTS {
        let budget = match fan_out {
            2 | 3 => SchemaBudget::default().with_max_nodes(200),
            _ => SchemaBudget::default(),
        };
        let bomb = chain(fan_out, 40);
        for (name, refused) in [
            ("openai", openai::strict(&bomb, &budget).unwrap_err()),
            ("anthropic", anthropic::strict(&bomb, &budget).unwrap_err()),
        ] {
            let refused = refused
                .too_large()
                .cloned()
                .unwrap_or_else(|| panic!("{name}, fan-out {fan_out}: refused for another reason"));
            refused_by(&refused, &budget, &format!("{name}, fan-out {fan_out}"));
        }
    }
}

#[test]
fn a_definition_that_refers_back_to_itself_is_refused_where_it_is_inlined() {
    let budget = SchemaBudget::default();
    for fan_out in FAN_OUTS {
        let bomb = refers_back(fan_out);
        assert!(serde_json::to_vec(&bomb).unwrap().len() < 500);
        // Ollama inlines it sixteen levels deep: fan_out^16.
        let refused = ollama::parameters(&bomb, &budget).unwrap_err();
        refused_by(&refused, &budget, &format!("ollama, fan-out {fan_out}"));
        // OpenAI's strict mode inlines a `$ref` with siblings eight levels deep: fan_out^8.
        let small = SchemaBudget::default().with_max_nodes(200);
        let strict = openai::strict(&bomb, &small).unwrap_err();
        let refused = strict.too_large().unwrap_or_else(|| panic!("{strict}"));
        refused_by(
            refused,
            &small,
            &format!("openai strict, fan-out {fan_out}"),
        );
        if fan_out >= 5 {
            let strict = openai::strict(&bomb, &budget).unwrap_err();
            let refused = strict.too_large().unwrap_or_else(|| panic!("{strict}"));
            refused_by(
                refused,
                &budget,
                &format!("openai strict, fan-out {fan_out}"),
            );
        }
        // Where a `$ref` stays a `$ref`, the reference back counts once: a recursive schema
        // goes out as it is, within the budget.
        for (name, convert) in DIALECTS {
            match convert(&bomb, &budget) {
                Ok(out) => within(name, &out, &budget),
                Err(refused) => assert!(
                    matches!(*name, "ollama"),
                    "{name}, fan-out {fan_out}: {refused}"
                ),
            }
        }
    }
}

/// Sets one limit of a budget (`SchemaBudget::with_max_nodes`, …).
type SetLimit = fn(SchemaBudget, usize) -> SchemaBudget;

/// The smallest value of a limit under which `convert` converts `schema` (the conversion is
/// monotonic in each limit).
fn smallest(convert: Convert, schema: &Value, with: SetLimit) -> usize {
    let (mut low, mut high) = (0, SchemaBudget::DEFAULT_MAX_BYTES);
    if let Err(e) = convert(schema, &with(SchemaBudget::default(), high)) {
        panic!("converts within a roomy budget: {e}");
    }
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        if convert(schema, &with(SchemaBudget::default(), mid)).is_ok() {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

#[test]
fn a_schema_just_within_the_budget_converts_and_one_less_refuses_it() {
    // 3^4 objects once followed: within the default budget, so each limit can be found.
    let schema = chain(3, 4);
    let limits: [(SchemaLimit, SetLimit); 3] = [
        (SchemaLimit::Nodes, SchemaBudget::with_max_nodes),
        (SchemaLimit::Bytes, SchemaBudget::with_max_bytes),
        (SchemaLimit::Depth, SchemaBudget::with_max_depth),
    ];
    for (name, convert) in DIALECTS {
        for (limit, with) in limits {
            let just = smallest(*convert, &schema, with);
            let budget = with(SchemaBudget::default(), just);
            let out = convert(&schema, &budget)
                .unwrap_or_else(|e| panic!("{name} converts within {limit} {just}: {e}"));
            within(name, &out, &budget);
            let less = with(SchemaBudget::default(), just - 1);
            let refused = convert(&schema, &less).unwrap_err();
            assert_eq!(
                (refused.limit, refused.max),
                (limit, just - 1),
                "{name}: {refused}"
            );
        }
        // The bytes limit holds the output exactly.
        let just = smallest(*convert, &schema, SchemaBudget::with_max_bytes);
        let out = convert(&schema, &SchemaBudget::default().with_max_bytes(just)).unwrap();
        assert!(serde_json::to_vec(&out).unwrap().len() <= just, "{name}");
    }
}

#[test]
fn remarks_about_a_conversion_are_kept_within_the_budget() {
    // Two thousand properties Gemini's `parameters` cannot take, each with a long name: a
    // remark each, paths and all, would be more than twice the schema.
    let properties: Map<String, Value> = (0..2_000)
        .map(|i| (format!("{i}-{}", "n".repeat(60)), json!({"type": "string"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let budget = SchemaBudget::default().with_max_bytes(200_000);
    let size = serde_json::to_vec(&schema).unwrap().len();
    assert!(size < 200_000, "{size}");
    let rejected = gemini::parameters(&schema, &budget).unwrap_err();
    let notes = rejected.notes();
    let kept: usize = notes.iter().map(|n| n.path.len() + n.message.len()).sum();
    assert!(kept <= 200_000 + 200, "{kept}");
    let last = notes.last().unwrap();
    assert!(last.message.contains("more remarks are left out"), "{last}");
    assert!(notes.len() < 2_000);
}

#[test]
fn a_schema_nested_to_the_depth_limit_converts_on_a_small_stack() {
    // Deep schemas recurse once per level in every converter: at the default depth they must
    // fit on a Tokio worker's stack (2 MiB).
    let mut schema = json!({"type": "string"});
    for _ in 1..SchemaBudget::DEFAULT_MAX_DEPTH {
        schema = json!({"type": "object", "properties": {"a": schema}, "required": ["a"]});
    }
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let budget = SchemaBudget::default();
            for (name, convert) in DIALECTS {
                let out = convert(&schema, &budget).unwrap_or_else(|e| panic!("{name}: {e}"));
                within(name, &out, &budget);
            }
            let deeper = json!({"type": "object", "properties": {"a": schema}});
            for (name, convert) in DIALECTS {
                let refused = convert(&deeper, &budget).unwrap_err();
                assert_eq!(refused.limit, SchemaLimit::Depth, "{name}");
            }
        })
        .unwrap();
    handle.join().unwrap();
}

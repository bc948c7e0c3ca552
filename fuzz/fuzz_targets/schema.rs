//! Every dialect's schema conversion fed arbitrary tool schemas: JSON text as it comes (the
//! corpus is seeded with the schemas of the recorded traffic), or a schema built from the input
//! by a generator that favours what multiplies — definitions that refer to each other and to
//! themselves, several times each, `$ref`s with sibling keywords (which the strict dialects
//! inline), `anyOf`/`oneOf`/`allOf`, nested `items` and `properties`. Each is converted under
//! the default budget or a small one drawn from the input. No panic; every converted schema is
//! within the budget (its bytes, and its objects and depth with its `$ref`s followed); every
//! refusal names a limit of the budget and its value.
//!
//! Input: a mode byte (bit 0: JSON text, else generated; bit 1: a small budget from the next
//! three bytes), then the text or the generator's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llm_tools_core::ToolSpec;
use llm_tools_providers::schema::{
    ConversionError, Dialect, SchemaBudget, SchemaTooLarge, anthropic, bedrock,
    check_spec_portability, gemini, ollama, openai,
};
use serde_json::{Map, Value, json};

/// Reads the input a byte at a time (zeros once it is used up).
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.next()) % n.max(1)
    }
}

/// Builds a schema from the input's bytes: `defs` definitions that may name any definition.
struct Generator<'a> {
    bytes: Bytes<'a>,
    defs: usize,
    defs_key: &'static str,
}

const NAMES: &[&str] = &[
    "a",
    "b",
    "c",
    "items",
    "$ref",
    "first-name",
    "~/odd",
    "ünï",
    "x_1",
    "properties",
    "",
];
const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "null", "object", "array",
];

impl Generator<'_> {
    fn reference(&mut self) -> Value {
        let target = self.bytes.below(self.defs + 1);
        if target == self.defs {
            // A reference nothing defines, or a remote one.
            return Value::from(
                ["#/$defs/Missing", "https://example.com/s.json", "#"][self.bytes.below(3)],
            );
        }
        Value::from(format!("#/{}/D{target}", self.defs_key))
    }

    fn schema(&mut self, depth: usize) -> Value {
        let kinds = if depth >= 5 { 4 } else { 14 };
        match self.bytes.below(kinds) {
            0 => json!({"type": TYPES[self.bytes.below(TYPES.len())]}),
            1 if self.defs > 0 => json!({"$ref": self.reference()}),
            2 if self.defs > 0 => {
                // A `$ref` with siblings: the strict dialects inline it.
                let mut o = Map::new();
                o.insert("$ref".into(), self.reference());
                o.insert("description".into(), Value::from("again"));
                if self.bytes.next() % 2 == 0 {
                    o.insert("type".into(), Value::from("object"));
                }
                Value::Object(o)
            }
            3 => self.constrained(),
            4 | 5 => self.object(depth),
            6 => {
                let mut o = json!({"type": "array"});
                if self.bytes.next() % 4 != 0 {
                    o["items"] = self.schema(depth + 1);
                }
                o
            }
            7..=9 => {
                let key = ["anyOf", "oneOf", "allOf"][self.bytes.below(3)];
                let n = self.bytes.below(4);
                let mut variants: Vec<Value> = (0..n).map(|_| self.schema(depth + 1)).collect();
                if self.bytes.next() % 3 == 0 {
                    variants.push(json!({"type": "null"}));
                }
                json!({ key: variants })
            }
            10 => json!({"type": [TYPES[self.bytes.below(TYPES.len())], "null"]}),
            11 => Value::Bool(self.bytes.next() % 2 == 0),
            12 => {
                let key = [
                    "not",
                    "if",
                    "additionalProperties",
                    "contains",
                    "propertyNames",
                ][self.bytes.below(5)];
                json!({"type": "object", key: self.schema(depth + 1)})
            }
            _ => json!({}),
        }
    }

    fn constrained(&mut self) -> Value {
        let mut o = Map::new();
        o.insert(
            "type".into(),
            Value::from(["string", "integer", "number"][self.bytes.below(3)]),
        );
        for _ in 0..self.bytes.below(4) {
            let (k, v) = match self.bytes.below(9) {
                0 => ("enum", json!(["x", "y", null, 3])),
                1 => ("const", json!("c")),
                2 => ("default", json!({"$ref": "#/$defs/D0"})),
                3 => (
                    "format",
                    json!(["date", "iban", "uri"][self.bytes.below(3)]),
                ),
                4 => ("minimum", json!(1)),
                5 => ("maxLength", json!(8)),
                6 => ("pattern", json!("^[a-z]+$")),
                7 => ("examples", json!(["e", 2])),
                _ => ("nullable", json!(true)),
            };
            o.insert(k.into(), v);
        }
        Value::Object(o)
    }

    fn object(&mut self, depth: usize) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for i in 0..self.bytes.below(6) {
            let name = match self.bytes.below(NAMES.len() + 1) {
                n if n < NAMES.len() => NAMES[n].to_owned(),
                _ => format!("p{i}"),
            };
            if self.bytes.next() % 2 == 0 {
                required.push(Value::from(name.as_str()));
            }
            properties.insert(name, self.schema(depth + 1));
        }
        let mut o = Map::new();
        o.insert("type".into(), Value::from("object"));
        o.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            o.insert("required".into(), Value::Array(required));
        }
        match self.bytes.below(4) {
            0 => {
                o.insert("additionalProperties".into(), Value::Bool(false));
            }
            1 => {
                o.insert("additionalProperties".into(), json!({"type": "string"}));
            }
            _ => {}
        }
        Value::Object(o)
    }

    /// The whole schema: an object root with properties, and the definitions.
    fn root(mut self) -> Value {
        let mut root = match self.object(0) {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        let mut defs = Map::new();
        for i in 0..self.defs {
            defs.insert(format!("D{i}"), self.schema(1));
        }
        if !defs.is_empty() {
            root.insert(self.defs_key.into(), Value::Object(defs));
        }
        if self.bytes.next() % 16 == 0 {
            root.insert("type".into(), Value::from("array"));
        }
        Value::Object(root)
    }
}

/// A converted schema is within the budget.
fn within(what: &str, out: &Value, budget: &SchemaBudget) {
    let bytes = serde_json::to_vec(out)
        .map(|b| b.len())
        .unwrap_or(usize::MAX);
    assert!(
        bytes <= budget.max_bytes(),
        "{what}: {bytes} bytes past {budget:?}"
    );
    if let Err(e) = budget.check(out) {
        panic!("{what}: the converted schema is past the budget: {e}");
    }
}

/// A refusal names a limit of the budget and its value.
fn refused(what: &str, e: &SchemaTooLarge, budget: &SchemaBudget) {
    assert_eq!(e.max, budget.limit(e.limit), "{what}: {e}");
}

fn converted(what: &str, result: Result<Value, SchemaTooLarge>, budget: &SchemaBudget) {
    match result {
        Ok(out) => within(what, &out, budget),
        Err(e) => refused(what, &e, budget),
    }
}

fn converted_or_not(what: &str, result: Result<Value, ConversionError>, budget: &SchemaBudget) {
    match result {
        Ok(out) => within(what, &out, budget),
        Err(ConversionError::TooLarge(e)) => refused(what, &e, budget),
        Err(ConversionError::Unsupported(notes)) => assert!(!notes.is_empty(), "{what}"),
        Err(other) => panic!("{what}: {other}"),
    }
}

fuzz_target!(|input: &[u8]| {
    let mut bytes = Bytes { data: input, at: 0 };
    let mode = bytes.next();
    let budget = if mode & 2 != 0 {
        SchemaBudget::default()
            .with_max_nodes(1 + usize::from(bytes.next()) * 8)
            .with_max_bytes(1 + usize::from(bytes.next()) * 256)
            .with_max_depth(1 + usize::from(bytes.next() % 70))
    } else {
        SchemaBudget::default()
    };
    let schema = if mode & 1 != 0 {
        match serde_json::from_slice::<Value>(input.get(bytes.at..).unwrap_or_default()) {
            Ok(v) => v,
            Err(_) => return,
        }
    } else {
        let defs = bytes.below(7);
        let defs_key = if bytes.next() % 4 == 0 {
            "definitions"
        } else {
            "$defs"
        };
        let rest = input.get(bytes.at..).unwrap_or_default();
        Generator {
            bytes: Bytes { data: rest, at: 0 },
            defs,
            defs_key,
        }
        .root()
    };

    converted_or_not(
        "openai strict",
        openai::strict(&schema, &budget).map(|s| s.schema),
        &budget,
    );
    converted("openai", openai::non_strict(&schema, &budget), &budget);
    converted_or_not(
        "anthropic strict",
        anthropic::strict(&schema, &budget).map(|s| s.schema),
        &budget,
    );
    converted(
        "anthropic",
        anthropic::input_schema(&schema, &budget),
        &budget,
    );
    converted_or_not(
        "gemini json",
        gemini::json_schema(&schema, &budget).map(|s| s.schema),
        &budget,
    );
    converted_or_not(
        "gemini parameters",
        gemini::parameters(&schema, &budget).map(|s| s.schema),
        &budget,
    );
    converted(
        "ollama",
        ollama::parameters(&schema, &budget).map(|s| s.schema),
        &budget,
    );
    converted("bedrock", bedrock::input_schema(&schema, &budget), &budget);
    if let Err(e) = budget.check(&schema) {
        refused("check", &e, &budget);
    }
    // The passes that read the schema without converting it, under the default budget.
    if budget == SchemaBudget::default() {
        let spec = ToolSpec::new("fuzzed", "A fuzzed tool").with_parameters(schema);
        let report = check_spec_portability(&[&spec], Dialect::ALL);
        for finding in report.findings() {
            if let Some(e) = &finding.too_large {
                refused("portability", e, &budget);
            }
        }
    }
});

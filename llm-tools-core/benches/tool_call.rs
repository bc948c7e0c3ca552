//! What a `#[tool]` costs per call, the tool's own work aside:
//!
//! - `decode/5_params`: `Tool::call` on a 5-parameter tool with the model's JSON text, polled
//!   once to completion: decoding the arguments (one `serde_json` pass into the generated
//!   struct), calling the fn, converting its `String` result. The target is under 1 µs.
//! - `decode/5_params_floats_as_ints`: the same with integers sent as `3.0` (Gemini), which
//!   takes the repair path.
//! - `decode/5_params_bad`: a wrong argument type: the error path that names the argument.
//! - `spec/cached` and `spec/joined_name`: reading the spec built once per tool type.
//!
//! `cargo bench -p llm-tools-core --bench tool_call`
#![allow(missing_docs, clippy::unwrap_used, clippy::panic)]

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use llm_tools_core::{RawArgs, Tool, ToolContext, ToolOutcome, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Metric,
    Imperial,
}

/// Gets the weather forecast for a place
///
/// # Arguments
/// * `city` - The city
/// * `latitude` - Latitude in decimal degrees
/// * `days` - How many days ahead
/// * `hourly` - Hour by hour instead of daily
/// * `units` - The unit system
#[tool]
async fn forecast(
    city: String,
    latitude: f64,
    days: u32,
    hourly: bool,
    units: Option<Units>,
) -> String {
    let _ = (latitude, days, hourly, units);
    city
}

const ARGS: &str = r#"{"city":"Berlin","latitude":52.52,"days":3,"hourly":false,"units":"metric"}"#;
const FLOAT_ARGS: &str =
    r#"{"city":"Berlin","latitude":52.52,"days":3.0,"hourly":false,"units":"metric"}"#;
const BAD_ARGS: &str =
    r#"{"city":"Berlin","latitude":"north","days":3,"hourly":false,"units":"metric"}"#;

/// Polls a future that never waits (the tool does not await) to completion.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the tool awaited"),
    }
}

fn decode(c: &mut Criterion) {
    let ctx = ToolContext::detached("call-1");
    // Check once that each case does what its name says.
    assert!(
        matches!(ready(Forecast.call(RawArgs::new(ARGS), ctx.clone())), ToolOutcome::Output(o) if o.as_text() == "Berlin")
    );
    assert!(matches!(
        ready(Forecast.call(RawArgs::new(FLOAT_ARGS), ctx.clone())),
        ToolOutcome::Output(_)
    ));
    assert!(matches!(
        ready(Forecast.call(RawArgs::new(BAD_ARGS), ctx.clone())),
        ToolOutcome::Error(_)
    ));

    let mut group = c.benchmark_group("decode");
    for (name, args) in [
        ("5_params", ARGS),
        ("5_params_floats_as_ints", FLOAT_ARGS),
        ("5_params_bad", BAD_ARGS),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(ready(
                    Forecast.call(RawArgs::new(black_box(args)), ctx.clone()),
                ))
            });
        });
    }
    group.finish();
}

fn spec(c: &mut Criterion) {
    let tool: &dyn Tool = &Forecast;
    let _ = tool.spec();
    let mut group = c.benchmark_group("spec");
    group.bench_function("cached", |b| {
        b.iter(|| black_box(black_box(tool).spec().parameters().get("required")));
    });
    group.bench_function("joined_name", |b| {
        b.iter(|| black_box(black_box(tool).spec().joined_name().len()));
    });
    group.finish();
}

criterion_group!(benches, decode, spec);
criterion_main!(benches);

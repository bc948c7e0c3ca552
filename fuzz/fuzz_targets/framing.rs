//! Every stream framing (server-sent events, newline-delimited JSON, AWS event-stream) fed
//! arbitrary bytes, whole and cut into arbitrary chunks: no panic, and the chunked frames
//! equal the whole ones (a differential check of the buffering).
#![no_main]

mod common;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use llm_tools_providers::framing::{Frame, Framing, frames};

fn run(framing: Framing, parts: Vec<bytes::Bytes>) -> Vec<Result<Frame<'static>, String>> {
    let stream = futures::stream::iter(parts.into_iter().map(Ok));
    futures::executor::block_on(frames(framing, "fuzz", stream).collect::<Vec<_>>())
        .into_iter()
        .map(|f| f.map_err(|e| format!("{:?}", e.kind())))
        .collect()
}

fuzz_target!(|input: &[u8]| {
    let Some((&selector, rest)) = input.split_first() else {
        return;
    };
    let (sizes, data) = rest.split_at(rest.len().min(usize::from(selector >> 4)));
    let framing = match selector % 3 {
        0 => Framing::Sse,
        1 => Framing::Ndjson,
        _ => Framing::AwsEventStream,
    };
    let whole = run(framing, vec![bytes::Bytes::copy_from_slice(data)]);
    let chunked = run(framing, common::chunks(data, sizes));
    assert_eq!(
        whole, chunked,
        "{framing:?}: chunked frames differ from whole ones"
    );
});

#!/usr/bin/env bash
# Builds the API docs of every published crate with every feature set CI checks, with rustdoc's
# warnings (broken intra-doc links among them) as errors: a link that resolves with all
# features (as docs.rs builds) but not with one provider alone fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTDOCFLAGS="-D warnings"
sets=(
    "-p llm-tools-core --no-default-features"
    "-p llm-tools-core --all-features"
    "-p llm-tools-macros"
    "-p llm-tools-mcp --all-features"
    "-p llm-tools-providers --all-features"
)
for feature in openai anthropic gemini bedrock cohere ollama; do
    sets+=("-p llm-tools-providers --no-default-features --features $feature")
done
for set in "${sets[@]}"; do
    echo "cargo doc $set" >&2
    # shellcheck disable=SC2086 # each set is several arguments
    cargo doc --no-deps --quiet $set
done

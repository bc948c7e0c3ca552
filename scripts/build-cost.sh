#!/usr/bin/env bash
# What `#[tool]` costs at build time: generates the same 100 tools (3 to 5 parameters each) three
# ways and times a clean build of each crate with its dependencies already built.
#
#   macro    `#[tool] async fn` with a `# Arguments` doc list
#   hand     what a user writes without the macro: a parameter struct deriving
#            `Deserialize + JsonSchema` (doc comments as descriptions), the fn, a unit struct and
#            an `impl Tool` (spec built once, arguments decoded into the struct, the fn called)
#   derives  the parameter structs and the fns alone (no `Tool` impl): the floor
#
# Usage: scripts/build-cost.sh [ROUNDS] [TOOLS]   (defaults: 5 rounds, 100 tools)
# Each round builds the three crates one after the other (`cargo clean -p` first); the script
# prints every time, the median per crate and the ratios. Run it on an idle machine: the
# load average is printed beside the figures.
set -euo pipefail

ROUNDS=${1:-5}
TOOLS=${2:-100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WS="$ROOT/target/build-cost"
rm -rf "$WS/macro" "$WS/hand" "$WS/derives"
mkdir -p "$WS/macro/src" "$WS/hand/src" "$WS/derives/src"

cat > "$WS/Cargo.toml" <<EOF
[workspace]
members = ["macro", "hand", "derives"]
resolver = "3"

[workspace.dependencies]
llm-tools-core = { path = "$ROOT/llm-tools-core", features = ["macros"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"
serde_json = "1"
EOF
# The repository's lock file: the same dependency versions, and no registry access needed.
cp "$ROOT/Cargo.lock" "$WS/Cargo.lock"

for crate in macro hand derives; do
    cat > "$WS/$crate/Cargo.toml" <<EOF
[package]
name = "cost-$crate"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
llm-tools-core.workspace = true
serde.workspace = true
schemars.workspace = true
serde_json.workspace = true
EOF
done

# The parameters tool i takes: 3 to 5 of these, rotating, so types and counts vary.
NAMES=(city days units limit query verbose tags)
TYPES=("String" "u32" "Option<String>" "u64" "String" "bool" "Vec<String>")

params_of() { # i -> "name:type" lines
    local i=$1 count=$((3 + $1 % 3)) k
    for ((k = 0; k < count; k++)); do
        local j=$(((i + k) % 7))
        echo "${NAMES[$j]}:${TYPES[$j]}"
    done
}

{
    echo "//! ${TOOLS} tools declared with \`#[tool]\`."
    echo "#![allow(unused_variables)]"
    echo "use llm_tools_core::tool;"
} > "$WS/macro/src/lib.rs"
{
    echo "//! ${TOOLS} tools written by hand."
    echo "#![allow(unused_variables)]"
    echo "use std::sync::OnceLock;"
    echo "use llm_tools_core::{BoxFuture, IntoToolOutcome, RawArgs, Tool, ToolContext, ToolError, ToolOutcome, ToolSpec, schema_for};"
} > "$WS/hand/src/lib.rs"
{
    echo "//! ${TOOLS} parameter structs and fns, no tools."
    echo "#![allow(dead_code, unused_variables)]"
} > "$WS/derives/src/lib.rs"

for ((i = 0; i < TOOLS; i++)); do
    mapfile -t params < <(params_of "$i")
    sig="" fields="" docs="" call="" names=""
    for p in "${params[@]}"; do
        n=${p%%:*} t=${p#*:}
        sig+="$n: $t, "
        fields+="    /// The ${n} of request ${i}
    $n: $t,
"
        docs+="/// * \`$n\` - The ${n} of request ${i}
"
        call+="a.$n, "
        names+="\"$n\", "
    done
    first=${params[0]%%:*}
    body="format!(\"{:?}\", ($first,))"
    cat >> "$WS/macro/src/lib.rs" <<EOF

/// Runs operation number ${i} on the service
///
/// # Arguments
${docs}#[tool]
pub async fn op_${i}(${sig}) -> String {
    $body
}
EOF
    cat >> "$WS/derives/src/lib.rs" <<EOF

/// Runs operation number ${i} on the service
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Op${i}Args {
${fields}}

/// Runs operation number ${i} on the service
pub async fn op_${i}(${sig}) -> String {
    $body
}
EOF
    cat >> "$WS/hand/src/lib.rs" <<EOF

/// Runs operation number ${i} on the service
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Op${i}Args {
${fields}}

/// Runs operation number ${i} on the service
pub async fn op_${i}(${sig}) -> String {
    $body
}

/// The tool of \`op_${i}\`.
pub struct Op${i};

impl Tool for Op${i} {
    fn spec(&self) -> &ToolSpec {
        static SPEC: OnceLock<ToolSpec> = OnceLock::new();
        SPEC.get_or_init(|| {
            ToolSpec::new("op_${i}", "Runs operation number ${i} on the service")
                .with_parameters(schema_for::<Op${i}Args>())
        })
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let a: Op${i}Args = match serde_json::from_str(args.as_str()) {
                Ok(a) => a,
                Err(e) => return ToolOutcome::Error(ToolError::recoverable(e.to_string())),
            };
            op_${i}(${call}).await.into_tool_outcome()
        })
    }
}
EOF
done

cd "$WS"
export CARGO_TARGET_DIR="$WS/target"
echo "building the dependencies once…"
cargo build --offline --quiet -p cost-macro -p cost-hand -p cost-derives

declare -A times
for ((r = 1; r <= ROUNDS; r++)); do
    for crate in macro hand derives; do
        cargo clean --offline --quiet -p "cost-$crate"
        start=$(date +%s.%N)
        cargo build --offline --quiet -p "cost-$crate"
        end=$(date +%s.%N)
        t=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')
        times[$crate]+="$t "
        printf 'round %d  %-8s %6.2f s\n' "$r" "$crate" "$t"
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
m_macro=$(echo "${times[macro]}" | median)
m_hand=$(echo "${times[hand]}" | median)
m_derives=$(echo "${times[derives]}" | median)
echo
echo "${TOOLS} tools, ${ROUNDS} rounds, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'median  macro %.2f s   hand %.2f s   derives %.2f s\n' "$m_macro" "$m_hand" "$m_derives"
awk -v m="$m_macro" -v h="$m_hand" -v d="$m_derives" \
    'BEGIN {printf "macro / hand     %.3f\nmacro / derives  %.3f\n", m / h, m / d}'

#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, on the stable toolchain
# (`cargo fuzz run -s none`), with corpora seeded from the recorded traffic. A crash fails the
# script; its input is in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh 30                 # the CI smoke: 30 s per target
#   fuzz/run.sh 1800 protocols     # a long run of one target
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-30}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(framing protocols retry_after tool_args schema)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked --quiet
fi
python3 seed.py
cargo fuzz build -s none -O "${targets[@]/#/}" 2>/dev/null || cargo fuzz build -s none -O
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    echo "== $target: ${seconds}s" >&2
    log="$(mktemp)"
    if ! cargo fuzz run -s none -O "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "fuzz target $target failed: see fuzz/artifacts/$target" >&2
        exit 1
    fi
    grep -E "^stat::number_of_executed_units|^Done" "$log" >&2 || true
    rm -f "$log"
done

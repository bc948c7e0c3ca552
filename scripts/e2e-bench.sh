#!/usr/bin/env bash
# The end-to-end benchmark: CPU (user and system) and wall time per tool round, context switches,
# peak RSS and request bytes per conversation of llm-tools against a hand-written reqwest + serde_json client (the floor),
# both talking to a mock Chat Completions server on 127.0.0.1 (see e2e-bench/).
#
#   scripts/e2e-bench.sh [--runs 15] [--conversations 200] [--warmup 20] [--only plain|stream] [--instructions] [--syscalls]
#
# Builds the programs in release mode, then runs both clients in turn (non-streaming, then
# streaming) and prints a Markdown table: median (lowest–highest) and llm-tools / floor.
# --instructions adds what valgrind's callgrind counts per round, which the machine's load does
# not move: instructions, allocations, and the lines and pages of code a round runs through.
# --syscalls adds the system calls per round, counted by strace.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet -p e2e-bench --bins
target_dir="${CARGO_TARGET_DIR:-target}"
echo "$(nproc) cores; load average (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$target_dir/release/e2e-run" "$@"

#!/usr/bin/env bash
# Lists the file-level import cycles within each library crate (a file that imports, directly
# or through others, from a file that imports it); exits non-zero when there is one.
# Usage: scripts/import-cycles.sh [--list] [--tests] [crate-dir…]
#        scripts/import-cycles.sh --self-test
#   --list       only list them (exit 0 either way)
#   --tests      also read inline `#[cfg(test)]` modules
#   --self-test  run the checker's own tests
# The checker is scripts/import-cycles.rs (standard library only), built here with rustc.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/import-cycles/import-cycles
if [ "${1:-}" = --self-test ]; then
    mkdir -p "$(dirname "$bin")"
    rustc --edition 2024 --test -o "$bin-tests" scripts/import-cycles.rs
    exec "$bin-tests"
fi
if [ ! -x "$bin" ] || [ scripts/import-cycles.rs -nt "$bin" ]; then
    mkdir -p "$(dirname "$bin")"
    rustc --edition 2024 -O -o "$bin" scripts/import-cycles.rs
fi
exec "$bin" "$@"

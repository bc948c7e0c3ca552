#!/usr/bin/env bash
# Packages the four published crates as `cargo publish` would and builds each from its packaged
# sources, every feature on, against the others' packages (cargo packages workspace members
# together and resolves them from a local registry, so the macro crate, core, the providers and
# MCP are verified as they will be published, before any is on crates.io). Also checks that each
# package carries the licence texts and its changelog.
# Usage: scripts/check-package.sh [cargo package options, e.g. --allow-dirty]
set -euo pipefail
cd "$(dirname "$0")/.."

crates=(llm-tools-macros llm-tools-core llm-tools-providers llm-tools-mcp)

missing=0
for crate in "${crates[@]}"; do
    files=$(cargo package --quiet --locked --list -p "$crate" "$@")
    for required in LICENSE-MIT LICENSE-APACHE CHANGELOG.md; do
        if ! grep -qx "$required" <<<"$files"; then
            echo "error: the package of $crate lacks $required" >&2
            missing=1
        fi
    done
done
[ "$missing" -eq 0 ] || exit 1

packages=()
for crate in "${crates[@]}"; do packages+=(-p "$crate"); done
# `--all-features`: a provider's module compiles only with its feature, so a file left out of
# the package would go unnoticed with the defaults (the providers crate has none).
cargo package --locked --all-features "${packages[@]}" "$@"

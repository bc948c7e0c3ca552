//! Compile-fail (`tests/ui`) and compile-pass (`tests/pass`) cases, grouped by macro:
//! `tool/` for `#[tool]` (on a fn or an `impl` block), `toolset/` for `#[toolset]`. The
//! `.stderr` files are blessed on rustc 1.95 (the workspace toolchain) with
//! `TRYBUILD=overwrite cargo test -p llm-tools-core --test ui`; other compilers word their
//! diagnostics differently, so the test only runs there.

#[rustversion::attr(not(stable(1.95)), ignore = "stderr is blessed on rustc 1.95")]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/tool/*.rs");
    t.compile_fail("tests/ui/toolset/*.rs");
    t.pass("tests/pass/tool/*.rs");
}

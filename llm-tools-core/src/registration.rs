//! Every tool `#[tool]` and `#[toolset]` declared in the program, found at compile time.
//!
//! Each tool the macros generate registers its spec through
//! [`inventory`](https://docs.rs/inventory) (a static collected before `main`), so
//! [`all_tool_specs`] lists them all with nothing to keep in sync: a test that checks every
//! tool's schema (for example
//! `llm_tools_providers::check_spec_portability(&all_tool_specs(), …).assert_portable()`) checks
//! a tool added later without being touched.
//!
//! ```
//! use llm_tools_core::{all_tool_specs, is_valid_tool_name, tool};
//!
//! /// Gets the weather
//! #[tool]
//! async fn weather(city: String) -> String {
//!     format!("15°C in {city}")
//! }
//!
//! let specs = all_tool_specs();
//! assert!(specs.iter().any(|s| s.name() == "weather"));
//! assert!(specs.iter().all(|s| is_valid_tool_name(s.joined_name())));
//! ```
//!
//! What is listed is what is linked into the running program: the tools of the binary (or test)
//! itself and of the libraries it uses. Tools implemented by hand (`impl Tool for …`) are not
//! listed. `inventory` registers through the platform's start-up constructors (ELF
//! `.init_array` on Linux, Android and the BSDs, `__mod_init_func` on macOS and iOS,
//! `.CRT$XCU` on Windows, `__wasm_call_ctors` on WebAssembly); a library linked statically whose
//! code the program never references may have its registrations dropped by the linker, as any
//! unreferenced object code is.

use crate::spec::ToolSpec;

/// One registered tool: the function returning its spec. Submitted by the code `#[tool]` and
/// `#[toolset]` generate; not for use by hand.
#[doc(hidden)]
pub struct ToolRegistration {
    spec: fn() -> &'static ToolSpec,
}

impl ToolRegistration {
    /// The registration of the tool whose spec `spec` returns.
    #[doc(hidden)]
    pub const fn new(spec: fn() -> &'static ToolSpec) -> Self {
        Self { spec }
    }
}

inventory::collect!(ToolRegistration);

/// The `inventory` the generated code submits through, so user crates need no dependency on it.
#[doc(hidden)]
pub use inventory as __inventory;

/// The specs of every `#[tool]` and `#[toolset]` tool linked into the program, sorted by joined
/// name (then name), each once.
pub fn all_tool_specs() -> Vec<&'static ToolSpec> {
    let mut specs: Vec<&'static ToolSpec> = inventory::iter::<ToolRegistration>
        .into_iter()
        .map(|r| (r.spec)())
        .collect();
    specs.sort_by(|a, b| (a.joined_name(), a.name()).cmp(&(b.joined_name(), b.name())));
    specs.dedup_by(|a, b| std::ptr::eq(*a, *b));
    specs
}

#[cfg(all(test, feature = "macros"))]
mod tests {
    use super::all_tool_specs;

    /// Registered in this test binary only.
    #[crate::tool(crate = crate)]
    async fn registration_probe(text: String) -> String {
        text
    }

    #[test]
    fn a_declared_tool_is_listed_once() {
        let specs = all_tool_specs();
        let probes: Vec<_> = specs
            .iter()
            .filter(|s| s.name() == "registration_probe")
            .collect();
        assert_eq!(probes.len(), 1);
        assert!(
            probes
                .iter()
                .all(|s| std::ptr::eq(**s, RegistrationProbe::tool_spec()))
        );
    }
}

//! Namespaces: named groups of tools.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A named group of tools, declared once as a `const` and shared by every tool in the group.
///
/// Tools in different namespaces may share a name: a chat keys its tools by the joined name
/// `{namespace}_{name}` (for example `crm_customer_lookup`). The OpenAI Responses protocol sends a
/// namespace as a native group and requires its description; every other protocol sends the
/// joined name and maps the model's calls back to the namespace.
///
/// ```
/// use llm_tools_core::Namespace;
///
/// pub const CRM: Namespace = Namespace::new("crm").description("Customer records and orders");
///
/// assert_eq!(CRM.name(), "crm");
/// assert_eq!(CRM.get_description(), Some("Customer records and orders"));
/// assert_eq!(CRM.join("customer_lookup"), "crm_customer_lookup");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Namespace {
    name: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<Cow<'static, str>>,
}

impl Namespace {
    /// The name as kept (borrowed for a `&'static str`), to share without copying.
    pub(crate) fn name_cow(&self) -> &Cow<'static, str> {
        &self.name
    }

    /// A namespace without a description.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name: Cow::Borrowed(name),
            description: None,
        }
    }

    /// A namespace whose name is only known at run time (an MCP server's name, say).
    pub fn owned(name: impl Into<String>) -> Self {
        Self {
            name: Cow::Owned(name.into()),
            description: None,
        }
    }

    /// Sets the description the model sees for the group.
    #[must_use]
    pub const fn description(mut self, description: &'static str) -> Self {
        // A `const fn` cannot run a destructor; the replaced value is `None` (or a borrowed
        // string) whenever this runs in a `const`, and at worst a short string otherwise.
        let previous = self.description.replace(Cow::Borrowed(description));
        std::mem::forget(previous);
        self
    }

    /// The name of a namespace built in a `const` (with [`Namespace::new`]), consumed so it can
    /// run in a `const`; `""` for one built at run time. `#[tool]` uses it to compute joined
    /// names at compile time.
    pub(crate) const fn into_static_name(self) -> &'static str {
        let name = match &self.name {
            Cow::Borrowed(name) => *name,
            Cow::Owned(_) => "",
        };
        // Only borrowed strings reach here in a `const`; nothing is leaked.
        std::mem::forget(self);
        name
    }

    /// Sets a description known only at run time.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(Cow::Owned(description.into()));
        self
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's description, if it has one.
    pub fn get_description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The joined name of a tool in this namespace: `{namespace}_{name}`.
    pub fn join(&self, tool_name: &str) -> String {
        let mut joined = String::with_capacity(self.name.len() + 1 + tool_name.len());
        joined.push_str(&self.name);
        joined.push('_');
        joined.push_str(tool_name);
        joined
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Namespace");
        s.field("name", &self.name);
        if let Some(d) = &self.description {
            s.field("description", d);
        }
        s.finish()
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

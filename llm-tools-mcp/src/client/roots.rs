//! [`Root`]: a folder the client declares to servers (the roots capability).

/// A root the client declares ([`McpServer::roots`](crate::McpServer::roots)): a folder the
/// server may work in, as a `file://` URI, with an optional name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Root {
    /// The root's URI (`file:///srv/project`).
    pub uri: String,
    /// A name for it (`project`).
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri` (`file:///srv/project`).
    pub fn new(uri: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: None,
        }
    }

    /// The root with a name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// As the protocol sends it.
    #[allow(deprecated)] // 2026-07-28 deprecates roots; older servers still ask for them.
    pub(crate) fn to_wire(&self) -> rmcp::model::Root {
        let root = rmcp::model::Root::new(self.uri.clone());
        match &self.name {
            Some(name) => root.with_name(name.clone()),
            None => root,
        }
    }
}

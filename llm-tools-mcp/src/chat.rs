//! [`McpChat`]: `chat.with_mcp(&client)`.

use llm_tools_core::{Chat, Error};

use crate::McpClient;

/// Adds an MCP server's tools to a [`Chat`].
///
/// ```no_run
/// use llm_tools_mcp::{McpChat as _, McpServer};
///
/// # async fn run(provider: impl llm_tools_core::Provider) -> Result<(), Box<dyn std::error::Error>> {
/// let everything = McpServer::stdio("npx")
///     .args(["-y", "@modelcontextprotocol/server-everything", "stdio"])
///     .connect("everything")
///     .await?;
/// let mut chat = llm_tools_core::Chat::new(provider);
/// chat.with_mcp(&everything)?;
/// let answer = chat.ask("Add 2 and 3 with the get-sum tool.").await?;
/// # let _ = answer;
/// # Ok(()) }
/// ```
pub trait McpChat {
    /// The server's tools join the chat under its name as namespace, and stay current: a list
    /// the server changes is offered from the chat's next request on. All or nothing, like
    /// `with_tools`: a name taken already is an error and adds nothing, and so is a second
    /// server of the same name (its tools would mix with the first one's).
    fn with_mcp(&mut self, client: &McpClient) -> Result<&mut Self, Error>;
}

impl McpChat for Chat {
    fn with_mcp(&mut self, client: &McpClient) -> Result<&mut Self, Error> {
        let taken = self.tools().iter().any(|tool| {
            tool.spec()
                .namespace()
                .is_some_and(|n| n.name() == client.name())
        });
        if taken {
            return Err(llm_tools_core::ConfigError::NameTaken(format!(
                "the chat has tools in the namespace `{}` already; connect the second server \
                 under another name",
                client.name()
            ))
            .into());
        }
        self.with_tool_source(client.clone())
    }
}

//! [`McpChat`]: `chat.with_mcp(&client)`.

use llm_tools_core::{Chat, Error};

use super::mcp_client::McpClient;

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
    /// the server changes is offered from the chat's next request on, and so is the list of a
    /// new session after [`McpClient::reconnect`]. All or nothing, like `with_tools`: a name
    /// taken already is an error and adds nothing.
    ///
    /// When the chat has a client of that name already:
    ///
    /// - the same client (a clone of it): nothing is added twice and nothing is refused; the
    ///   chat keeps the tools it has, which follow the client's reconnects;
    /// - another client of the same server (the same command, arguments, environment and
    ///   folder, or the same URL, headers and token) while the chat's client has ended its
    ///   session (the server died, or it was closed): the new client takes the namespace, and
    ///   the old client's tools leave the chat. The transcript is unchanged;
    /// - otherwise it is refused: two live servers under one name would mix their tools.
    ///   Reconnect the chat's client ([`McpClient::reconnect`]), connect the second server under
    ///   another name, or take the first out with `Chat::remove_tool_source`.
    ///
    /// A client whose session has ended by itself (not by [`McpClient::close`]) is reconnected
    /// before the chat's next request: re-attaching clients to a durable chat that was loaded
    /// again (`Chat::load`) brings their servers back.
    fn with_mcp(&mut self, client: &McpClient) -> Result<&mut Self, Error>;
}

impl McpChat for Chat {
    fn with_mcp(&mut self, client: &McpClient) -> Result<&mut Self, Error> {
        let held = self
            .tool_source(client.name())
            .and_then(|source| source.as_any())
            .and_then(|any| any.downcast_ref::<McpClient>())
            .cloned();
        if let Some(held) = held {
            if held.same_client(client) {
                client.reconnect_before_next_request();
                return Ok(self);
            }
            if held.same_server(client) && held.has_ended() {
                let Some(old) = self.remove_tool_source(client.name()) else {
                    return Err(taken(client));
                };
                if let Err(error) = self.with_tool_source(client.clone()) {
                    // Back as it was: the old tools fitted a moment ago.
                    let _ = self.with_tool_source(old);
                    return Err(error);
                }
                client.reconnect_before_next_request();
                return Ok(self);
            }
            return Err(taken(client));
        }
        let taken_by_tools = self.tools().iter().any(|tool| {
            tool.spec()
                .namespace()
                .is_some_and(|n| n.name() == client.name())
        });
        if taken_by_tools {
            return Err(taken(client));
        }
        self.with_tool_source(client.clone())?;
        client.reconnect_before_next_request();
        client.use_chat_provider(self.provider());
        Ok(self)
    }
}

/// The refusal of a second server under a name the chat has.
fn taken(client: &McpClient) -> Error {
    llm_tools_core::ConfigError::NameTaken(format!(
        "the chat has tools in the namespace `{}` already; reconnect its client, or connect the \
         second server under another name",
        client.name()
    ))
    .into()
}

//! What a client does besides tools: the server's resources (list, read, subscribe; and a
//! `read_resource` tool for the model), its prompts (list, get as chat messages), and the
//! roots the client declares.

use std::future::Future;
use std::sync::Arc;

use llm_tools_core::{
    BoxFuture, Message, Part, Provider, RawArgs, Tool, ToolContext, ToolOutcome, ToolSpec,
};
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptRequestParams, PaginatedRequestParams, Prompt,
    ProtocolVersion, ReadResourceRequestParams, Resource, ResourceContents, ResourceTemplate, Role,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use serde_json::{Value, json};

use super::content;
use super::listing::{ListingFailed, MAX_LISTED, Overflow, all_pages};
use super::mcp_client::McpClient;
use super::roots::Root;
use crate::error::{self, McpError};

/// How many resources the description of the `read_resource` tool names (the rest are
/// counted), and how long each line may be.
const TOOL_LISTED_RESOURCES: usize = 50;
const TOOL_LINE_CHARS: usize = 200;

impl McpClient {
    async fn request<T, F, Fut>(&self, what: &'static str, send: F) -> Result<T, McpError>
    where
        F: FnOnce(rmcp::Peer<rmcp::RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let session = self.current_session();
        let peer = session.peer.clone();
        match tokio::time::timeout(self.timeout(), send(peer)).await {
            Err(_) => Err(McpError::Timeout {
                server: self.name().to_owned(),
                what,
                after: self.timeout(),
            }),
            Ok(Err(source)) => Err(McpError::Request {
                server: self.name().to_owned(),
                what,
                source,
            }),
            Ok(Ok(value)) => {
                // An answered request (a resource read, a prompt): a login may again follow a
                // refusal, as after an answered call.
                #[cfg(feature = "auth")]
                if let Some(auth) = &session.auth {
                    auth.answered();
                }
                Ok(value)
            }
        }
    }

    /// Reads every page of a listing, within [`MAX_LIST_PAGES`], [`MAX_LISTED`] and
    /// [`MAX_LISTING_BYTES`](super::listing::MAX_LISTING_BYTES), all of it within the client's
    /// timeout (not each page: a server answering each page just in time would otherwise hold a
    /// listing for a hundred timeouts).
    async fn list_all<T, F, Fut>(&self, what: &'static str, page: F) -> Result<Vec<T>, McpError>
    where
        F: Fn(rmcp::Peer<rmcp::RoleClient>, Option<PaginatedRequestParams>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
        T: serde::Serialize,
    {
        let peer = self.current_session().peer.clone();
        let overflow = Overflow {
            entries: "more entries",
            pages: "more pages",
        };
        let server = || self.name().to_owned();
        match tokio::time::timeout(self.timeout(), all_pages(&peer, overflow, page)).await {
            Ok(Ok(all)) => Ok(all),
            Ok(Err(ListingFailed::Failed(source))) => Err(McpError::Request {
                server: server(),
                what,
                source,
            }),
            Ok(Err(ListingFailed::Over { what, limit })) => Err(McpError::OverLimit {
                server: server(),
                what,
                limit,
            }),
            Err(_) => Err(McpError::Timeout {
                server: server(),
                what,
                after: self.timeout(),
            }),
        }
    }

    /// The server's resources, every page (`resources/list`).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, McpError> {
        self.boxed_list_resources().await
    }

    /// [`list_resources`](Self::list_resources) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_list_resources(&self) -> BoxFuture<'_, Result<Vec<Resource>, McpError>> {
        Box::pin(self.list_resources_now())
    }

    /// [`list_resources`](Self::list_resources)'s work.
    async fn list_resources_now(&self) -> Result<Vec<Resource>, McpError> {
        self.list_all("resources/list", |peer, params| async move {
            let result = peer.list_resources(params).await?;
            Ok((result.resources, result.next_cursor))
        })
        .await
    }

    /// The server's resource templates, every page (`resources/templates/list`).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, McpError> {
        self.boxed_list_resource_templates().await
    }

    /// [`list_resource_templates`](Self::list_resource_templates) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_list_resource_templates(
        &self,
    ) -> BoxFuture<'_, Result<Vec<ResourceTemplate>, McpError>> {
        Box::pin(self.list_resource_templates_now())
    }

    /// [`list_resource_templates`](Self::list_resource_templates)'s work.
    async fn list_resource_templates_now(&self) -> Result<Vec<ResourceTemplate>, McpError> {
        self.list_all("resources/templates/list", |peer, params| async move {
            let result = peer.list_resource_templates(params).await?;
            Ok((result.resource_templates, result.next_cursor))
        })
        .await
    }

    /// Reads the resource `uri` (`resources/read`): its contents, text or base64 blobs.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, McpError> {
        self.boxed_read_resource(uri).await
    }

    /// [`read_resource`](Self::read_resource) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_read_resource<'a>(
        &'a self,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, McpError>> {
        Box::pin(self.read_resource_now(uri))
    }

    /// [`read_resource`](Self::read_resource)'s work.
    async fn read_resource_now(&self, uri: &str) -> Result<Vec<ResourceContents>, McpError> {
        let params = ReadResourceRequestParams::new(uri);
        self.request("resources/read", |peer| async move {
            peer.read_resource(params).await
        })
        .await
        .map(|result| result.contents)
    }

    /// Subscribes to changes of the resource `uri`: each change calls the handler given to
    /// [`McpServer::on_resource_updated`](crate::McpServer::on_resource_updated). Sessions
    /// opened with `initialize` send `resources/subscribe` (the server must offer
    /// subscriptions); 2026-07-28 sessions open a `subscriptions/listen` stream for the
    /// resource, which lasts as long as the session. A reconnect drops subscriptions:
    /// subscribe again.
    pub async fn subscribe(&self, uri: &str) -> Result<(), McpError> {
        self.boxed_subscribe(uri).await
    }

    /// [`subscribe`](Self::subscribe) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(self.subscribe_now(uri))
    }

    /// [`subscribe`](Self::subscribe)'s work.
    async fn subscribe_now(&self, uri: &str) -> Result<(), McpError> {
        let session = self.current_session();
        let info = session.peer.peer_info();
        let modern = info.as_ref().is_some_and(|info| {
            info.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
        });
        let offered = info
            .as_ref()
            .and_then(|info| info.capabilities.resources.as_ref())
            .and_then(|resources| resources.subscribe)
            .unwrap_or(false);
        if !offered {
            return Err(McpError::Unsupported {
                server: self.name().to_owned(),
                what: "the server offers no resource subscriptions".into(),
            });
        }
        // Noted first: an update may come before the answer to the subscription.
        session.events.note_subscription(uri, true);
        let subscribed = self.subscribe_on(modern, uri).await;
        if subscribed.is_err() {
            session.events.note_subscription(uri, false);
        }
        subscribed
    }

    async fn subscribe_on(&self, modern: bool, uri: &str) -> Result<(), McpError> {
        if modern {
            let filter = SubscriptionFilter::builder()
                .resource_subscription(uri)
                .build();
            let mut subscription = self
                .request("subscriptions/listen", |peer| async move {
                    peer.listen(filter).await
                })
                .await?;
            // The transport saw each notification already; the stream is only kept open.
            tokio::spawn(async move { while let Ok(Some(_)) = subscription.next().await {} });
            return Ok(());
        }
        let params = SubscribeRequestParams::new(uri);
        #[allow(deprecated)] // The legacy path, for sessions opened with `initialize`.
        self.request("resources/subscribe", |peer| async move {
            peer.subscribe(params).await
        })
        .await
    }

    /// Ends a subscription made with [`subscribe`](Self::subscribe) (`resources/unsubscribe`;
    /// sessions opened with `initialize`).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), McpError> {
        self.boxed_unsubscribe(uri).await
    }

    /// [`unsubscribe`](Self::unsubscribe) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_unsubscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(self.unsubscribe_now(uri))
    }

    /// [`unsubscribe`](Self::unsubscribe)'s work.
    async fn unsubscribe_now(&self, uri: &str) -> Result<(), McpError> {
        self.current_session().events.note_subscription(uri, false);
        let params = UnsubscribeRequestParams::new(uri);
        #[allow(deprecated)] // The legacy path, for sessions opened with `initialize`.
        self.request("resources/unsubscribe", |peer| async move {
            peer.unsubscribe(params).await
        })
        .await
    }

    /// The server's prompts, every page (`prompts/list`).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, McpError> {
        self.boxed_list_prompts().await
    }

    /// [`list_prompts`](Self::list_prompts) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_list_prompts(&self) -> BoxFuture<'_, Result<Vec<Prompt>, McpError>> {
        Box::pin(self.list_prompts_now())
    }

    /// [`list_prompts`](Self::list_prompts)'s work.
    async fn list_prompts_now(&self) -> Result<Vec<Prompt>, McpError> {
        self.list_all("prompts/list", |peer, params| async move {
            let result = peer.list_prompts(params).await?;
            Ok((result.prompts, result.next_cursor))
        })
        .await
    }

    /// The prompt `name` with its `arguments` (a JSON object of strings, or `null`), as chat
    /// messages the application adds to a chat (`prompts/get`): text stays text, an embedded
    /// text resource becomes text headed by its URI, a resource link its URI, images and
    /// audio (in user messages) attachments. Attachments are bounded over the whole prompt as
    /// over one tool result ([`McpServer::max_attachments`](crate::McpServer::max_attachments),
    /// [`max_attachment_bytes`](crate::McpServer::max_attachment_bytes)): one past either is
    /// never decoded, and its message says what was left out. An assistant message keeps its
    /// text only (its images and audio are neither decoded nor kept).
    ///
    /// The server wrote these messages: add them where the application would add its user's
    /// own words, knowing whose they are.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Vec<Message>, McpError> {
        self.boxed_get_prompt(name, arguments).await
    }

    /// [`get_prompt`](Self::get_prompt) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
    ) -> BoxFuture<'a, Result<Vec<Message>, McpError>> {
        Box::pin(self.get_prompt_now(name, arguments))
    }

    /// [`get_prompt`](Self::get_prompt)'s work.
    async fn get_prompt_now(&self, name: &str, arguments: Value) -> Result<Vec<Message>, McpError> {
        let mut params = GetPromptRequestParams::new(name);
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let result = self
            .request("prompts/get", |peer| async move {
                peer.get_prompt(params).await
            })
            .await?;
        if result.messages.len() > MAX_LISTED {
            return Err(McpError::OverLimit {
                server: self.name().to_owned(),
                what: "more prompt messages",
                limit: MAX_LISTED,
            });
        }
        // Attachments are bounded over the whole prompt, as over a tool result: the
        // application adds every message to the chat, whose history carries them all.
        let mut budget = content::Budget::new(self.name(), self.attachment_limits(), "prompt");
        let mut messages = Vec::with_capacity(result.messages.len());
        for message in result.messages {
            messages.push(match message.role {
                // The assistant's side of a prompt carries its text only: nothing is decoded.
                Role::Assistant => {
                    let parts = prompt_parts(message.content, None);
                    let text: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
                    Message::assistant(text.join("\n"))
                }
                Role::User => Message::user_parts(prompt_parts(message.content, Some(&mut budget))),
            });
        }
        if budget.left_out() > 1 {
            tracing::warn!(
                target: "llm_tools::mcp",
                server = self.name(),
                left_out = budget.left_out(),
                "attachments of a prompt past the client's limits were left out"
            );
        }
        Ok(messages)
    }

    /// The roots the client declares now (empty when it declares none).
    pub fn roots(&self) -> Vec<Root> {
        self.shared()
            .roots
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Replaces the roots the client declares and tells the server
    /// (`notifications/roots/list_changed`), which asks for them again (`roots/list`). The
    /// client must have declared roots at connect ([`McpServer::roots`](crate::McpServer::roots),
    /// an empty list is fine), else [`McpError::Unsupported`]. The roots stay across
    /// reconnects.
    pub async fn set_roots<I>(&self, roots: I) -> Result<(), McpError>
    where
        I: IntoIterator<Item = Root>,
    {
        // Refused before the roots are read, as the application may pass any iterator.
        if !self.declares_roots() {
            return Err(self.no_roots_declared());
        }
        self.boxed_set_roots(roots.into_iter().collect()).await
    }

    fn no_roots_declared(&self) -> McpError {
        McpError::Unsupported {
            server: self.name().to_owned(),
            what: "the client declared no roots at connect (McpServer::roots)".into(),
        }
    }

    /// [`set_roots`](Self::set_roots) as a boxed future made here, so that a caller's crate
    /// compiles none of it.
    #[inline(never)]
    fn boxed_set_roots(&self, roots: Vec<Root>) -> BoxFuture<'_, Result<(), McpError>> {
        Box::pin(self.set_roots_now(roots))
    }

    /// [`set_roots`](Self::set_roots)'s work.
    async fn set_roots_now(&self, roots: Vec<Root>) -> Result<(), McpError> {
        *self
            .shared()
            .roots
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = roots;
        self.request("notifications/roots/list_changed", |peer| async move {
            peer.notify_roots_list_changed().await
        })
        .await
    }

    /// A `read_resource` tool for the model, in the server's namespace
    /// (`<server>_read_resource`): it reads one of the server's resources by URI, and its
    /// description lists the resources the server had when it was made (the first 50, each
    /// line cut at 200 characters; list again for a new one). Text comes back as text, blobs as
    /// attachments. Add it with `chat.with_tools(...)`.
    pub async fn resources_tool(&self) -> Result<Arc<dyn Tool>, McpError> {
        self.boxed_resources_tool().await
    }

    /// [`resources_tool`](Self::resources_tool) as a boxed future made here, so that a caller's crate compiles
    /// none of it.
    #[inline(never)]
    fn boxed_resources_tool(&self) -> BoxFuture<'_, Result<Arc<dyn Tool>, McpError>> {
        Box::pin(self.resources_tool_now())
    }

    /// [`resources_tool`](Self::resources_tool)'s work.
    async fn resources_tool_now(&self) -> Result<Arc<dyn Tool>, McpError> {
        let resources = self.list_resources().await?;
        let mut description = format!(
            "Reads a resource of the MCP server `{}` by its URI. Resources:",
            self.name()
        );
        for resource in resources.iter().take(TOOL_LISTED_RESOURCES) {
            let mut line = format!("\n- {} ({})", resource.uri, resource.name);
            if let Some(about) = &resource.description {
                line.push_str(": ");
                line.push_str(about);
            }
            description.extend(line.chars().take(TOOL_LINE_CHARS));
        }
        if resources.len() > TOOL_LISTED_RESOURCES {
            description.push_str(&format!(
                "\n… and {} more",
                resources.len() - TOOL_LISTED_RESOURCES
            ));
        }
        let spec = ToolSpec::new("read_resource", description)
            .with_parameters(json!({
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource's URI"}},
                "required": ["uri"],
            }))
            .with_namespace(Some(self.namespace().clone()));
        Ok(Arc::new(ReadResource {
            spec,
            client: self.clone(),
        }))
    }

    /// Makes `provider` the model that answers sampling requests when the application gave
    /// none: the first chat the client joins.
    pub(crate) fn use_chat_provider(&self, provider: &Arc<dyn Provider>) {
        let mut held = self
            .shared()
            .chat_provider
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if held.is_none() {
            *held = Some(Arc::clone(provider));
        }
    }
}

/// One content block of a prompt message as chat parts. Images, audio and blobs become
/// attachments within `budget`, the prompt's own (past it, or not base64, a line of text says
/// so); without one (an assistant message, which keeps its text only) nothing is decoded and
/// they are left out.
fn prompt_parts(block: ContentBlock, budget: Option<&mut content::Budget<'_>>) -> Vec<Part> {
    let attach = |budget: Option<&mut content::Budget<'_>>, what: &str, media: &str, data: &str| {
        budget
            .map(|budget| match budget.take(what, media, data, None) {
                Ok(attachment) => Part::Attachment(attachment),
                Err(line) => Part::text(line),
            })
            .into_iter()
            .collect()
    };
    match block {
        ContentBlock::Text(text) => vec![Part::text(text.text)],
        ContentBlock::Image(image) => attach(budget, "image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => attach(budget, "audio", &audio.mime_type, &audio.data),
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                vec![Part::text(format!("Resource {uri}:\n{text}"))]
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                let media = mime_type.as_deref().unwrap_or("application/octet-stream");
                let what = format!("resource {}", error::cut(&uri, content::MAX_SHOWN));
                attach(budget, &what, media, &blob)
            }
            // A kind of resource contents newer than this client.
            _ => vec![Part::text(
                "[resource contents of an unknown kind left out]",
            )],
        },
        ContentBlock::ResourceLink(link) => vec![Part::text(format!("Resource {}", link.uri))],
        // A block kind newer than this client.
        _ => vec![Part::text("[content of an unknown type left out]")],
    }
}

/// The `read_resource` tool of [`McpClient::resources_tool`].
struct ReadResource {
    spec: ToolSpec,
    client: McpClient,
}

impl Tool for ReadResource {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let uri = match serde_json::from_str::<Value>(args.as_str()) {
                Ok(Value::Object(map)) => match map.get("uri").and_then(Value::as_str) {
                    Some(uri) => uri.to_owned(),
                    None => return ToolOutcome::error("`uri` (a string) is required"),
                },
                _ => return ToolOutcome::error("the arguments must be a JSON object with `uri`"),
            };
            match self.client.read_resource(&uri).await {
                Ok(contents) => content::outcome(
                    CallToolResult::success(
                        contents.into_iter().map(ContentBlock::resource).collect(),
                    ),
                    self.client.name(),
                    self.client.attachment_limits(),
                ),
                Err(McpError::Request { source, .. }) => ToolOutcome::error(format!(
                    "reading `{uri}` failed: {}",
                    error::describe_request(&source)
                )),
                Err(other) => ToolOutcome::error(other.to_string()),
            }
        })
    }
}

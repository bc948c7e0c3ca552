//! Listings of a server's tools, resources and prompts: the bounds every listing keeps, and the
//! tools listing.

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::{Peer, RoleClient};

/// The most pages the client reads of one listing of tools, resources, resource templates or
/// prompts; a server still sending a `nextCursor` after that many is an
/// [`McpError::OverLimit`](crate::McpError::OverLimit).
pub const MAX_LIST_PAGES: usize = 100;

/// The most entries one listing of tools, resources, resource templates or prompts may have,
/// over all its pages, and the most messages one prompt may have; more is an
/// [`McpError::OverLimit`](crate::McpError::OverLimit).
pub const MAX_LISTED: usize = 10_000;

/// Why a listing of tools ended without its tools.
pub(super) enum ListingFailed {
    Failed(rmcp::ServiceError),
    /// Past [`MAX_LIST_PAGES`] or [`MAX_LISTED`].
    Over {
        what: &'static str,
        limit: usize,
    },
}

/// Every page of `tools/list`, within [`MAX_LIST_PAGES`] pages and [`MAX_LISTED`] tools: a
/// server sending cursors without end, or pages of tools without end, gets
/// [`McpError::OverLimit`](crate::McpError::OverLimit) rather than the client's memory. rmcp's
/// response cache is turned off first: a server's time-to-live could keep every page it sent
/// long after the listing, and a listing after a change must see the change.
pub(super) async fn all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ListingFailed> {
    peer.set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer
            .list_tools(params)
            .await
            .map_err(ListingFailed::Failed)?;
        if all.len() + page.tools.len() > MAX_LISTED {
            return Err(ListingFailed::Over {
                what: "more tools",
                limit: MAX_LISTED,
            });
        }
        all.extend(page.tools);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(all),
        }
    }
    Err(ListingFailed::Over {
        what: "more pages of tools",
        limit: MAX_LIST_PAGES,
    })
}

//! Listings of a server's tools, resources and prompts: the bounds every listing keeps, and the
//! tools listing.

use std::future::Future;

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

/// Why a listing ended without its entries.
pub(super) enum ListingFailed {
    Failed(rmcp::ServiceError),
    /// Past [`MAX_LIST_PAGES`] or [`MAX_LISTED`]: what there was more of, and the limit.
    Over {
        what: &'static str,
        limit: usize,
    },
}

/// What a listing says it had more of than its limits: entries, or pages.
pub(super) struct Overflow {
    pub(super) entries: &'static str,
    pub(super) pages: &'static str,
}

/// Every page of a listing (`page` asks for one and gives its entries and next cursor), within
/// [`MAX_LIST_PAGES`] pages and [`MAX_LISTED`] entries: a server sending cursors without end,
/// or pages without end, gets [`McpError::OverLimit`](crate::McpError::OverLimit) rather than
/// the client's memory. The caller bounds the whole listing's time.
pub(super) async fn all_pages<T, F, Fut>(
    peer: &Peer<RoleClient>,
    overflow: Overflow,
    page: F,
) -> Result<Vec<T>, ListingFailed>
where
    F: Fn(Peer<RoleClient>, Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
{
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (items, next) = page(peer.clone(), params)
            .await
            .map_err(ListingFailed::Failed)?;
        if all.len() + items.len() > MAX_LISTED {
            return Err(ListingFailed::Over {
                what: overflow.entries,
                limit: MAX_LISTED,
            });
        }
        all.extend(items);
        match next {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(all),
        }
    }
    Err(ListingFailed::Over {
        what: overflow.pages,
        limit: MAX_LIST_PAGES,
    })
}

/// Every page of `tools/list` ([`all_pages`]). The session turned rmcp's response cache off
/// when it opened, so every page comes from the server.
pub(super) async fn all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ListingFailed> {
    let overflow = Overflow {
        entries: "more tools",
        pages: "more pages of tools",
    };
    all_pages(peer, overflow, |peer, params| async move {
        let page = peer.list_tools(params).await?;
        Ok((page.tools, page.next_cursor))
    })
    .await
}

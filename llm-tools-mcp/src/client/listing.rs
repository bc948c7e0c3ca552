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

/// The most bytes one listing of tools, resources, resource templates or prompts may take, over
/// all its pages, its entries measured as JSON: 32 MiB. Each page is one message, already
/// bounded on its own; this bounds what the pages add up to (100 pages of 16 MiB would
/// otherwise all be held at once). More is an [`McpError::OverLimit`](crate::McpError::OverLimit).
pub const MAX_LISTING_BYTES: usize = 32 << 20;

/// Why a listing ended without its entries.
pub(super) enum ListingFailed {
    Failed(rmcp::ServiceError),
    /// Past [`MAX_LIST_PAGES`], [`MAX_LISTED`] or [`MAX_LISTING_BYTES`]: what there was more
    /// of, and the limit.
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

/// What a listing past [`MAX_LISTING_BYTES`] had more of.
const MORE_BYTES: &str = "a larger listing, in bytes,";

/// Counts the bytes written to it.
#[derive(Default)]
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How many bytes `items` take written as JSON.
fn json_bytes<T: serde::Serialize>(items: &[T]) -> usize {
    let mut count = ByteCount::default();
    // Writing to a counter fails only where serializing does, which a parsed entry never does.
    let _ = serde_json::to_writer(&mut count, items);
    count.0
}

/// Every page of a listing (`page` asks for one and gives its entries and next cursor), within
/// [`MAX_LIST_PAGES`] pages, [`MAX_LISTED`] entries and [`MAX_LISTING_BYTES`]: a server sending
/// cursors without end, pages without end or pages that add up to more than the client should
/// hold gets [`McpError::OverLimit`](crate::McpError::OverLimit) rather than the client's
/// memory. The caller bounds the whole listing's time.
pub(super) async fn all_pages<T, F, Fut>(
    peer: &Peer<RoleClient>,
    overflow: Overflow,
    page: F,
) -> Result<Vec<T>, ListingFailed>
where
    F: Fn(Peer<RoleClient>, Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
    T: serde::Serialize,
{
    let mut all = Vec::new();
    let mut bytes = 0_usize;
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
        bytes = bytes.saturating_add(json_bytes(&items));
        if bytes > MAX_LISTING_BYTES {
            return Err(ListingFailed::Over {
                what: MORE_BYTES,
                limit: MAX_LISTING_BYTES,
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

//! [`BoxFuture`]: the boxed future trait methods return, so the traits stay object-safe.

use std::future::Future;
use std::pin::Pin;

/// A boxed, `Send` future: what [`Tool`](crate::Tool) methods return, so the trait stays
/// object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

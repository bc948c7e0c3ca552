//! Chat Completions (`POST /chat/completions`): OpenAI and every compatible endpoint.

mod request;
mod response;
mod stream;

pub(crate) use request::body;
pub(crate) use response::parse;
pub use stream::ChatAssembler;

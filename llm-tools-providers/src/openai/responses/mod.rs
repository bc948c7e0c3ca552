//! The Responses API (`POST /responses`): OpenAI's default, and xAI's.

mod request;
mod response;
mod stream;

pub(crate) use request::body;
pub(crate) use response::parse;
pub use stream::ResponsesAssembler;

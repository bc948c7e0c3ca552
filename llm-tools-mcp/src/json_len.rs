//! How long a value is as JSON, without writing it out: the bound checks on what a server
//! sends (a tool's schema, a listing's definitions, an elicitation form) measure with it.

/// The length of `value` written as compact JSON, or `None` past `limit` (the writing stops
/// there).
pub(crate) fn json_len(value: &impl serde::Serialize, limit: usize) -> Option<usize> {
    struct Counted {
        written: usize,
        limit: usize,
    }
    impl std::io::Write for Counted {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.written = self.written.saturating_add(bytes.len());
            if self.written > self.limit {
                return Err(std::io::Error::other("past the limit"));
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counted = Counted { written: 0, limit };
    serde_json::to_writer(&mut counted, value).ok()?;
    Some(counted.written)
}

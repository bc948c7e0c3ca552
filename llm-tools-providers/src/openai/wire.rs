//! What both OpenAI protocols share on the wire beyond the crate's common layer
//! ([`crate::wire`]): Mistral's short tool-call ids.

pub(crate) use crate::wire::*;

/// A tool-call id of exactly 9 ASCII letters and digits (Mistral's rule): the id itself when
/// it already is one, else a hash of it, so the same id always maps to the same short id.
pub(crate) fn nine_char_id(id: &str) -> String {
    if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return id.to_owned();
    }
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let mut out = String::with_capacity(9);
    for _ in 0..9 {
        out.push(char::from(ALPHABET[(hash % 62) as usize]));
        hash /= 62;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nine_char_ids_are_stable_and_valid() {
        assert_eq!(nine_char_id("D681PevKs"), "D681PevKs");
        let a = nine_char_id("call_0fypS1hVX");
        assert_eq!(a.len(), 9);
        assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(a, nine_char_id("call_0fypS1hVX"));
        assert_ne!(a, nine_char_id("call_0fypS1hVY"));
    }
}

//! What the targets share: cutting an input into chunks, the way a network would.

use bytes::Bytes;

/// `data` cut into chunks whose sizes come from `sizes` (each byte a size from 1 to 64,
/// cycling), so one input explores one way the bytes arrive.
pub fn chunks(data: &[u8], sizes: &[u8]) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < data.len() {
        let size = sizes
            .get(i % sizes.len().max(1))
            .map_or(7, |s| usize::from(*s % 64) + 1);
        let end = (at + size).min(data.len());
        out.push(Bytes::copy_from_slice(&data[at..end]));
        at = end;
        i += 1;
    }
    out
}

//! The blocks a stream has open, by the index the provider gave each.

use std::collections::HashMap;

/// The blocks a stream has open (Anthropic's content blocks, Bedrock's `contentBlockIndex`),
/// by the index the provider gave each, in the order they opened.
///
/// Finding, updating and closing a block by its index take constant time however many are
/// open: a server may open many blocks and close none, and a lookup that walked them all for
/// every delta would make the stream's cost grow with the square of its length. The index is
/// the server's, so it is hashed with the standard library's keyed hasher. Blocks left open
/// are drained in the order they opened.
pub(crate) struct OpenBlocks<T> {
    /// Each block opened since the last time none was open, closed ones emptied.
    slots: Vec<Option<T>>,
    /// The slot of each open block.
    at: HashMap<u64, usize>,
}

impl<T> Default for OpenBlocks<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            at: HashMap::new(),
        }
    }
}

impl<T> OpenBlocks<T> {
    /// Opens a block at `index`. A block still open at that index is closed first and
    /// returned: a new start at an index ends the block that was there.
    pub(crate) fn open(&mut self, index: u64, block: T) -> Option<T> {
        let previous = self.close(index);
        self.at.insert(index, self.slots.len());
        self.slots.push(Some(block));
        previous
    }

    /// The block open at `index`, if any.
    pub(crate) fn get_mut(&mut self, index: u64) -> Option<&mut T> {
        let slot = *self.at.get(&index)?;
        self.slots.get_mut(slot)?.as_mut()
    }

    /// Whether a block is open at `index`.
    pub(crate) fn is_open(&self, index: u64) -> bool {
        self.at.contains_key(&index)
    }

    /// Closes the block open at `index` and returns it.
    pub(crate) fn close(&mut self, index: u64) -> Option<T> {
        let slot = self.at.remove(&index)?;
        let block = self.slots.get_mut(slot)?.take();
        if self.at.is_empty() {
            // None open: the emptied slots go, so a stream's usual one block at a time keeps
            // this small.
            self.slots.clear();
        }
        block
    }

    /// Closes every block still open, in the order they opened.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + use<T> {
        self.at.clear();
        std::mem::take(&mut self.slots).into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_found_by_index_and_drained_in_the_order_they_opened() {
        let mut open = OpenBlocks::default();
        assert!(open.open(5, "five").is_none());
        assert!(open.open(2, "two").is_none());
        assert!(open.open(9, "nine").is_none());
        *open.get_mut(2).unwrap() = "two, longer";
        assert_eq!(open.close(9), Some("nine"));
        assert!(!open.is_open(9) && open.is_open(5));
        assert_eq!(open.close(9), None);
        assert_eq!(open.drain().collect::<Vec<_>>(), ["five", "two, longer"]);
        assert!(open.get_mut(5).is_none());
    }

    #[test]
    fn a_new_start_at_an_open_index_hands_back_the_block_there() {
        let mut open = OpenBlocks::default();
        open.open(0, "first");
        assert_eq!(open.open(0, "second"), Some("first"));
        assert_eq!(open.get_mut(0), Some(&mut "second"));
        assert_eq!(open.drain().collect::<Vec<_>>(), ["second"]);
    }

    #[test]
    fn closing_the_last_open_block_lets_the_slots_go() {
        let mut open = OpenBlocks::default();
        for i in 0..1000 {
            open.open(i, i);
            assert_eq!(open.close(i), Some(i));
        }
        assert!(open.slots.is_empty());
    }
}

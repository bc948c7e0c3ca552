//! The blocks a stream has open, by the index the provider gave each.

use std::collections::HashMap;

/// The blocks a stream has open (Anthropic's content blocks, Bedrock's `contentBlockIndex`,
/// Cohere's tool calls), by the index the provider gave each, in the order they opened.
///
/// Finding, updating and closing a block by its index take constant time however many are
/// open: a server may open many blocks and close none, and a lookup that walked them all for
/// every delta would make the stream's cost grow with the square of its length. The index is
/// the server's, so it is hashed with the standard library's keyed hasher. The block opened
/// last and the one opened first of those still open are found in constant time too (amortized
/// over the blocks opened). Blocks left open are drained in the order they opened.
pub(crate) struct OpenBlocks<T> {
    /// Each block opened since the last time none was open, with its index, closed ones
    /// emptied; the last slot, when there is one, holds an open block.
    slots: Vec<Option<(u64, T)>>,
    /// The slot of each open block.
    at: HashMap<u64, usize>,
    /// The first slot that may hold an open block: every slot before it is empty.
    first: usize,
}

impl<T> Default for OpenBlocks<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            at: HashMap::new(),
            first: 0,
        }
    }
}

impl<T> OpenBlocks<T> {
    /// Opens a block at `index`. A block still open at that index is closed first and
    /// returned: a new start at an index ends the block that was there.
    pub(crate) fn open(&mut self, index: u64, block: T) -> Option<T> {
        let previous = self.close(index);
        self.at.insert(index, self.slots.len());
        self.slots.push(Some((index, block)));
        previous
    }

    /// How many blocks are open.
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }

    /// The block open at `index`, if any.
    pub(crate) fn get_mut(&mut self, index: u64) -> Option<&mut T> {
        let slot = *self.at.get(&index)?;
        self.slots.get_mut(slot)?.as_mut().map(|(_, block)| block)
    }

    /// The block opened last of those still open, if any.
    pub(crate) fn last_mut(&mut self) -> Option<&mut T> {
        self.slots.last_mut()?.as_mut().map(|(_, block)| block)
    }

    /// Whether a block is open at `index`.
    pub(crate) fn is_open(&self, index: u64) -> bool {
        self.at.contains_key(&index)
    }

    /// Closes the block open at `index` and returns it.
    pub(crate) fn close(&mut self, index: u64) -> Option<T> {
        let slot = self.at.remove(&index)?;
        let block = self.slots.get_mut(slot)?.take();
        self.let_emptied_slots_go();
        block.map(|(_, block)| block)
    }

    /// Closes the block opened first of those still open and returns it.
    pub(crate) fn close_first(&mut self) -> Option<T> {
        while let Some(None) = self.slots.get(self.first) {
            self.first += 1;
        }
        let (index, block) = self.slots.get_mut(self.first)?.take()?;
        self.at.remove(&index);
        self.first += 1;
        self.let_emptied_slots_go();
        Some(block)
    }

    /// Closes every block still open, in the order they opened.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + use<T> {
        self.at.clear();
        self.first = 0;
        std::mem::take(&mut self.slots)
            .into_iter()
            .flatten()
            .map(|(_, block)| block)
    }

    /// Drops the emptied slots after the last open block, so that the last slot holds the
    /// block opened last; with none open, drops them all, so a stream's usual one block at a
    /// time keeps this small.
    fn let_emptied_slots_go(&mut self) {
        if self.at.is_empty() {
            self.slots.clear();
            self.first = 0;
            return;
        }
        while let Some(None) = self.slots.last() {
            self.slots.pop();
        }
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

    #[test]
    fn the_last_open_block_is_the_one_opened_last_of_those_still_open() {
        let mut open = OpenBlocks::default();
        assert!(open.last_mut().is_none());
        open.open(1, "one");
        open.open(2, "two");
        open.open(3, "three");
        assert_eq!(open.len(), 3);
        assert_eq!(open.last_mut(), Some(&mut "three"));
        open.close(3);
        assert_eq!(open.last_mut(), Some(&mut "two"));
        open.close(1);
        assert_eq!(open.last_mut(), Some(&mut "two"));
        assert_eq!(open.len(), 1);
        open.close(2);
        assert!(open.last_mut().is_none());
        assert_eq!(open.len(), 0);
    }

    #[test]
    fn close_first_closes_the_oldest_still_open() {
        let mut open = OpenBlocks::default();
        assert_eq!(open.close_first(), None);
        open.open(7, "seven");
        open.open(3, "three");
        open.open(5, "five");
        assert_eq!(open.close(7), Some("seven"));
        assert_eq!(open.close_first(), Some("three"));
        assert!(!open.is_open(3));
        open.open(1, "one");
        assert_eq!(open.close_first(), Some("five"));
        assert_eq!(open.last_mut(), Some(&mut "one"));
        assert_eq!(open.close_first(), Some("one"));
        assert_eq!(open.close_first(), None);
        assert!(open.slots.is_empty());
    }

    #[test]
    fn many_blocks_closed_in_reverse_order_leave_the_rest_in_order() {
        let mut open = OpenBlocks::default();
        for i in 0..5000 {
            open.open(i, i);
        }
        for i in (2500..5000).rev() {
            assert_eq!(open.last_mut().copied(), Some(i));
            assert_eq!(open.close(i), Some(i));
            // Emptied trailing slots go as they are closed.
            assert_eq!(open.slots.len(), i as usize);
        }
        assert_eq!(open.len(), 2500);
        for i in 0..1000 {
            assert_eq!(open.close_first(), Some(i));
        }
        assert_eq!(open.last_mut(), Some(&mut 2499));
        assert_eq!(
            open.drain().collect::<Vec<_>>(),
            (1000..2500).collect::<Vec<_>>()
        );
        assert_eq!(open.len(), 0);
    }
}

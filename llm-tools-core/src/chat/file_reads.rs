//! [`FileReads`]: what the model last read of each file of a chat's file store, so the file
//! tools can refuse to overwrite a file the model has not seen as it is.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What the model last read (or wrote) of each file, by name, as a digest; shared by a chat
/// with the calls of its file tools during a settle, and copied into the chat's state.
#[derive(Clone, Default)]
pub(crate) struct FileReads(Arc<Mutex<ReadsInner>>);

#[derive(Default)]
struct ReadsInner {
    digests: BTreeMap<String, String>,
    changed: bool,
}

impl FileReads {
    fn inner(&self) -> std::sync::MutexGuard<'_, ReadsInner> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts from the chat's saved memory.
    pub(crate) fn reset(&self, from: &BTreeMap<String, String>) {
        let mut inner = self.inner();
        inner.digests.clone_from(from);
        inner.changed = false;
    }

    pub(super) fn get(&self, name: &str) -> Option<String> {
        self.inner().digests.get(name).cloned()
    }

    pub(super) fn set(&self, name: &str, digest: String) {
        let mut inner = self.inner();
        if inner.digests.get(name) != Some(&digest) {
            inner.digests.insert(name.to_owned(), digest);
            inner.changed = true;
        }
    }

    /// The memory, when it changed since the last reset or take.
    pub(crate) fn take_changed(&self) -> Option<BTreeMap<String, String>> {
        let mut inner = self.inner();
        std::mem::take(&mut inner.changed).then(|| inner.digests.clone())
    }
}

//! [`FileStore`]: where a chat keeps files its tools save, reached from a call's
//! [`ToolContext::files`](crate::ToolContext::files).
//!
//! Two stores come with the crate: [`MemoryFileStore`] (the files live as long as the store) and
//! [`FolderFileStore`] (one file per name under a folder). A store is attached to a chat with
//! [`Chat::with_file_store`](crate::Chat::with_file_store); like the tools, it is not part of
//! the chat's saved state, so attach it again to a restored chat.
//!
//! ```
//! use std::sync::Arc;
//! use llm_tools_core::{tool, Chat, ToolContext, ToolError};
//! use llm_tools_core::files::{FileStore, MemoryFileStore};
//! use llm_tools_core::testing::ScriptedProvider;
//!
//! /// Writes a report and tells where it is
//! #[tool]
//! async fn write_report(title: String, ctx: &ToolContext) -> Result<String, ToolError> {
//!     let Some(files) = ctx.files() else {
//!         return Err(ToolError::recoverable("this chat keeps no files"));
//!     };
//!     let name = files.save(&format!("reports/{title}.md"), b"# Q3".to_vec()).await?;
//!     Ok(format!("saved as {name}"))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new()
//!     .then_call("write_report", serde_json::json!({"title": "q3"}))
//!     .then_text("Saved.");
//! let store = Arc::new(MemoryFileStore::new());
//! let mut chat = Chat::new(model);
//! chat.with_shared_file_store(store.clone()).with_tools(WriteReport)?;
//! let answer = chat.ask("Write the Q3 report").await?;
//! assert_eq!(answer.text().as_deref(), Some("Saved."));
//! assert_eq!(store.load("reports/q3.md").await?, b"# Q3");
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::BoxFuture;

/// Where a chat keeps files. Names are relative paths with `/` between parts (`reports/q3.md`);
/// an absolute name, an empty part, `.` or `..` is an [`io::ErrorKind::InvalidInput`] error.
///
/// Errors are [`io::Error`]s, so a tool can use `?` on them; like any I/O error, that makes
/// the failure fatal for the turn (see [`ToolError`](crate::ToolError)).
pub trait FileStore: Send + Sync + 'static {
    /// Saves `bytes` under `name`, replacing any file of that name, and returns the name to
    /// read it back with.
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>>;

    /// The bytes saved under `name`; [`io::ErrorKind::NotFound`] when there are none.
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>>;

    /// The names of every file, sorted.
    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>>;
}

/// Checks a file name: relative, parts separated by `/`, no empty, `.` or `..` part.
pub(crate) fn checked_name(name: &str) -> io::Result<&str> {
    let invalid = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || name
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if invalid {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "invalid file name {name:?}: use a relative path with `/` between its parts, \
                 without empty, `.` or `..` parts"
            ),
        ));
    }
    Ok(name)
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file named {name:?}"))
}

/// Files kept in memory, as long as the store lives (clones share the files).
#[derive(Clone, Debug, Default)]
pub struct MemoryFileStore {
    files: Arc<Mutex<BTreeMap<String, Arc<[u8]>>>>,
}

impl MemoryFileStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn files(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<[u8]>>> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl FileStore for MemoryFileStore {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        Box::pin(async move {
            let name = checked_name(name)?.to_owned();
            self.files().insert(name.clone(), bytes.into());
            Ok(name)
        })
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move {
            let name = checked_name(name)?;
            self.files()
                .get(name)
                .map(|bytes| bytes.to_vec())
                .ok_or_else(|| not_found(name))
        })
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        Box::pin(async move { Ok(self.files().keys().cloned().collect()) })
    }
}

/// Files kept under a folder, one file per name (`reports/q3.md` is `{folder}/reports/q3.md`);
/// the folder and any sub-folders are created when a file is first saved. The blocking file
/// system calls run on tokio's blocking pool.
#[derive(Clone, Debug)]
pub struct FolderFileStore {
    root: PathBuf,
}

impl FolderFileStore {
    /// A store under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The folder the files are in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        Ok(self.root.join(checked_name(name)?))
    }
}

/// Runs blocking file-system work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| io::Error::other(format!("the file-system task failed: {e}")))?
}

impl FileStore for FolderFileStore {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        Box::pin(async move {
            let path = self.path(name)?;
            blocking(move || {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, bytes)
            })
            .await?;
            Ok(name.to_owned())
        })
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move {
            let path = self.path(name)?;
            let owned = name.to_owned();
            blocking(move || match std::fs::read(&path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(not_found(&owned)),
                other => other,
            })
            .await
        })
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        let root = self.root.clone();
        Box::pin(blocking(move || {
            let mut names = Vec::new();
            if root.is_dir() {
                collect(&root, &root, &mut names)?;
            }
            names.sort();
            Ok(names)
        }))
    }
}

/// Every file under `dir`, named relative to `root` with `/` between parts.
fn collect(root: &Path, dir: &Path, names: &mut Vec<String>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, names)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let parts: Vec<String> = relative
                .components()
                .filter_map(|c| match c {
                    Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect();
            names.push(parts.join("/"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn round_trip(store: &dyn FileStore) {
        assert_eq!(
            store.save("reports/q3.md", b"# Q3".to_vec()).await.unwrap(),
            "reports/q3.md"
        );
        store.save("a.txt", b"first".to_vec()).await.unwrap();
        store.save("a.txt", b"second".to_vec()).await.unwrap();
        assert_eq!(store.load("reports/q3.md").await.unwrap(), b"# Q3");
        assert_eq!(store.load("a.txt").await.unwrap(), b"second");
        assert_eq!(store.list().await.unwrap(), ["a.txt", "reports/q3.md"]);
        let missing = store.load("nope.txt").await.unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert!(missing.to_string().contains("nope.txt"));
        for bad in [
            "",
            "/etc/passwd",
            "../up.txt",
            "a/../../b",
            "a//b",
            "./a",
            "a\\b",
        ] {
            let e = store.save(bad, Vec::new()).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
            let e = store.load(bad).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn memory_store_saves_loads_lists_and_refuses_bad_names() {
        let store = MemoryFileStore::new();
        round_trip(&store).await;
        // Clones share the files.
        assert_eq!(store.clone().load("a.txt").await.unwrap(), b"second");
    }

    #[tokio::test]
    async fn folder_store_saves_loads_lists_and_refuses_bad_names() {
        let dir = std::env::temp_dir().join(format!(
            "llm-tools-files-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let store = FolderFileStore::new(dir.join("store"));
        assert_eq!(store.list().await.unwrap(), Vec::<String>::new());
        round_trip(&store).await;
        assert_eq!(
            std::fs::read(dir.join("store/reports/q3.md")).unwrap(),
            b"# Q3"
        );
        assert!(!dir.join("up.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

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
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::BoxFuture;

/// The largest file the crate's stores save or load unless told otherwise: 64 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// Where a chat keeps files. Names are relative paths with `/` between parts (`reports/q3.md`);
/// an absolute name, an empty part, `.`, `..`, a part starting with `.` (a hidden file or
/// folder), a backslash or a control character is an [`io::ErrorKind::InvalidInput`] error.
/// [`checked_name`] applies these rules for stores of your own.
///
/// Errors are [`io::Error`]s, so a tool can use `?` on them; like any I/O error, that makes
/// the failure fatal for the turn (see [`ToolError`](crate::ToolError)). The chat's file tools
/// tell the model of the errors that are its own to fix (a missing file, a bad name, a file too
/// large, a link) instead.
pub trait FileStore: Send + Sync + 'static {
    /// Saves `bytes` under `name`, replacing any file of that name, and returns the name to
    /// read it back with.
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>>;

    /// The bytes saved under `name`; [`io::ErrorKind::NotFound`] when there are none.
    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>>;

    /// The names of every file, sorted.
    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>>;
}

/// Checks a file name against the rules of [`FileStore`]: relative, parts separated by `/`, no
/// empty, `.`, `..` or hidden (dot) part, no backslash or control character.
///
/// ```
/// use llm_tools_core::files::checked_name;
///
/// assert!(checked_name("reports/q3.md").is_ok());
/// for bad in ["/etc/passwd", "../up", "a//b", ".env", "a/.git/config", "a\\b"] {
///     assert_eq!(checked_name(bad).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
/// }
/// ```
pub fn checked_name(name: &str) -> io::Result<&str> {
    let invalid = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.chars().any(char::is_control)
        || name
            .split('/')
            .any(|part| part.is_empty() || part.starts_with('.'));
    if invalid {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "invalid file name {name:?}: use a relative path with `/` between its parts, \
                 without empty, `.` or `..` parts, hidden (dot) parts, backslashes or control \
                 characters"
            ),
        ));
    }
    Ok(name)
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file named {name:?}"))
}

fn too_large(name: &str, size: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "the file {name:?} has {size} bytes; this store keeps files of at most {max} bytes"
        ),
    )
}

/// Files kept in memory, as long as the store lives (clones share the files).
#[derive(Clone, Debug)]
pub struct MemoryFileStore {
    files: Arc<Mutex<BTreeMap<String, Arc<[u8]>>>>,
    max_file_size: u64,
}

impl Default for MemoryFileStore {
    fn default() -> Self {
        Self {
            files: Arc::default(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }
}

impl MemoryFileStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Refuses to save a file larger than `bytes` ([`DEFAULT_MAX_FILE_SIZE`] unless set).
    #[must_use]
    pub fn with_max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
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
            let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
            if size > self.max_file_size {
                return Err(too_large(&name, size, self.max_file_size));
            }
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

/// Files kept under a folder, one file per name (`reports/q3.md` is `{folder}/reports/q3.md`).
///
/// The folder is created and resolved to its canonical path once, on first use; every name is
/// then looked up part by part under it, and the store never follows a symbolic link: a name
/// that reaches one (as a folder on the way or as the file itself) is refused with an
/// [`io::ErrorKind::InvalidInput`] error, and [`list`](FileStore::list) leaves links out. Hidden
/// files and folders (names starting with `.`) are neither listed nor reachable. Files larger
/// than [`with_max_file_size`](Self::with_max_file_size) are neither saved nor loaded. The
/// blocking file-system calls run on tokio's blocking pool.
///
/// These rules bound what a name the model chooses can reach; they are not a sandbox against
/// another program that changes the folder while the store works in it.
#[derive(Clone, Debug)]
pub struct FolderFileStore {
    root: PathBuf,
    resolved: Arc<OnceLock<PathBuf>>,
    max_file_size: u64,
}

impl FolderFileStore {
    /// A store under `root` (created on first use when missing).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            resolved: Arc::default(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }

    /// Refuses to save or load a file larger than `bytes` ([`DEFAULT_MAX_FILE_SIZE`] unless
    /// set).
    #[must_use]
    pub fn with_max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// The folder the files are in, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder, created if missing and resolved to its canonical path the first time.
    async fn resolved_root(&self) -> io::Result<PathBuf> {
        if let Some(root) = self.resolved.get() {
            return Ok(root.clone());
        }
        let root = self.root.clone();
        let resolved = blocking(move || {
            std::fs::create_dir_all(&root)?;
            std::fs::canonicalize(&root)
        })
        .await?;
        Ok(self.resolved.get_or_init(|| resolved).clone())
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

fn link_refused(name: &str, path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{name:?} reaches a symbolic link ({}); the store does not follow links",
            path.display()
        ),
    )
}

/// The path of `name` under `root`, walked part by part without following a link; folders on
/// the way are created when `create` is set. The last part is checked by the caller.
fn folder_path(root: &Path, name: &str, create: bool) -> io::Result<PathBuf> {
    let mut parts = name.split('/').peekable();
    let mut path = root.to_path_buf();
    while let Some(part) = parts.next() {
        path.push(part);
        if parts.peek().is_none() {
            break;
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(link_refused(name, &path)),
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("{name:?}: {part:?} is a file, not a folder"),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                match std::fs::create_dir(&path) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                    _ => {}
                }
                // Made here, or by someone else at the same moment: check again.
                let meta = std::fs::symlink_metadata(&path)?;
                if !meta.is_dir() || meta.file_type().is_symlink() {
                    return Err(link_refused(name, &path));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found(name)),
            Err(e) => return Err(e),
        }
    }
    Ok(path)
}

/// Opens the last part of a path without following a link (`O_NOFOLLOW` on Unix; elsewhere
/// the check before opening stands alone).
fn open_no_follow(path: &Path, options: &mut std::fs::OpenOptions) -> io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Refuses a link or a folder as the last part of `name`.
fn check_last(name: &str, path: &Path) -> io::Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(link_refused(name, path)),
        Ok(meta) if meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{name:?} is a folder, not a file"),
        )),
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl FileStore for FolderFileStore {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        Box::pin(async move {
            let owned = checked_name(name)?.to_owned();
            let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
            if size > self.max_file_size {
                return Err(too_large(name, size, self.max_file_size));
            }
            let root = self.resolved_root().await?;
            blocking(move || {
                use std::io::Write as _;
                let path = folder_path(&root, &owned, true)?;
                check_last(&owned, &path)?;
                let mut file = open_no_follow(
                    &path,
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true),
                )
                .map_err(|e| refused_link_or(e, &owned, &path))?;
                file.write_all(&bytes)
            })
            .await?;
            Ok(name.to_owned())
        })
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move {
            let owned = checked_name(name)?.to_owned();
            let root = self.resolved_root().await?;
            let max = self.max_file_size;
            blocking(move || {
                use std::io::Read as _;
                let path = folder_path(&root, &owned, false)?;
                let Some(meta) = check_last(&owned, &path)? else {
                    return Err(not_found(&owned));
                };
                if meta.len() > max {
                    return Err(too_large(&owned, meta.len(), max));
                }
                let file = open_no_follow(&path, std::fs::OpenOptions::new().read(true))
                    .map_err(|e| refused_link_or(e, &owned, &path))?;
                let mut bytes = Vec::new();
                // Bounded even when the file grew since it was measured.
                file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
                let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                if read > max {
                    return Err(too_large(&owned, read, max));
                }
                Ok(bytes)
            })
            .await
        })
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        Box::pin(async move {
            let root = self.resolved_root().await?;
            blocking(move || {
                let mut names = Vec::new();
                collect(&root, "", &mut names)?;
                names.sort();
                Ok(names)
            })
            .await
        })
    }
}

/// A failed open of a path checked a moment ago: `ELOOP` means the last part became a link.
fn refused_link_or(e: io::Error, name: &str, path: &Path) -> io::Error {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return link_refused(name, path);
    }
    let _ = (name, path);
    e
}

/// Every file under `dir` (`prefix` its name so far), leaving out links, hidden entries and
/// names that are not UTF-8 (no name could reach them).
fn collect(dir: &Path, prefix: &str, names: &mut Vec<String>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Ok(part) = entry.file_name().into_string() else {
            continue;
        };
        let name = if prefix.is_empty() {
            part
        } else {
            format!("{prefix}/{part}")
        };
        if checked_name(&name).is_err() {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect(&entry.path(), &name, names)?;
        } else if kind.is_file() {
            names.push(name);
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
            ".env",
            "a/.git/config",
            "..",
            "a\nb",
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

    fn temp_dir(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("llm-tools-files-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn folder_store_never_follows_a_symbolic_link() {
        use std::os::unix::fs::symlink;
        let dir = temp_dir("links");
        let outside = dir.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), b"secret").unwrap();
        let root = dir.join("store");
        std::fs::create_dir_all(&root).unwrap();
        symlink(&outside, root.join("leak")).unwrap();
        symlink(outside.join("secret.txt"), root.join("secret.txt")).unwrap();
        symlink(dir.join("missing.txt"), root.join("dangling.txt")).unwrap();
        let store = FolderFileStore::new(&root);
        store.save("kept.txt", b"ok".to_vec()).await.unwrap();

        for name in ["leak/secret.txt", "secret.txt", "dangling.txt"] {
            let e = store.load(name).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}: {e}");
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        for name in [
            "leak/new.txt",
            "secret.txt",
            "dangling.txt",
            "leak/deeper/new.txt",
        ] {
            let e = store.save(name, b"written".to_vec()).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}: {e}");
        }
        assert_eq!(
            std::fs::read(outside.join("secret.txt")).unwrap(),
            b"secret"
        );
        assert!(!outside.join("new.txt").exists());
        assert!(!outside.join("deeper").exists());
        assert!(!dir.join("missing.txt").exists());
        assert_eq!(store.list().await.unwrap(), ["kept.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn folder_store_resolves_its_root_once() {
        use std::os::unix::fs::symlink;
        let dir = temp_dir("root");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::fs::create_dir_all(dir.join("other")).unwrap();
        symlink(dir.join("real"), dir.join("root")).unwrap();
        let store = FolderFileStore::new(dir.join("root"));
        store.save("a.txt", b"first".to_vec()).await.unwrap();
        // The root's link now points elsewhere: the store keeps the folder it resolved.
        std::fs::remove_file(dir.join("root")).unwrap();
        symlink(dir.join("other"), dir.join("root")).unwrap();
        store.save("b.txt", b"second".to_vec()).await.unwrap();
        assert!(dir.join("real/b.txt").exists());
        assert!(!dir.join("other/b.txt").exists());
        assert_eq!(store.list().await.unwrap(), ["a.txt", "b.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn folder_store_hides_and_refuses_dot_files() {
        let dir = temp_dir("dots");
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".env"), b"KEY=1").unwrap();
        std::fs::write(dir.join(".git/config"), b"[core]").unwrap();
        std::fs::create_dir_all(dir.join("docs/.cache")).unwrap();
        std::fs::write(dir.join("docs/.cache/x"), b"x").unwrap();
        std::fs::write(dir.join("docs/readme.md"), b"hi").unwrap();
        let store = FolderFileStore::new(&dir);
        assert_eq!(store.list().await.unwrap(), ["docs/readme.md"]);
        for name in [".env", ".git/config", "docs/.cache/x"] {
            let e = store.load(name).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}");
            let e = store.save(name, Vec::new()).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}");
        }
        assert_eq!(std::fs::read(dir.join(".env")).unwrap(), b"KEY=1");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn stores_cap_file_sizes() {
        let dir = temp_dir("sizes");
        let folder = FolderFileStore::new(&dir).with_max_file_size(10);
        let memory = MemoryFileStore::new().with_max_file_size(10);
        for store in [&folder as &dyn FileStore, &memory] {
            store.save("ten.txt", vec![b'a'; 10]).await.unwrap();
            let e = store.save("eleven.txt", vec![b'a'; 11]).await.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
            assert!(e.to_string().contains("at most 10 bytes"), "{e}");
        }
        // A file put in the folder by someone else is not loaded past the cap either.
        std::fs::write(dir.join("big.txt"), vec![b'a'; 20]).unwrap();
        let e = folder.load("big.txt").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(folder.load("ten.txt").await.unwrap().len(), 10);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn folder_store_names_a_file_in_the_way_of_a_folder() {
        let dir = temp_dir("in-the-way");
        let store = FolderFileStore::new(&dir);
        store.save("a", b"file".to_vec()).await.unwrap();
        let e = store.save("a/b.txt", Vec::new()).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotADirectory);
        let e = store.load("a/b.txt").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotADirectory);
        store.save("d/x.txt", Vec::new()).await.unwrap();
        let e = store.load("d").await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::IsADirectory);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

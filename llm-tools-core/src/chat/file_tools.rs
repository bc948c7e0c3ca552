//! The file tools a chat with a file store offers the model: [`LIST_FILES_NAME`],
//! [`READ_FILE_NAME`] and [`SEARCH_FILE_NAME`], over the files its tools saved and the long
//! results it kept (see [`crate::files`]). A tool of the chat's own with one of these names
//! takes its place.

use std::sync::{Arc, OnceLock};

use serde_json::json;

use crate::files::FileStore;
use crate::{BoxFuture, RawArgs, Tool, ToolContext, ToolError, ToolOutcome, ToolOutput, ToolSpec};

/// The name of the tool that lists the chat's files.
pub const LIST_FILES_NAME: &str = "list_files";
/// The name of the tool that reads a slice of one file.
pub const READ_FILE_NAME: &str = "read_file";
/// The name of the tool that finds the lines of one file containing some text.
pub const SEARCH_FILE_NAME: &str = "search_file";

/// The most characters one `read_file` returns.
pub const MAX_READ: usize = 10_000;
/// The most lines one `search_file` returns.
pub const MAX_MATCHES: usize = 50;
/// The most characters of one line `search_file` shows.
const MAX_LINE: usize = 300;

#[derive(Clone, Copy)]
enum Kind {
    List,
    Read,
    Search,
}

struct FileTool {
    kind: Kind,
    spec: ToolSpec,
}

/// The three file tools, built once per process.
pub(crate) fn file_tools() -> &'static [Arc<dyn Tool>] {
    static TOOLS: OnceLock<Vec<Arc<dyn Tool>>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let name = json!({"type": "string", "description": "The file's name, as listed or as given in a result"});
        vec![
            Arc::new(FileTool {
                kind: Kind::List,
                spec: ToolSpec::new(
                    LIST_FILES_NAME,
                    "Lists the files of this chat: long tool results kept as files and files tools saved.",
                ),
            }),
            Arc::new(FileTool {
                kind: Kind::Read,
                spec: ToolSpec::new(
                    READ_FILE_NAME,
                    "Reads part of a file of this chat, by character offset.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "name": name,
                        "offset": {"type": "integer", "minimum": 0, "description": "The first character to read (default 0)"},
                        "length": {"type": "integer", "minimum": 1, "description": "How many characters to read (default and most: 10000)"}
                    },
                    "required": ["name"]
                })),
            }),
            Arc::new(FileTool {
                kind: Kind::Search,
                spec: ToolSpec::new(
                    SEARCH_FILE_NAME,
                    "Finds the lines of a file of this chat that contain some text (ignoring case), with their line numbers.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "name": name,
                        "text": {"type": "string", "description": "The text to look for"}
                    },
                    "required": ["name", "text"]
                })),
            }),
        ]
    })
}

impl Tool for FileTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Some(files) = ctx.files() else {
                return ToolOutcome::error("this chat keeps no files");
            };
            let result = match self.kind {
                Kind::List => list(files).await,
                Kind::Read => read(files, args).await,
                Kind::Search => search(files, args).await,
            };
            match result {
                Ok(text) => ToolOutcome::Output(ToolOutput::text(text)),
                Err(e) => ToolOutcome::Error(e),
            }
        })
    }
}

/// A store error the model can act on: a missing file or a bad name is its mistake; anything
/// else is the store's failure and stops the turn.
fn store_error(e: std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidInput => {
            ToolError::recoverable(format!("{e}; `{LIST_FILES_NAME}` lists the files"))
        }
        _ => ToolError::fatal(e),
    }
}

async fn list(files: &dyn FileStore) -> Result<String, ToolError> {
    let names = files.list().await.map_err(store_error)?;
    if names.is_empty() {
        return Ok("This chat has no files.".to_owned());
    }
    Ok(names.join("\n"))
}

async fn load(files: &dyn FileStore, name: &str) -> Result<String, ToolError> {
    let bytes = files.load(name).await.map_err(store_error)?;
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

async fn read(files: &dyn FileStore, args: RawArgs<'_>) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        name: String,
        #[serde(default)]
        offset: usize,
        length: Option<usize>,
    }
    let args: Args = args.decode(&["name", "offset", "length"])?;
    let text = load(files, &args.name).await?;
    let total = text.chars().count();
    let length = args.length.unwrap_or(MAX_READ).clamp(1, MAX_READ);
    if args.offset >= total && total > 0 {
        return Err(ToolError::recoverable(format!(
            "`{}` has {total} characters; offset {} is past its end",
            args.name, args.offset
        )));
    }
    let slice: String = text.chars().skip(args.offset).take(length).collect();
    let end = args.offset + slice.chars().count();
    if end < total {
        Ok(format!(
            "{slice}\n[characters {}–{end} of {total}; read on from offset {end}]",
            args.offset
        ))
    } else {
        Ok(slice)
    }
}

async fn search(files: &dyn FileStore, args: RawArgs<'_>) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        name: String,
        text: String,
    }
    let args: Args = args.decode(&["name", "text"])?;
    if args.text.is_empty() {
        return Err(ToolError::recoverable(
            "`text` is empty: give the text to look for",
        ));
    }
    let content = load(files, &args.name).await?;
    let needle = args.text.to_lowercase();
    let mut found = Vec::new();
    let mut more = 0usize;
    for (number, line) in content.lines().enumerate() {
        if !line.to_lowercase().contains(&needle) {
            continue;
        }
        if found.len() == MAX_MATCHES {
            more += 1;
            continue;
        }
        let shown: String = line.chars().take(MAX_LINE).collect();
        let cut = if shown.len() < line.len() { "…" } else { "" };
        found.push(format!("line {}: {shown}{cut}", number + 1));
    }
    if found.is_empty() {
        return Ok(format!(
            "No line of `{}` contains \"{}\".",
            args.name, args.text
        ));
    }
    let mut out = found.join("\n");
    if more > 0 {
        out.push_str(&format!(
            "\n[{more} more lines match; search for longer text to narrow it]"
        ));
    }
    Ok(out)
}

//! The command line the clients share: `--url URL [--conversations N] [--warmup N] [--stream]`.

/// A client's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientArgs {
    /// The mock server's base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Timed conversations.
    pub conversations: u64,
    /// Conversations run before timing starts.
    pub warmup: u64,
    /// Whether to stream the answers.
    pub stream: bool,
}

impl ClientArgs {
    /// Reads the settings from the process's arguments.
    pub fn from_env() -> Result<Self, String> {
        Self::parse(std::env::args().skip(1))
    }

    /// Reads the settings from `args`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut out = ClientArgs {
            url: String::new(),
            conversations: 200,
            warmup: 20,
            stream: false,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value =
                |name: &str| args.next().ok_or_else(|| format!("`{name}` needs a value"));
            match arg.as_str() {
                "--url" => out.url = value("--url")?,
                "--conversations" => out.conversations = number(&value("--conversations")?)?,
                "--warmup" => out.warmup = number(&value("--warmup")?)?,
                "--stream" => out.stream = true,
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        if out.url.is_empty() {
            return Err("`--url http://127.0.0.1:PORT` (the mock server) is required".into());
        }
        out.url = out.url.trim_end_matches('/').to_owned();
        Ok(out)
    }
}

fn number(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not a whole number"))
}

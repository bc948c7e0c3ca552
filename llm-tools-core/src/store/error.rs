//! What goes wrong in a store ([`StoreError`]), and why a TLS connection was refused.

/// Why a TLS connection to the database was refused ([`StoreError::Tls`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The server's certificate is not signed by a trusted root (the CA file given, or the
    /// system's roots).
    #[error("the server's certificate is not signed by a trusted root")]
    UnknownIssuer,
    /// The server's certificate does not name the host connected to (`verify-full`).
    #[error("the server's certificate does not name the host connected to")]
    WrongHost,
    /// The server's certificate has expired or is not valid yet.
    #[error("the server's certificate has expired or is not valid yet")]
    Expired,
    /// The server has no TLS, and the `sslmode` requires it.
    #[error("the server does not offer TLS")]
    NotOffered,
    /// The TLS settings cannot be used: a CA file, client certificate or key that does not
    /// read, an unknown `sslmode`, no trusted root to check against.
    #[error("the TLS settings cannot be used")]
    Settings,
    /// Any other failure of the handshake (the server refused the client certificate, say).
    #[error("the TLS handshake failed")]
    Handshake,
}

/// What went wrong in a store. Each names what and where; none loses what is stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No chat has this id.
    #[error("no stored chat has the id `{chat_id}`")]
    NotFound {
        /// The id asked for.
        chat_id: String,
    },

    /// A chat with this id exists already.
    #[error("a stored chat has the id `{chat_id}` already; load it instead")]
    AlreadyExists {
        /// The id.
        chat_id: String,
    },

    /// A conditional write was refused: another holder took the chat's run claim, or a call's
    /// claim, since this writer saw it. Nothing of the commit was written; load the chat again.
    #[error("chat `{chat_id}`: {what}; nothing was written (load the chat again)")]
    Stale {
        /// The chat.
        chat_id: String,
        /// Which condition failed.
        what: String,
    },

    /// The file is not a database, or is damaged.
    #[error("{location} is not a readable database: {message}")]
    Corrupt {
        /// The file.
        location: String,
        /// What the database engine said.
        message: String,
    },

    /// The database holds tables of that name that this library did not make.
    #[error("{location} has tables named like this library's that it did not make: {message}")]
    Foreign {
        /// The file or schema.
        location: String,
        /// What was found.
        message: String,
    },

    /// The database was written by a newer version of this library.
    #[error(
        "{location} has schema version {found}, newer than this library's {supported}; upgrade llm-tools"
    )]
    NewerSchema {
        /// The file or schema.
        location: String,
        /// The version found.
        found: u32,
        /// The newest version this library knows.
        supported: u32,
    },

    /// The database's tables are of an older schema version than this library's, and the
    /// store was told not to migrate them (`without_migrations`): migrate them first.
    #[error(
        "{location} has schema version {found}, older than this library's {expected}; migrate it first (PostgresStore::migrate)"
    )]
    OlderSchema {
        /// The schema.
        location: String,
        /// The version found (0: no tables).
        found: u32,
        /// The version this library works with.
        expected: u32,
    },

    /// The database stayed locked by another connection for longer than the store waits.
    #[error("{location} stayed locked by another connection: {message}")]
    Locked {
        /// The file.
        location: String,
        /// What the database engine said.
        message: String,
    },

    /// A TLS connection to the database could not be made, or its settings could not be used.
    #[error("{location}: TLS: {failure}: {message}")]
    Tls {
        /// The server.
        location: String,
        /// What refused the connection.
        failure: TlsFailure,
        /// The cause, as the TLS library or the server said it.
        message: String,
    },

    /// A statement ran past the server-side time limit the store sets on each connection
    /// (PostgreSQL's `statement_timeout`). Nothing of that transaction was written; the
    /// operation can be tried again.
    #[error("{location}: the statement ran past {limit} and was cancelled: {message}")]
    TimedOut {
        /// The server.
        location: String,
        /// Which limit: `statement_timeout`.
        limit: &'static str,
        /// What the database said.
        message: String,
    },

    /// A stored value could not be read back.
    #[error("chat `{chat_id}`: the stored {what} could not be read: {source}")]
    Decode {
        /// The chat.
        chat_id: String,
        /// Which value: `meta`, `message 3`, `call call_1`.
        what: String,
        /// What was wrong with it.
        #[source]
        source: serde_json::Error,
    },

    /// Any other failure of the database or of the store's I/O.
    #[error("{location}: {message}")]
    Backend {
        /// The file or server.
        location: String,
        /// What went wrong.
        message: String,
    },
}

impl StoreError {
    /// Whether the error is a refused conditional write (another holder took a claim over).
    pub fn is_stale(&self) -> bool {
        matches!(self, StoreError::Stale { .. })
    }

    /// Whether trying the same operation again can succeed without changing anything: a lock
    /// held too long by another connection ([`Locked`](Self::Locked)) or a statement past its
    /// time limit ([`TimedOut`](Self::TimedOut)). Nothing of the failed operation was written.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Locked { .. } | StoreError::TimedOut { .. }
        )
    }
}

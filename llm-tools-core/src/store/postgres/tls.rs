//! TLS to PostgreSQL with rustls (no OpenSSL): the `sslmode`, `sslrootcert`, `sslcert` and
//! `sslkey` settings of a connection string or of [`PostgresOptions`](super::PostgresOptions),
//! the roots a server's certificate is checked against, and a client certificate.
//!
//! tokio-postgres itself knows `disable`, `prefer` and `require` and implements them given a TLS
//! connector (`prefer` falls back to plain text only when the server answers that it has no
//! TLS; a failed handshake is an error); the checks of `verify-ca` and `verify-full` are the
//! certificate verifier's, built here.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::store::error::{StoreError, TlsFailure};

/// Whether and how the store uses TLS: libpq's `sslmode`, from a connection string
/// (`?sslmode=verify-full`, `sslmode=require`) or
/// [`PostgresOptions::with_ssl_mode`](super::PostgresOptions::with_ssl_mode).
///
/// | mode | encrypted | the server's certificate |
/// |---|---|---|
/// | `disable` | never | — |
/// | `prefer` | when the server offers TLS; plain text when it answers it has none, unless a CA is given (then always, as `require`) | not checked, unless a CA is given (then as `verify-ca`) |
/// | `require` | always (no TLS: an error) | not checked, unless a CA is given (then as `verify-ca`) |
/// | `verify-ca` | always | signed by a trusted root |
/// | `verify-full` | always | signed by a trusted root, and naming the host connected to |
///
/// **The default** depends on where the store connects: `verify-full` when any host is
/// reached over the network, `prefer` when every host is on this machine (`localhost`, a
/// loopback address or a Unix socket), where no one is on the path. A server elsewhere with a
/// certificate of its own CA needs that CA (`sslrootcert=…`); `sslmode=require` or `prefer`
/// turns the check off, as a decision made in the connection string.
///
/// The trusted roots are the CA file (`sslrootcert`, or
/// [`with_root_certificate_file`](super::PostgresOptions::with_root_certificate_file)) when one
/// is given, otherwise the system's. `sslrootcert=system` asks for the system's roots
/// explicitly and, as in libpq, makes `verify-full` the mode: a weaker one with it is an
/// error. Only `verify-full` stops an attacker on the path who can present a certificate of
/// their own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SslMode {
    /// Plain text only.
    Disable,
    /// TLS when the server offers it, unverified unless a CA is given (then TLS always,
    /// verified as `verify-ca`). The default for a store on this machine.
    #[default]
    Prefer,
    /// TLS always, unverified unless a CA is given.
    Require,
    /// TLS always; the certificate is signed by a trusted root (any host name).
    VerifyCa,
    /// TLS always; the certificate is signed by a trusted root and names the host. The default
    /// for a store reached over the network.
    VerifyFull,
}

impl SslMode {
    /// The mode of an `sslmode` value (`disable`, `prefer`, `require`, `verify-ca`,
    /// `verify-full`); `None` for another.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    /// The `sslmode` value of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// tokio-postgres's mode: it does the negotiation, the verifier does the checks.
    pub(super) fn negotiation(self) -> tokio_postgres::config::SslMode {
        match self {
            Self::Disable => tokio_postgres::config::SslMode::Disable,
            Self::Prefer => tokio_postgres::config::SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// PEM text: a file read when the store connects, or bytes given in code. `Debug` shows a
/// file's path and only the length of bytes (they can be a private key).
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Pem {
    File(PathBuf),
    Bytes(Arc<[u8]>),
}

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "File({})", path.display()),
            Self::Bytes(bytes) => write!(f, "Bytes(<{} bytes, not shown>)", bytes.len()),
        }
    }
}

impl Pem {
    fn describe(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Bytes(_) => "the PEM given in code".into(),
        }
    }

    fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        let read: Result<Vec<_>, _> = match self {
            Self::File(path) => CertificateDer::pem_file_iter(path)
                .map_err(|e| e.to_string())?
                .collect(),
            Self::Bytes(bytes) => CertificateDer::pem_slice_iter(bytes).collect(),
        };
        let certificates = read.map_err(|e| format!("{}: {e}", self.describe()))?;
        if certificates.is_empty() {
            return Err(format!("{} holds no certificate", self.describe()));
        }
        Ok(certificates)
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>, String> {
        // The parser's error names the PEM section, never the key's bytes.
        match self {
            Self::File(path) => PrivateKeyDer::from_pem_file(path),
            Self::Bytes(bytes) => PrivateKeyDer::from_pem_slice(bytes),
        }
        .map_err(|e| format!("{}: no private key read: {e}", self.describe()))
    }
}

/// The TLS settings of a store: what the options say, completed by the connection string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct TlsSettings {
    pub(super) mode: Option<SslMode>,
    /// `None`: the system's roots.
    pub(super) roots: Option<Pem>,
    pub(super) client: Option<(Pem, Pem)>,
}

/// Whether every host a connection may go to is on this machine: a Unix socket, `localhost`
/// or a loopback address (no host at all is libpq's local socket). A `hostaddr` is where the
/// connection goes whatever `host` says (which then only names the server for its
/// certificate), so each one must be a loopback address too.
pub(super) fn only_this_machine(config: &tokio_postgres::Config) -> bool {
    let addresses_local = config.get_hostaddrs().iter().all(|ip| ip.is_loopback());
    addresses_local
        && config.get_hosts().iter().all(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => {
                let name = name.trim_start_matches('[').trim_end_matches(']');
                name.eq_ignore_ascii_case("localhost")
                    || name
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            }
            #[cfg(unix)]
            tokio_postgres::config::Host::Unix(_) => true,
        })
}

/// Refuses a mode that always speaks TLS (`require`, `verify-ca`, `verify-full`) for a
/// connection that names no server: with `hostaddr` alone, the TLS handshake has no server
/// name (`host` gives it, and `verify-full` checks the certificate against it), and would fail
/// on an empty one instead of saying why. (`prefer` stands: a server without TLS is reached in
/// plain text on this machine, and one with TLS fails the same way.)
pub(super) fn check_server_named(
    settings: &TlsSettings,
    config: &tokio_postgres::Config,
    location: &str,
) -> Result<(), StoreError> {
    let mode = settings.mode();
    if matches!(
        mode,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
    ) && config.get_hosts().is_empty()
        && !config.get_hostaddrs().is_empty()
    {
        return Err(StoreError::Tls {
            location: location.to_owned(),
            failure: TlsFailure::Settings,
            message: format!(
                "sslmode={mode} speaks TLS, which needs the server's name (`host`, the name on \
                 its certificate), and the connection string gives `hostaddr` alone: give \
                 `host` too"
            ),
        });
    }
    Ok(())
}

/// The TLS parameters tokio-postgres does not parse, taken out of a connection string, and
/// the names of every parameter it sets (so an option only fills in what the string leaves
/// unset).
#[derive(Debug, Default)]
pub(super) struct Split {
    /// The connection string without `sslmode`, `sslrootcert`, `sslcert` and `sslkey`.
    pub(super) rest: String,
    pub(super) mode: Option<String>,
    pub(super) root_cert: Option<String>,
    pub(super) cert: Option<String>,
    pub(super) key: Option<String>,
    /// Every key the string sets.
    pub(super) keys: Vec<String>,
}

impl Split {
    fn take(&mut self, key: &str, value: String) -> bool {
        self.keys.push(key.to_owned());
        let slot = match key {
            "sslmode" => &mut self.mode,
            "sslrootcert" => &mut self.root_cert,
            "sslcert" => &mut self.cert,
            "sslkey" => &mut self.key,
            _ => return false,
        };
        *slot = Some(value);
        true
    }

    /// Whether the connection string sets `key`.
    pub(super) fn sets(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }
}

/// Takes the TLS parameters out of a URL (`postgres://…?sslmode=…&sslrootcert=…`) or a
/// `key=value` string. The rest is handed to tokio-postgres as it was.
pub(super) fn split_connection_string(text: &str) -> Split {
    let mut split = Split::default();
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        let Some((base, query)) = text.split_once('?') else {
            split.rest = text.to_owned();
            return split;
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(key);
            if !split.take(&key, percent_decode(value)) {
                kept.push(pair);
            }
        }
        split.rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return split;
    }
    let mut kept = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next_if_eq(&'=').is_none() {
            // Not a key=value pair: tokio-postgres says what is wrong with it.
            split.rest = text.to_owned();
            return split;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '\'' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        if !split.take(&key, value.clone()) {
            let quoted = value.replace('\\', "\\\\").replace('\'', "\\'");
            kept.push(format!("{key}='{quoted}'"));
        }
    }
    split.rest = kept.join(" ");
    split
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i.saturating_add(1)..i.saturating_add(3))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i = i.saturating_add(3);
            }
            _ => {
                out.push(b);
                i = i.saturating_add(1);
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl TlsSettings {
    /// The options' settings, with what the connection string sets where the options set
    /// nothing, and the mode decided: when neither sets one, `verify-full` unless
    /// `only_this_machine` (then `prefer`), and `verify-full` with `sslrootcert=system`.
    pub(super) fn completed(
        &self,
        split: &Split,
        location: &str,
        only_this_machine: bool,
    ) -> Result<Self, StoreError> {
        let settings_error = |message: String| StoreError::Tls {
            location: location.to_owned(),
            failure: TlsFailure::Settings,
            message,
        };
        let mode = match (self.mode, &split.mode) {
            (Some(mode), _) => Some(mode),
            (None, Some(name)) => Some(SslMode::from_name(name).ok_or_else(|| {
                settings_error(format!(
                    "sslmode={name:?} is not one of disable, prefer, require, verify-ca, verify-full"
                ))
            })?),
            (None, None) => None,
        };
        let system_roots = self.roots.is_none() && split.root_cert.as_deref() == Some("system");
        let mode = match mode {
            Some(mode) if system_roots && mode != SslMode::VerifyFull => {
                return Err(settings_error(format!(
                    "sslrootcert=system checks the server against the system's roots and needs \
                     sslmode=verify-full, not {mode}"
                )));
            }
            Some(mode) => mode,
            None if system_roots || !only_this_machine => SslMode::VerifyFull,
            None => SslMode::Prefer,
        };
        let mode = Some(mode);
        let roots = match (&self.roots, split.root_cert.as_deref()) {
            (Some(roots), _) => Some(roots.clone()),
            (None, None | Some("system")) => None,
            (None, Some(path)) => Some(Pem::File(path.into())),
        };
        let client = match (&self.client, &split.cert, &split.key) {
            (Some(client), _, _) => Some(client.clone()),
            (None, Some(cert), Some(key)) => Some((Pem::File(cert.into()), Pem::File(key.into()))),
            (None, None, None) => None,
            (None, _, _) => {
                return Err(settings_error(
                    "sslcert and sslkey go together: the connection string gives one of them"
                        .into(),
                ));
            }
        };
        Ok(Self {
            mode,
            roots,
            client,
        })
    }

    /// The mode in effect ([`completed`](Self::completed) decides it).
    pub(super) fn mode(&self) -> SslMode {
        self.mode.unwrap_or_default()
    }

    /// What tokio-postgres negotiates: `prefer` with a CA given never falls back to plain
    /// text (whoever answers "no TLS" could be anyone on the path), so it requires TLS.
    pub(super) fn negotiation(&self) -> tokio_postgres::config::SslMode {
        match self.mode() {
            SslMode::Prefer if self.roots.is_some() => tokio_postgres::config::SslMode::Require,
            mode => mode.negotiation(),
        }
    }

    /// The rustls connector for these settings. Reads the CA file (or the system's roots)
    /// and the client certificate now.
    pub(super) fn connector(
        &self,
        location: &str,
    ) -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
        let settings_error = |message: String| StoreError::Tls {
            location: location.to_owned(),
            failure: TlsFailure::Settings,
            message,
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mode = self.mode();
        let checks_chain = matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull)
            || (mode != SslMode::Disable && self.roots.is_some());
        let webpki = if checks_chain {
            let mut roots = RootCertStore::empty();
            match &self.roots {
                Some(pem) => {
                    for certificate in pem.certificates().map_err(&settings_error)? {
                        roots
                            .add(certificate)
                            .map_err(|e| settings_error(format!("{}: {e}", pem.describe())))?;
                    }
                }
                None => {
                    let found = rustls_native_certs::load_native_certs();
                    roots.add_parsable_certificates(found.certs);
                }
            }
            if roots.is_empty() {
                return Err(settings_error(format!(
                    "sslmode={mode} checks the server's certificate, but no trusted root was found \
                     (give a CA file: sslrootcert=… or PostgresOptions::with_root_certificate_file)"
                )));
            }
            let verifier =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                    .build()
                    .map_err(|e| settings_error(format!("the trusted roots: {e}")))?;
            Some(verifier)
        } else {
            None
        };
        let verifier = Arc::new(Verifier {
            webpki,
            checks_name: mode == SslMode::VerifyFull,
            provider: Arc::clone(&provider),
        });
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| settings_error(format!("the TLS versions: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = cert.certificates().map_err(&settings_error)?;
                let key = key.private_key().map_err(&settings_error)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    settings_error(format!(
                        "the client certificate {} and its key: {e}",
                        cert.describe()
                    ))
                })?
            }
        };
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }
}

/// Checks a server's certificate as the mode says: not at all (`prefer`/`require` without a
/// CA), its chain (`verify-ca`, or a CA given), its chain and name (`verify-full`). The
/// handshake's signatures are always checked against the certificate's key.
#[derive(Debug)]
struct Verifier {
    webpki: Option<Arc<WebPkiServerVerifier>>,
    checks_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        // webpki checks the chain first and the name last: a name error means the chain held.
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.checks_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// What refused a TLS connection, when an error's causes hold a TLS failure.
pub(super) fn tls_failure(error: &tokio_postgres::Error) -> Option<TlsFailure> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        let rustls_error = e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(r) = rustls_error {
            return Some(match r {
                rustls::Error::InvalidCertificate(c) => match c {
                    CertificateError::UnknownIssuer => TlsFailure::UnknownIssuer,
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. } => TlsFailure::WrongHost,
                    CertificateError::Expired
                    | CertificateError::ExpiredContext { .. }
                    | CertificateError::NotValidYet
                    | CertificateError::NotValidYetContext { .. } => TlsFailure::Expired,
                    _ => TlsFailure::Handshake,
                },
                _ => TlsFailure::Handshake,
            });
        }
        if e.to_string().contains("server does not support TLS") {
            return Some(TlsFailure::NotOffered);
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_of_urls_and_key_value_strings() {
        let s = split_connection_string(
            "postgres://u:p@h:5/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(s.rest, "postgres://u:p@h:5/db?application_name=x");
        assert_eq!(s.mode.as_deref(), Some("verify-full"));
        assert_eq!(s.root_cert.as_deref(), Some("/tmp/ca.pem"));
        assert!(s.sets("application_name") && !s.sets("connect_timeout"));

        let s = split_connection_string(
            "host=h user=u password='a b\\'c' sslmode = require sslcert=/c.pem sslkey='/k.pem'",
        );
        assert_eq!(s.rest, "host='h' user='u' password='a b\\'c'");
        assert_eq!(s.mode.as_deref(), Some("require"));
        assert_eq!(s.cert.as_deref(), Some("/c.pem"));
        assert_eq!(s.key.as_deref(), Some("/k.pem"));
        let config: tokio_postgres::Config = s.rest.parse().expect("parses");
        assert_eq!(config.get_password(), Some(&b"a b'c"[..]));
    }

    /// The settings a connection string gives, decided, and where the string connects.
    fn decided(url: &str) -> Result<(TlsSettings, bool), StoreError> {
        let split = split_connection_string(url);
        let config: tokio_postgres::Config = split.rest.parse().expect("parses");
        let local = only_this_machine(&config);
        TlsSettings::default()
            .completed(&split, "test", local)
            .map(|settings| (settings, local))
    }

    #[test]
    fn a_store_over_the_network_verifies_by_default_and_one_on_this_machine_prefers() {
        use tokio_postgres::config::SslMode as Negotiated;
        for (url, local, mode) in [
            (
                "postgres://u@db.example.com/app",
                false,
                SslMode::VerifyFull,
            ),
            ("postgres://u@10.0.0.7/app", false, SslMode::VerifyFull),
            ("postgres://u@localhost/app", true, SslMode::Prefer),
            ("postgres://u@127.0.0.1:5433/app", true, SslMode::Prefer),
            ("postgres://u@[::1]/app", true, SslMode::Prefer),
            ("host=/var/run/postgresql user=u", true, SslMode::Prefer),
            (
                "host=localhost,db.example.com user=u",
                false,
                SslMode::VerifyFull,
            ),
            (
                "postgres://u@db.example.com/app?sslmode=require",
                false,
                SslMode::Require,
            ),
            (
                "postgres://u@localhost/app?sslrootcert=system",
                true,
                SslMode::VerifyFull,
            ),
            // `hostaddr` is where the connection goes (`host` then only names the server for
            // its certificate): an address off this machine is the network, whatever `host`.
            ("hostaddr=10.0.0.7 user=u", false, SslMode::VerifyFull),
            (
                "host=localhost hostaddr=10.0.0.7 user=u",
                false,
                SslMode::VerifyFull,
            ),
            (
                "postgres://u@/app?hostaddr=10.0.0.7",
                false,
                SslMode::VerifyFull,
            ),
            (
                "host=db.example.com hostaddr=10.0.0.7 user=u",
                false,
                SslMode::VerifyFull,
            ),
            ("hostaddr=127.0.0.1 user=u", true, SslMode::Prefer),
            ("host=localhost hostaddr=::1 user=u", true, SslMode::Prefer),
        ] {
            let (settings, seen_local) = decided(url).expect("settings");
            assert_eq!((seen_local, settings.mode()), (local, mode), "{url}");
        }
        // A CA given: `prefer` never falls back to plain text.
        let (with_ca, _) =
            decided("postgres://u@localhost/app?sslmode=prefer&sslrootcert=/ca.pem").expect("ok");
        assert_eq!(with_ca.negotiation(), Negotiated::Require);
        let (without, _) = decided("postgres://u@localhost/app").expect("ok");
        assert_eq!(without.negotiation(), Negotiated::Prefer);
    }

    #[test]
    fn tls_with_hostaddr_alone_is_refused_and_names_host() {
        let check = |url: &str| {
            let split = split_connection_string(url);
            let config: tokio_postgres::Config = split.rest.parse().expect("parses");
            let (settings, _) = decided(url).expect("settings");
            check_server_named(&settings, &config, "test")
        };
        let Err(error) = check("hostaddr=10.0.0.7 user=u") else {
            panic!("hostaddr alone under verify-full: not refused");
        };
        assert!(error.to_string().contains("give `host` too"), "{error}");
        for mode in ["require", "verify-ca"] {
            assert!(
                check(&format!("hostaddr=10.0.0.7 user=u sslmode={mode}")).is_err(),
                "{mode}"
            );
        }
        // With `host`, or with a mode that may go without TLS, it stands.
        assert!(check("host=db.example.com hostaddr=10.0.0.7 user=u").is_ok());
        assert!(check("hostaddr=10.0.0.7 user=u sslmode=disable").is_ok());
        assert!(check("hostaddr=127.0.0.1 user=u").is_ok());
    }

    #[test]
    fn the_system_roots_with_a_mode_weaker_than_verify_full_are_refused() {
        for mode in ["disable", "prefer", "require", "verify-ca"] {
            let url = format!("postgres://u@db.example.com/app?sslrootcert=system&sslmode={mode}");
            let Err(error) = decided(&url) else {
                panic!("{url}: not refused");
            };
            assert!(error.to_string().contains("verify-full"), "{error}");
        }
    }

    #[test]
    fn pem_bytes_never_show_in_debug() {
        let canary = "-----BEGIN PRIVATE KEY-----\nCANARY-KEY-4d1e\n-----END PRIVATE KEY-----\n";
        let pem = Pem::Bytes(canary.as_bytes().into());
        let text = format!("{pem:?}");
        assert!(!text.contains("CANARY"), "{text}");
    }
}

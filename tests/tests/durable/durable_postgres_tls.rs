//! The PostgreSQL store's connection against a real server (`llm_tools_tests::postgres`):
//! TLS with certificates this test makes (`sslmode` from `disable` to `verify-full`, a client
//! certificate; `require` against a server without TLS), the time limits of database waits
//! (a row lock held by another session, a statement past its limit), a mixed-case table
//! prefix, and the schema check of `without_migrations`.
#![allow(clippy::expect_used, clippy::panic)] // helpers outside `#[test]` fns

use std::time::Duration;

use llm_tools_core::Chat;
use llm_tools_core::store::{
    PostgresOptions, PostgresStore, SCHEMA_VERSION, SslMode, StoreError, TlsFailure,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_tests::postgres::{
    CERTIFICATE_USER, PASSWORD, ServerTls, server_or_skip, tls_server_or_skip,
};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A CA: its certificate (PEM) and what signs with it.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn new_ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().expect("key");
    let pem = params.self_signed(&key).expect("self-signed").pem();
    Ca {
        pem,
        issuer: Issuer::new(params, key),
    }
}

/// A certificate `ca` signs for `names` with common name `common_name`: (certificate, key).
fn issue(ca: &Ca, names: &[&str], common_name: &str) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    let key = KeyPair::generate().expect("key");
    let certificate = params.signed_by(&key, &ca.issuer).expect("signed");
    (certificate.pem(), key.serialize_pem())
}

async fn admin(url: &str) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("the test's own connection");
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    (client, task)
}

/// Whether every server session of `application_name` is encrypted (`None`: there is none).
async fn encrypted(admin: &tokio_postgres::Client, application_name: &str) -> Option<bool> {
    let rows = admin
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.application_name = $1",
            &[&application_name],
        )
        .await
        .expect("pg_stat_ssl");
    if rows.is_empty() {
        return None;
    }
    Some(rows.iter().all(|r| r.get::<_, bool>(0)))
}

fn tls_failure(error: &StoreError) -> TlsFailure {
    match error {
        StoreError::Tls { failure, .. } => *failure,
        other => panic!("not a TLS error: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sslmode_against_a_tls_server_and_a_client_certificate() {
    let ca = new_ca("llm-tools test CA");
    let stranger = new_ca("a CA nobody trusts");
    // The server's certificate names `localhost` only, not 127.0.0.1.
    let (server_pem, server_key) = issue(&ca, &["localhost"], "localhost");
    let (client_pem, client_key) = issue(&ca, &[], CERTIFICATE_USER);
    let Some(server) = tls_server_or_skip(
        "the PostgreSQL TLS suite",
        &ServerTls {
            certificate_pem: server_pem,
            key_pem: server_key,
            client_ca_pem: Some(ca.pem.clone()),
        },
    ) else {
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("ca");
    let stranger_file = dir.path().join("stranger.pem");
    std::fs::write(&stranger_file, &stranger.pem).expect("stranger");
    let port = server.port();
    let url = |host: &str, name: &str, query: &str| {
        format!(
            "postgres://llm_tools:{PASSWORD}@{host}:{port}/postgres?application_name={name}{query}"
        )
    };
    let (admin, _task) = admin(&format!(
        "{}&sslmode=disable",
        url("127.0.0.1", "admin", "")
    ))
    .await;
    admin
        .batch_execute(&format!("CREATE ROLE {CERTIFICATE_USER} LOGIN SUPERUSER"))
        .await
        .expect("role");
    let options = |schema: &str| PostgresOptions::default().with_schema(schema);

    // `require`: encrypted, the certificate unchecked.
    let require = PostgresStore::connect_with(
        &url("127.0.0.1", "tls_require", "&sslmode=require"),
        options("tls_require"),
    )
    .await
    .expect("require connects");
    assert_eq!(encrypted(&admin, "tls_require").await, Some(true));
    Chat::create(require.clone(), "over-tls", ScriptedProvider::new())
        .await
        .expect("a chat stored over TLS");

    // `prefer` (the default) against a TLS server: encrypted.
    let _prefer =
        PostgresStore::connect_with(&url("127.0.0.1", "tls_prefer", ""), options("tls_prefer"))
            .await
            .expect("prefer connects");
    assert_eq!(encrypted(&admin, "tls_prefer").await, Some(true));

    // `disable`: plain text.
    let _plain = PostgresStore::connect_with(
        &url("127.0.0.1", "tls_disable", "&sslmode=disable"),
        options("tls_disable"),
    )
    .await
    .expect("disable connects");
    assert_eq!(encrypted(&admin, "tls_disable").await, Some(false));

    // `verify-full` with the CA, to the name the certificate gives: encrypted.
    let root = format!("&sslrootcert={}", ca_file.display());
    let _full = PostgresStore::connect_with(
        &url(
            "localhost",
            "tls_full",
            &format!("&sslmode=verify-full{root}"),
        ),
        options("tls_full"),
    )
    .await
    .expect("verify-full connects to localhost");
    assert_eq!(encrypted(&admin, "tls_full").await, Some(true));

    // `verify-full` to a name the certificate does not give: refused; `verify-ca` to it: fine.
    let err = PostgresStore::connect_with(
        &url(
            "127.0.0.1",
            "tls_wrong_host",
            &format!("&sslmode=verify-full{root}"),
        ),
        options("tls_full"),
    )
    .await
    .expect_err("wrong host name");
    assert_eq!(tls_failure(&err), TlsFailure::WrongHost, "{err}");
    let _ca_only = PostgresStore::connect_with(
        &url("127.0.0.1", "tls_ca", &format!("&sslmode=verify-ca{root}")),
        options("tls_full"),
    )
    .await
    .expect("verify-ca ignores the host name");
    assert_eq!(encrypted(&admin, "tls_ca").await, Some(true));

    // A CA the server's certificate is not from: refused, by the URL or by the options.
    let err = PostgresStore::connect_with(
        &url(
            "localhost",
            "tls_stranger",
            &format!(
                "&sslmode=verify-full&sslrootcert={}",
                stranger_file.display()
            ),
        ),
        options("tls_full"),
    )
    .await
    .expect_err("unknown CA");
    assert_eq!(tls_failure(&err), TlsFailure::UnknownIssuer, "{err}");
    let err = PostgresStore::connect_with(
        &url("localhost", "tls_stranger", ""),
        options("tls_full")
            .with_ssl_mode(SslMode::VerifyFull)
            .with_root_certificates_pem(stranger.pem.clone()),
    )
    .await
    .expect_err("unknown CA given in code");
    assert_eq!(tls_failure(&err), TlsFailure::UnknownIssuer, "{err}");
    assert_eq!(encrypted(&admin, "tls_stranger").await, None);

    // A role the server lets in only with a client certificate.
    let cert_url = |query: &str| {
        format!(
            "postgres://{CERTIFICATE_USER}@localhost:{port}/postgres?application_name=tls_cert&sslmode=verify-full{root}{query}"
        )
    };
    let err = PostgresStore::connect_with(&cert_url(""), options("tls_cert"))
        .await
        .expect_err("no client certificate");
    assert!(err.to_string().contains("certificate"), "{err}");
    let cert_file = dir.path().join("client.pem");
    let key_file = dir.path().join("client.key");
    std::fs::write(&cert_file, &client_pem).expect("cert");
    std::fs::write(&key_file, &client_key).expect("key");
    let _by_files = PostgresStore::connect_with(
        &cert_url(&format!(
            "&sslcert={}&sslkey={}",
            cert_file.display(),
            key_file.display()
        )),
        options("tls_cert"),
    )
    .await
    .expect("the client certificate from the URL's files");
    let in_code =
        options("tls_cert").with_client_certificate_pem(client_pem.clone(), client_key.clone());
    let by_pem = PostgresStore::connect_with(&cert_url(""), in_code.clone())
        .await
        .expect("the client certificate given in code");
    assert_eq!(encrypted(&admin, "tls_cert").await, Some(true));

    // Neither the options nor the store show key material or the password.
    let key_body: String = client_key
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let key_line = client_key.lines().nth(1).expect("a line of the key");
    for text in [
        format!("{in_code:?}"),
        format!("{by_pem:?}"),
        format!("{require:?}"),
        err.to_string(),
    ] {
        assert!(!text.contains(key_line), "{text}");
        assert!(!text.contains(&key_body), "{text}");
        assert!(!text.contains(PASSWORD), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_lock_held_elsewhere_and_a_long_statement_are_typed_retryable_errors() {
    let Some(server) = server_or_skip("the PostgreSQL timeout suite") else {
        return;
    };
    let url = server.url();
    // This server has no TLS: `prefer` (the default on this machine) talks plain text,
    // `require` refuses, and so does `prefer` with a CA given: whoever answers "no TLS" could
    // be anyone on the path.
    let err = PostgresStore::connect(&format!("{url}?sslmode=require"))
        .await
        .expect_err("no TLS on this server");
    assert_eq!(tls_failure(&err), TlsFailure::NotOffered, "{err}");
    let err = PostgresStore::connect_with(
        &format!("{url}?sslmode=prefer"),
        PostgresOptions::default().with_root_certificates_pem(new_ca("a CA").pem),
    )
    .await
    .expect_err("a CA given: TLS or nothing");
    assert_eq!(tls_failure(&err), TlsFailure::NotOffered, "{err}");
    let store = PostgresStore::connect_with(
        &url,
        PostgresOptions::default()
            .with_schema("locks")
            .with_lock_timeout(Duration::from_millis(200)),
    )
    .await
    .expect("connects");
    let mut chat = Chat::create(store.clone(), "locked", ScriptedProvider::new())
        .await
        .expect("created");

    // Another session holds the chat's row, as a commit or a stuck client would.
    let (mut holder, _task) = admin(&url).await;
    let tx = holder.transaction().await.expect("begin");
    tx.query(
        "SELECT id FROM locks.llm_tools_chats WHERE id = 'locked' FOR UPDATE",
        &[],
    )
    .await
    .expect("row locked");
    // Bounded so that a store without a lock timeout fails here instead of hanging.
    let err = tokio::time::timeout(Duration::from_secs(60), chat.enqueue("blocked?"))
        .await
        .expect("the store gave up waiting for the lock")
        .expect_err("the row stays locked");
    let store_error = match &err {
        llm_tools_core::Error::Store(e) => e,
        other => panic!("not a store error: {other:?}"),
    };
    assert!(
        matches!(**store_error, StoreError::Locked { .. }),
        "{store_error:?}"
    );
    assert!(store_error.is_retryable());
    tx.rollback().await.expect("lock released");
    chat.enqueue("after the lock")
        .await
        .expect("works once the lock is released");

    // A statement past the statement timeout: the table locked whole, no lock timeout, so
    // the statement's own limit ends the wait.
    let impatient = PostgresStore::connect_with(
        &url,
        PostgresOptions::default()
            .with_schema("locks")
            .with_lock_timeout(Duration::ZERO)
            .with_statement_timeout(Duration::from_millis(300)),
    )
    .await
    .expect("connects");
    let tx = holder.transaction().await.expect("begin");
    tx.batch_execute("LOCK TABLE locks.llm_tools_chats IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("table locked");
    let err = tokio::time::timeout(Duration::from_secs(60), impatient.chat_ids())
        .await
        .expect("the store gave up waiting")
        .expect_err("the table stays locked");
    assert!(
        matches!(
            err,
            StoreError::TimedOut {
                limit: "statement_timeout",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_retryable());
    tx.rollback().await.expect("released");
    assert_eq!(
        impatient.chat_ids().await.expect("ids after the release"),
        ["locked"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_case_prefix_connects_again_and_without_migrations_checks_the_version() {
    let Some(server) = server_or_skip("the PostgreSQL schema suite") else {
        return;
    };
    let url = server.url();
    let mixed = || PostgresOptions::default().with_table_prefix("MyApp_");
    let first = PostgresStore::connect_with(&url, mixed())
        .await
        .expect("first connect");
    Chat::create(first, "mixed", ScriptedProvider::new())
        .await
        .expect("created");
    let again = PostgresStore::connect_with(&url, mixed())
        .await
        .expect("a later connect with the same prefix");
    assert_eq!(again.chat_ids().await.expect("ids"), ["mixed"]);
    let lower =
        PostgresStore::connect_with(&url, PostgresOptions::default().with_table_prefix("myapp_"))
            .await
            .expect("the folded prefix names the same tables");
    assert_eq!(lower.chat_ids().await.expect("ids"), ["mixed"]);

    // No tables yet, and migrations off: older (0), nothing created.
    let fresh = || {
        PostgresOptions::default()
            .with_schema("unmigrated")
            .without_migrations()
    };
    let err = PostgresStore::connect_with(&url, fresh())
        .await
        .expect_err("no tables");
    assert!(
        matches!(err, StoreError::OlderSchema { found: 0, expected, .. } if expected == SCHEMA_VERSION),
        "{err:?}"
    );
    PostgresStore::connect_with(&url, PostgresOptions::default().with_schema("unmigrated"))
        .await
        .expect("migrated");
    PostgresStore::connect_with(&url, fresh())
        .await
        .expect("the current version connects without migrations");
    let (admin, _task) = admin(&url).await;
    admin
        .execute(
            "UPDATE unmigrated.llm_tools_schema SET version = $1",
            &[&i32::try_from(SCHEMA_VERSION + 1).expect("fits")],
        )
        .await
        .expect("newer");
    let err = PostgresStore::connect_with(&url, fresh())
        .await
        .expect_err("a newer schema");
    assert!(
        matches!(err, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1),
        "{err:?}"
    );
}

//! Gemini on Vertex AI against the recordings of `tests/fixtures/recorded/gemini-vertex`, served
//! by the loopback replay server, token exchange included: the refresh token is exchanged once
//! at the token endpoint (the form carries the refresh token, client id and secret), the access
//! token is cached for the chat's later requests and sent as a bearer token to the
//! `aiplatform` path of the project and location, and the answers come out as recorded. Then
//! an expired token: Vertex refuses it, it is refreshed once and the request goes through; a
//! refused refresh is a clear error naming the cause, with no secret in it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use llm_tools_core::chat::Chat;
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials, canonical_request};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{Interaction, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures;
use llm_tools_tests::serving::{self, provider_error};
use serde_json::json;

const SECRET: &str = "client-secret-canary-77";
const REFRESH: &str = "1//refresh-canary-91";

/// The text of a recorded `generateContent` answer (thoughts left out).
fn answer_text(response: &RecordedResponse) -> String {
    let v: serde_json::Value = serde_json::from_str(&response.body).unwrap();
    v["candidates"][0]["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str())
        .collect()
}

fn provider(server: &ReplayServer, model: &str) -> Gemini {
    let config = GeminiConfig::vertex("proj-1", "us-central1", model)
        .with_base_url(format!(
            "{}/v1beta1/projects/proj-1/locations/us-central1/publishers/google",
            server.url()
        ))
        .with_token_uri(format!("{}/token", server.url()))
        .with_google_credentials(GoogleCredentials::refresh_token(
            "client-1", SECRET, REFRESH,
        ))
        .with_retry(RetryPolicy::none());
    Gemini::new(config).unwrap()
}

#[tokio::test]
async fn every_vertex_recording_replays_with_one_token_exchange() {
    let files = fixtures::recordings("gemini-vertex");
    assert_eq!(files.len(), 3);
    for file in files {
        let recording = Recording::load(&file).unwrap();
        let server = ReplayServer::start(recording.clone()).await.unwrap();
        let generate = &recording.interactions[1].request.url;
        let model = generate
            .split("/models/")
            .nth(1)
            .and_then(|m| m.split(':').next())
            .unwrap();
        let mut chat = Chat::new(provider(&server, model));
        for interaction in &recording.interactions[1..] {
            let body = &interaction.request.body;
            let canonical = canonical_request(body);
            let ask = canonical["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["text"].as_str())
                .unwrap()
                .to_owned();
            let config = body.get("generationConfig").cloned().unwrap_or(json!({}));
            let params = if config.as_object().is_some_and(|o| o.is_empty()) {
                json!({})
            } else {
                json!({"generationConfig": config})
            };
            chat.with_params(params).unwrap();
            let answer = chat.ask(ask).await.unwrap();
            let recorded = answer_text(&interaction.response);
            assert_eq!(answer.text().unwrap_or_default(), recorded, "{file:?}");
        }
        let received = server.received();
        assert_eq!(received.len(), recording.interactions.len(), "{file:?}");
        // One token exchange, first, with the refresh token.
        assert_eq!(received[0].path, "/token");
        assert_eq!(
            received[0].header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        let form = received[0].body.as_str().unwrap();
        assert!(form.contains("grant_type=refresh_token"), "{form}");
        assert!(
            form.contains("refresh_token=1%2F%2Frefresh-canary-91"),
            "{form}"
        );
        assert!(form.contains("client_id=client-1"), "{form}");
        // Every generateContent with the exchanged token, to the project's path.
        for (r, want) in received[1..].iter().zip(&recording.interactions[1..]) {
            assert_eq!(
                r.header("authorization"),
                Some("Bearer <GOOGLE_ACCESS_TOKEN>")
            );
            assert!(r.path.starts_with(
                "/v1beta1/projects/proj-1/locations/us-central1/publishers/google/models/"
            ));
            assert!(
                want.request
                    .url
                    .ends_with(r.path.rsplit('/').next().unwrap())
            );
            assert_eq!(
                canonical_request(&r.body),
                canonical_request(&want.request.body)
            );
            assert_eq!(
                r.body
                    .get("generationConfig")
                    .filter(|c| c.as_object().is_some_and(|o| !o.is_empty())),
                want.request
                    .body
                    .get("generationConfig")
                    .filter(|c| c.as_object().is_some_and(|o| !o.is_empty()))
            );
        }
    }
}

fn token(value: &str) -> Interaction {
    serving::exchange(
        "https://oauth2.googleapis.com/token",
        RecordedResponse::json(
            200,
            json!({"access_token": value, "expires_in": 3599, "token_type": "Bearer"}).to_string(),
        ),
    )
}

fn generate(response: RecordedResponse) -> Interaction {
    serving::exchange(
        "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/proj-1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
        response,
    )
}

fn hello() -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello!"}]}, "finishReason": "STOP"}]})
            .to_string(),
    )
}

fn unauthenticated() -> RecordedResponse {
    RecordedResponse::json(
        401,
        json!({"error": {"code": 401, "status": "UNAUTHENTICATED",
            "message": "Request had invalid authentication credentials. Expected OAuth 2 access token."}})
        .to_string(),
    )
}

#[tokio::test]
async fn an_expired_token_is_refreshed_once_then_a_refusal_is_a_clear_error() {
    let server = ReplayServer::with_interactions(vec![
        token("ya29.first"),
        generate(unauthenticated()),
        token("ya29.second"),
        generate(hello()),
        // Later: refused again, and the refresh itself refused.
        generate(unauthenticated()),
        serving::exchange(
            "https://oauth2.googleapis.com/token",
            RecordedResponse::json(
                400,
                r#"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#,
            ),
        ),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(&server, "gemini-2.5-flash"));
    let answer = chat.ask("Hi").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Hello!"));
    let received = server.received();
    assert_eq!(
        received[1].header("authorization"),
        Some("Bearer ya29.first")
    );
    assert_eq!(
        received[3].header("authorization"),
        Some("Bearer ya29.second")
    );

    let err = provider_error(chat.ask("Again").await.unwrap_err());
    assert!(err.message().contains("invalid_grant"), "{err}");
    assert!(
        err.message().contains("Token has been expired or revoked"),
        "{err}"
    );
    let shown = format!("{err} {err:?}");
    for secret in [SECRET, REFRESH, "ya29.second"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert_eq!(server.received().len(), 6);
}

/// A token replaced after a refusal is still valid for a while: an error quoting it after the
/// refresh does not show it.
#[tokio::test]
async fn a_replaced_token_quoted_after_the_refresh_is_redacted() {
    const FIRST: &str = "ya29.first-canary-31";
    let server = ReplayServer::with_interactions(vec![
        token(FIRST),
        generate(unauthenticated()),
        token("ya29.second"),
        generate(RecordedResponse::json(
            500,
            json!({"error": {"code": 500, "status": "INTERNAL",
                "message": format!("upstream saw Bearer {FIRST} and Bearer ya29.second")}})
            .to_string(),
        )),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(&server, "gemini-2.5-flash"));
    let err = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(err.status(), Some(500));
    let shown = format!("{err} {err:?}");
    for secret in [FIRST, "ya29.second", SECRET, REFRESH] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(
        shown.contains("upstream saw Bearer <GOOGLE_ACCESS_TOKEN>"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_service_account_signs_a_jwt_that_the_token_endpoint_exchanges() {
    use aws_lc_rs::encoding::AsDer as _;
    use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
    use base64::Engine as _;

    let key = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = key.as_der().unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(der.as_ref())
    );
    let key_file = json!({"type": "service_account", "project_id": "proj-1",
        "private_key_id": "kid-7", "private_key": pem,
        "client_email": "vertex-bot@proj-1.iam.gserviceaccount.com"})
    .to_string();
    let credentials = GoogleCredentials::from_adc_json(&key_file).unwrap();

    let server = ReplayServer::with_interactions(vec![token("ya29.account"), generate(hello())])
        .await
        .unwrap();
    let config = GeminiConfig::vertex("proj-1", "us-central1", "gemini-2.5-flash")
        .with_base_url(format!(
            "{}/v1beta1/projects/proj-1/locations/us-central1/publishers/google",
            server.url()
        ))
        .with_token_uri(format!("{}/token", server.url()))
        .with_google_credentials(credentials)
        .with_retry(RetryPolicy::none());
    let mut chat = Chat::new(Gemini::new(config).unwrap());
    let answer = chat.ask("Hi").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("Hello!"));

    let received = server.received();
    assert_eq!(received[0].path, "/token");
    let form = received[0].body.as_str().unwrap();
    let field = |name: &str| {
        form.split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        field("grant_type"),
        "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
    );
    let jwt = field("assertion");
    let parts: Vec<&str> = jwt.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let claims: serde_json::Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["iss"], "vertex-bot@proj-1.iam.gserviceaccount.com");
    assert_eq!(claims["aud"], format!("{}/token", server.url()));
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.public_key().as_ref())
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &b64.decode(parts[2]).unwrap(),
        )
        .expect("the JWT verifies with the account's public key");
    assert_eq!(
        received[1].header("authorization"),
        Some("Bearer ya29.account")
    );
    // The private key shows nowhere: not in the provider, not in its configuration.
    assert!(!format!("{chat:?}").contains("PRIVATE KEY"));
}

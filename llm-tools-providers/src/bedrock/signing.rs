//! AWS Signature Version 4 for Bedrock requests, computed by `aws-sigv4` (the AWS SDKs' own
//! signer) in the provider's [`RequestSigner`] hook: every try is signed anew, with the time it
//! is sent, so a retry after a wait is not refused as stale.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{self, SignableBody, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use llm_tools_core::{BoxFuture, ProviderError, ProviderErrorKind};

use super::config::AwsCredentials;
use crate::http::{RequestSigner, SignableRequest};

/// The signing name of Bedrock's runtime API.
const SERVICE: &str = "bedrock";

/// Signs requests with SigV4 for one region.
pub(crate) struct SigV4 {
    pub(crate) credentials: AwsCredentials,
    pub(crate) region: String,
}

impl SigV4 {
    /// Signs `request` as of `time`.
    pub(crate) fn sign_at(
        &self,
        request: &mut SignableRequest<'_>,
        time: SystemTime,
    ) -> Result<(), ProviderError> {
        let name = request.provider().to_owned();
        let failed = |what: String| {
            ProviderError::new(&name, ProviderErrorKind::Request, format!("SigV4: {what}"))
        };
        let credentials = Credentials::new(
            &self.credentials.access_key_id,
            self.credentials.secret_access_key.expose(),
            self.credentials
                .session_token
                .as_ref()
                .map(|t| t.expose().to_owned()),
            None,
            "llm-tools",
        );
        let identity: Identity = credentials.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SERVICE)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| failed(e.to_string()))?
            .into();
        let headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let signable = http_request::SignableRequest::new(
            request.method(),
            request.url(),
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::Bytes(request.body()),
        )
        .map_err(|e| failed(e.to_string()))?;
        let (instructions, _signature) = http_request::sign(signable, &params)
            .map_err(|e| failed(e.to_string()))?
            .into_parts();
        let (added, _query) = instructions.into_parts();
        for header in added {
            let sensitive = header.sensitive()
                || matches!(header.name(), "authorization" | "x-amz-security-token");
            request.set_header(header.name(), header.value(), sensitive)?;
        }
        Ok(())
    }
}

impl RequestSigner for SigV4 {
    fn sign<'a>(
        &'a self,
        mut request: SignableRequest<'a>,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move { self.sign_at(&mut request, SystemTime::now()) })
    }

    fn redact(&self, error: ProviderError) -> ProviderError {
        let error = error.redacted(
            self.credentials.secret_access_key.expose(),
            "<AWS_SECRET_ACCESS_KEY>",
        );
        match &self.credentials.session_token {
            Some(token) => error.redacted(token.expose(), "<AWS_SESSION_TOKEN>"),
            None => error,
        }
    }

    fn redact_text(&self, text: &str) -> Option<String> {
        let secret = (
            self.credentials.secret_access_key.expose(),
            "<AWS_SECRET_ACCESS_KEY>",
        );
        let token = self
            .credentials
            .session_token
            .as_ref()
            .map(|token| (token.expose(), "<AWS_SESSION_TOKEN>"));
        crate::http::replaced(text, std::iter::once(secret).chain(token))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use reqwest::header::HeaderMap;

    use super::*;

    fn sign(credentials: AwsCredentials, body: &[u8], headers: &mut HeaderMap) {
        let signer = SigV4 {
            credentials,
            region: "us-east-1".into(),
        };
        let mut request = SignableRequest {
            name: "bedrock",
            method: "POST",
            url: "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-2-lite-v1%3A0/converse",
            headers,
            body,
        };
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600); // 2026-01-01
        signer.sign_at(&mut request, time).unwrap();
    }

    #[test]
    fn a_signature_names_the_key_date_region_and_service_and_covers_the_body() {
        let canary = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
        let mut a = HeaderMap::new();
        a.insert("content-type", "application/json".parse().unwrap());
        sign(
            AwsCredentials::new("AKIDEXAMPLE", canary),
            b"{\"a\":1}",
            &mut a,
        );
        let auth = a["authorization"].to_str().unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders="),
            "{auth}"
        );
        assert!(auth.contains("content-type"), "{auth}");
        assert_eq!(a["x-amz-date"], "20260101T000000Z");
        assert!(a.get("x-amz-security-token").is_none());
        assert!(!format!("{a:?}").contains(canary));

        let mut b = HeaderMap::new();
        b.insert("content-type", "application/json".parse().unwrap());
        sign(
            AwsCredentials::new("AKIDEXAMPLE", canary),
            b"{\"a\":2}",
            &mut b,
        );
        assert_ne!(a["authorization"], b["authorization"], "the body is signed");
    }

    #[test]
    fn temporary_credentials_send_their_session_token() {
        let mut h = HeaderMap::new();
        sign(
            AwsCredentials::new("ASIAEXAMPLE", "secret").with_session_token("session-token-1"),
            b"{}",
            &mut h,
        );
        assert_eq!(h["x-amz-security-token"], "session-token-1");
        assert!(h["x-amz-security-token"].is_sensitive());
        assert!(h["authorization"].is_sensitive());
    }
}

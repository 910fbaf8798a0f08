//! What every request passes before a handler: the checks that make the API safe to leave
//! running on a machine with a browser, and its errors JSON.
//!
//! Design choices:
//! - **`Host` names this service** ([`check_request`]): an IP address, `localhost` (and
//!   `*.localhost`, which resolve to loopback by RFC 6761), or one of `service.allowed_hosts`.
//!   A page on `attacker.example` that rebinds its name to 127.0.0.1 reaches the socket but
//!   sends `Host: attacker.example`, and is refused (421).
//! - **State-changing requests are JSON and same-origin**: `POST`, `PUT`, `PATCH` and
//!   `DELETE` need `Content-Type: application/json` (an HTML form can send none of that
//!   without a CORS preflight, which this API never grants), and are refused (403) when an
//!   `Origin` header names another origin or `Sec-Fetch-Site` says `cross-site`. The
//!   dashboard, served from this origin, sends both as a browser does.
//! - **A token, when set, is checked in constant time**, with the `Bearer` scheme matched
//!   without regard to case (RFC 7235).
//! - **Every 4xx and 5xx is JSON** ([`json_errors`]): axum's own answers (an unknown path, a
//!   method not allowed, a body over the limit) are rewritten into the API's error body,
//!   keeping their status and headers (`Allow`).
//! - **A handler's whole time is bounded** (`service.request_timeout_secs`), body included.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// What the request checks need.
#[derive(Debug)]
pub(crate) struct Rules {
    /// Bearer token (empty: none).
    pub(crate) token: String,
    /// Host names (and `host:port`) besides IP addresses and `localhost`, lower case.
    pub(crate) allowed_hosts: Vec<String>,
    /// Longest time of one request.
    pub(crate) request_timeout: Duration,
}

/// The host part of a `Host` header value (`name`, `1.2.3.4`, `[::1]`), lower case.
fn host_part(authority: &str) -> String {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        // An IPv6 literal: up to the closing bracket.
        return format!("[{}", rest.split(']').next().unwrap_or("")).to_ascii_lowercase() + "]";
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `authority` (a `Host` value) names this service under `rules`.
fn host_allowed(authority: &str, rules: &Rules) -> bool {
    let host = host_part(authority);
    if host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok()
    {
        return true;
    }
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    let whole = authority.trim().to_ascii_lowercase();
    rules
        .allowed_hosts
        .iter()
        .any(|a| *a == host || *a == whole)
}

/// Whether the request's `Content-Type` is JSON (`application/json`, or `…+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let mime = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// Why a state-changing request comes from another origin, if it does.
fn cross_origin(headers: &HeaderMap, rules: &Rules) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        if site.eq_ignore_ascii_case("cross-site") {
            return Some("a cross-site request (Sec-Fetch-Site: cross-site)".into());
        }
    }
    let origin = headers.get(header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("null").trim();
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .map(|rest| rest.trim_end_matches('/'));
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match authority {
        Some(a) if a.eq_ignore_ascii_case(&host) => None,
        Some(a)
            if rules
                .allowed_hosts
                .iter()
                .any(|h| a.eq_ignore_ascii_case(h)) =>
        {
            None
        }
        _ => Some(format!("Origin `{origin}` is not this service's")),
    }
}

/// The checks of every request: `Host`, then the handler within the request timeout.
pub(crate) async fn check_request(
    State(rules): State<Arc<Rules>>,
    req: Request,
    next: Next,
) -> Response {
    let headers = req.headers();
    if let Some(host) = headers.get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !host_allowed(host, &rules) {
            return ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "Host `{host}` does not name this service (an IP address, localhost, or \
                     one of service.allowed_hosts)"
                ),
            )
            .field("Host")
            .into_response();
        }
    }
    match tokio::time::timeout(rules.request_timeout, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the request was not served within {} s (service.request_timeout_secs)",
                rules.request_timeout.as_secs()
            ),
        )
        .into_response(),
    }
}

/// Proof that a request may change the crawl: it comes from the same origin, as JSON. An
/// argument of every state-changing handler, so that it is checked once the route and
/// method matched (a method the route does not take is a 405 first).
#[derive(Debug)]
pub(crate) struct StateChange;

impl axum::extract::FromRequestParts<crate::AppState> for StateChange {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &crate::AppState,
    ) -> Result<Self, ApiError> {
        if let Some(why) = cross_origin(&parts.headers, &state.rules) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("{why}: state-changing requests must come from the same origin"),
            )
            .field("Origin"));
        }
        if !is_json(&parts.headers) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "state-changing requests need Content-Type: application/json",
            )
            .field("Content-Type"));
        }
        Ok(StateChange)
    }
}

/// Constant-time comparison of the presented token with ours.
fn token_ok(presented: &[u8], ours: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    presented.len() == ours.len() && bool::from(presented.ct_eq(ours))
}

/// The token of an `Authorization` value: `Bearer` in any case, then the token.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start())
}

/// Whether an `Authorization` value presents `token` (`Bearer` in any case, compared in
/// constant time). Any value passes when `token` is empty (none is set).
pub fn authorized(authorization: Option<&str>, token: &str) -> bool {
    if token.is_empty() {
        return true;
    }
    let presented = authorization.and_then(bearer).unwrap_or("");
    token_ok(presented.as_bytes(), token.as_bytes())
}

/// The token check of `/api` (and `/metrics` with `service.protect_metrics`).
pub(crate) async fn require_token(
    State(rules): State<Arc<Rules>>,
    req: Request,
    next: Next,
) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if authorized(presented, &rules.token) {
        next.run(req).await
    } else {
        let mut r = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token (Authorization: Bearer …)",
        )
        .into_response();
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        r
    }
}

/// Rewrites every 4xx and 5xx that is not JSON yet (axum's own answers) into the API's
/// error body, keeping status and headers.
pub(crate) async fn json_errors(req: Request, next: Next) -> Response {
    let head_only = req.method() == Method::HEAD;
    let response = next.run(req).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(response.headers()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let reason = match status {
        StatusCode::NOT_FOUND => "no such route".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => {
            let allowed = parts
                .headers
                .get(header::ALLOW)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            format!("method not allowed here (allowed: {allowed})")
        }
        _ if !text.is_empty() => text,
        _ => status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase(),
    };
    let body = serde_json::to_vec(&crate::types::ErrorBody {
        error: reason,
        field: None,
    })
    .unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    let body = if head_only {
        Body::empty()
    } else {
        Body::from(body)
    };
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allowed: &[&str]) -> Rules {
        Rules {
            token: String::new(),
            allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
            request_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(token_ok(b"s3cret", b"s3cret"));
        assert!(!token_ok(b"s3cre", b"s3cret"));
        assert!(!token_ok(b"s3cretX", b"s3cret"));
        assert!(!token_ok(b"", b"s3cret"));
    }

    #[test]
    fn the_bearer_scheme_is_matched_without_case() {
        for v in ["Bearer abc", "bearer abc", "BEARER  abc", " Bearer abc "] {
            assert_eq!(bearer(v), Some("abc"), "{v}");
        }
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearerabc"), None);
    }

    #[test]
    fn hosts_are_ip_addresses_localhost_or_allowed_names() {
        let r = rules(&["crawler.internal", "crawl.example.com:8700"]);
        for ok in [
            "127.0.0.1:8700",
            "127.0.0.1",
            "[::1]:8700",
            "10.1.2.3:80",
            "localhost:8700",
            "LOCALHOST",
            "dash.localhost:1",
            "crawler.internal:8700",
            "crawler.internal",
            "crawl.example.com:8700",
        ] {
            assert!(host_allowed(ok, &r), "{ok}");
        }
        for refused in [
            "attacker.example",
            "attacker.example:8700",
            "localhost.attacker.example",
            "crawl.example.com:9999",
            "127.0.0.1.attacker.example",
            "",
        ] {
            assert!(!host_allowed(refused, &r), "{refused}");
        }
    }

    #[test]
    fn a_state_change_from_another_origin_is_told_apart() {
        let r = rules(&["crawler.internal"]);
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        assert!(cross_origin(&headers(&[("host", "127.0.0.1:8700")]), &r).is_none());
        assert!(cross_origin(
            &headers(&[
                ("host", "127.0.0.1:8700"),
                ("origin", "http://127.0.0.1:8700")
            ]),
            &r
        )
        .is_none());
        assert!(cross_origin(
            &headers(&[
                ("host", "127.0.0.1:8700"),
                ("origin", "http://crawler.internal")
            ]),
            &r
        )
        .is_none());
        for origin in ["http://attacker.example", "null", "http://127.0.0.1:9999"] {
            let h = headers(&[("host", "127.0.0.1:8700"), ("origin", origin)]);
            assert!(cross_origin(&h, &r).is_some(), "{origin}");
        }
        let h = headers(&[("host", "127.0.0.1:8700"), ("sec-fetch-site", "cross-site")]);
        assert!(cross_origin(&h, &r).is_some());
    }
}

//! Request bodies: a JSON object, read within `service.max_body_bytes`, whose errors name
//! the field at fault.
//!
//! axum's `Json` would take `[]` or `[null, null]` for a struct (serde reads a struct from a
//! sequence too) and name no field in its errors; [`JsonObject`] refuses anything but an
//! object before deserialising, and reports serde's path (`results[3].status`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A request body that must be a JSON object deserialising into `T`.
#[derive(Debug)]
pub(crate) struct JsonObject<T>(pub(crate) T);

impl<T, S> FromRequest<S> for JsonObject<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !crate::protect::is_json(req.headers()) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON (Content-Type: application/json)",
            )
            .field("Content-Type"));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|r| {
            let status = r.status();
            let e = ApiError::new(status, r.body_text());
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                e.field("body")
            } else {
                e
            }
        })?;
        parse(&bytes).map(JsonObject)
    }
}

/// `bytes` as a JSON object of `T`, or a 400 naming the field at fault.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
    if first != Some(b'{') {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object ({…})",
        )
        .field("body"));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        // serde's path names an unknown field already, a missing one's container only.
        let field = match named_field(&message) {
            Some(name) if path == "." => name.to_owned(),
            Some(name) if !path.ends_with(name) => format!("{path}.{name}"),
            _ => path,
        };
        let e = ApiError::new(StatusCode::BAD_REQUEST, message);
        if field == "." {
            e.field("body")
        } else {
            e.field(&field)
        }
    })?;
    de.end().map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, format!("after the object: {e}")).field("body")
    })?;
    Ok(value)
}

/// The field serde's message names (`unknown field `x``, `missing field `urls``).
fn named_field(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("missing field `"))?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Update {
        #[serde(default)]
        delay_ms: Option<u64>,
        #[serde(default)]
        #[allow(dead_code)]
        items: Vec<Item>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        #[allow(dead_code)]
        status: u16,
    }

    async fn error_of(body: &str) -> (StatusCode, serde_json::Value) {
        let r = parse::<Update>(body.as_bytes())
            .unwrap_err()
            .into_response();
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn only_an_object_is_taken_and_errors_name_the_field() {
        assert_eq!(
            parse::<Update>(b" {\"delay_ms\": 5}").unwrap().delay_ms,
            Some(5)
        );
        for not_object in ["[]", "[null,null]", "null", "5", "\"x\"", ""] {
            let (status, e) = error_of(not_object).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{not_object}");
            assert_eq!(e["field"], "body", "{not_object}: {e}");
        }
        let (_, e) = error_of("{\"delay_ms\": \"x\"}").await;
        assert_eq!(e["field"], "delay_ms", "{e}");
        let (_, e) = error_of("{\"nope\": 1}").await;
        assert_eq!(e["field"], "nope", "{e}");
        let (_, e) = error_of("{\"items\": [{\"status\": 200}, {\"status\": -1}]}").await;
        assert_eq!(e["field"], "items[1].status", "{e}");
        let (_, e) = error_of("{\"items\": [{\"status\": 200, \"x\": 1}]}").await;
        assert_eq!(e["field"], "items[0].x", "{e}");
        let (_, e) = error_of("{\"items\": [{}]}").await;
        assert_eq!(e["field"], "items[0].status", "{e}");
        let (_, e) = error_of("{} {}").await;
        assert_eq!(e["field"], "body", "{e}");
    }
}

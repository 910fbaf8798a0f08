//! The API's one error: a status and a JSON body naming the reason and, where one is to
//! blame, the field. Every refusal — a handler's, an extractor's, a request check's — is one.

use axum::extract::rejection::QueryRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::types::ErrorBody;

/// An API error: a status and a JSON body naming the reason (and the field).
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, error: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                error: error.into(),
                field: None,
            },
        }
    }

    pub(crate) fn field(mut self, field: &str) -> Self {
        self.body.field = Some(field.to_owned());
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, r.body_text())
    }
}

//! `?crawl=ID` on every `/api/v1` route: which of the service's crawls
//! ([`engine::crawls::Crawls`]: `DEFAULT`, the crawl the service runs, and those url-frontier
//! clients made) a call is about.
//!
//! Design choices:
//! - **One layer, no handler changes**: [`select_crawl`] resolves the parameter once, takes it
//!   out of the query (the handlers' own query parameters refuse unknown fields) and leaves
//!   the crawl in the request; handlers take [`CrawlState`], the app's state with that
//!   crawl's handle, where they took the state.
//! - **The API never makes a crawl**: an ID nobody made is 404 (url-frontier puts make
//!   crawls); an ID that cannot be one is 400. Without the parameter, `DEFAULT`.
//! - **Checked after the token**: a caller without it learns nothing of the crawls' names.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engine::crawls::{Crawl, Crawls};

use crate::error::ApiError;
use crate::AppState;

/// The query parameter naming a crawl.
pub(crate) const PARAM: &str = "crawl";

/// The crawl a request names.
#[derive(Debug, Clone)]
struct Selected(Crawl);

/// The app's state with the handle of the crawl the request names (`?crawl=ID`).
#[derive(Debug, Clone)]
pub(crate) struct CrawlState(pub(crate) AppState);

impl FromRequestParts<AppState> for CrawlState {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        let mut state = state.clone();
        if let Some(Selected(crawl)) = parts.extensions.get::<Selected>() {
            state.control = crawl.control.clone();
        }
        Ok(CrawlState(state))
    }
}

/// The crawl `?crawl=` names and the query without it; `None` when it names none.
fn split_query(query: &str) -> Result<(Option<String>, String), ApiError> {
    // Decoded first: `cr%61wl=` names a crawl too.
    let named = form_urlencoded::parse(query.as_bytes()).any(|(key, _)| key == PARAM);
    if !named {
        return Ok((None, query.to_owned()));
    }
    let mut id = None;
    let mut rest = form_urlencoded::Serializer::new(String::new());
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key != PARAM {
            rest.append_pair(&key, &value);
        } else if id.replace(value.into_owned()).is_some() {
            return Err(ApiError::new(StatusCode::BAD_REQUEST, "`crawl` given twice").field(PARAM));
        }
    }
    Ok((id, rest.finish()))
}

/// Resolves `?crawl=ID` (see the module's header).
pub(crate) async fn select_crawl(
    State(crawls): State<Arc<Crawls>>,
    mut request: Request,
    next: Next,
) -> Response {
    let query = request.uri().query().unwrap_or("");
    let (id, rest) = match split_query(query) {
        Ok((Some(id), rest)) => (id, rest),
        Ok((None, _)) => return next.run(request).await,
        Err(e) => return e.into_response(),
    };
    let crawl = match crawls.get(&id) {
        Ok(Some(crawl)) => crawl,
        Ok(None) => {
            return ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no crawl `{id}` in this service (GET /api/v1/crawls lists them; \
                     url-frontier clients make them)"
                ),
            )
            .field(PARAM)
            .into_response()
        }
        Err(e) => {
            return ApiError::new(StatusCode::BAD_REQUEST, e.to_string())
                .field(PARAM)
                .into_response()
        }
    };
    let path = request.uri().path();
    let uri = if rest.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{rest}")
    };
    match uri.parse::<Uri>() {
        Ok(uri) => *request.uri_mut() = uri,
        Err(e) => return ApiError::new(StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
    request.extensions_mut().insert(Selected(crawl));
    next.run(request).await
}

/// Declares `?crawl=` on every `/api/v1` path of the OpenAPI document (but the crawl list),
/// with the 404 for a crawl nobody made.
pub(crate) struct CrawlParam;

impl utoipa::Modify for CrawlParam {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::{ObjectBuilder, Ref, Required, ResponseBuilder, Type};
        let param = ParameterBuilder::new()
            .name(PARAM)
            .parameter_in(ParameterIn::Query)
            .required(Required::False)
            .description(Some(
                "The crawl the call is about (GET /api/v1/crawls lists them); DEFAULT, the \
                 crawl the service runs, when none is given (or it is empty).",
            ))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^$|^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"))
                    .max_length(Some(engine::crawls::MAX_ID_LEN)),
            ))
            .build();
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    utoipa::openapi::ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        let bad = error("A parameter is invalid (`crawl`: not a crawl ID)");
        let not_found = error("No crawl of that ID in this service");
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/api/v1/") || path == "/api/v1/crawls" {
                continue;
            }
            item.parameters
                .get_or_insert_with(Vec::new)
                .push(param.clone());
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                for (code, answer) in [("400", &bad), ("404", &not_found)] {
                    op.responses
                        .responses
                        .entry(code.to_owned())
                        .or_insert_with(|| answer.clone().into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crawl_is_taken_out_of_the_query_and_the_rest_kept() {
        assert_eq!(split_query("").unwrap(), (None, String::new()));
        assert_eq!(
            split_query("limit=5&sort=name").unwrap(),
            (None, "limit=5&sort=name".to_owned())
        );
        assert_eq!(
            split_query("limit=5&crawl=news&sort=name").unwrap(),
            (Some("news".to_owned()), "limit=5&sort=name".to_owned())
        );
        assert_eq!(
            split_query("crawl=a%2Eb").unwrap(),
            (Some("a.b".to_owned()), String::new())
        );
        assert_eq!(split_query("crawl").unwrap().0.as_deref(), Some(""));
        assert!(split_query("crawl=a&crawl=b").is_err());
        assert_eq!(
            split_query("cr%61wl=x&q=a+b%2B").unwrap(),
            (Some("x".to_owned()), "q=a+b%2B".to_owned())
        );
    }
}

//! The token check of every RPC: `authorization: Bearer <service.api_token>` metadata, as the
//! HTTP API's header (the same function compares it, in constant time). It runs before the
//! request's message is decoded, so a client without the token costs no decoding.

use std::fmt;
use std::sync::Arc;

use tonic::service::Interceptor;
use tonic::{Request, Status};

/// The service's token ("" = none: every call passes).
#[derive(Clone)]
pub(crate) struct Token(Arc<str>);

impl Token {
    pub(crate) fn new(token: &str) -> Self {
        Self(token.into())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the token itself.
        f.debug_struct("Token")
            .field("set", &!self.0.is_empty())
            .finish()
    }
}

impl Interceptor for Token {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if service::authorized(presented, &self.0) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "missing or wrong token: send `authorization: Bearer <service.api_token>` \
                 metadata",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: Option<&str>) -> Request<()> {
        let mut r = Request::new(());
        if let Some(v) = value {
            r.metadata_mut().insert("authorization", v.parse().unwrap());
        }
        r
    }

    #[test]
    fn only_the_token_passes_when_one_is_set() {
        let mut t = Token::new("0123456789abcdef");
        assert!(t.call(with(Some("Bearer 0123456789abcdef"))).is_ok());
        assert!(t.call(with(Some("bearer 0123456789abcdef"))).is_ok());
        for wrong in [
            None,
            Some("Bearer 0123456789abcde"),
            Some("0123456789abcdef"),
        ] {
            let e = t.call(with(wrong)).unwrap_err();
            assert_eq!(e.code(), tonic::Code::Unauthenticated, "{wrong:?}");
        }
        assert!(!format!("{t:?}").contains("0123"));
        let mut none = Token::new("");
        assert!(none.call(with(None)).is_ok());
    }
}

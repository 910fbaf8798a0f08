//! A changing page's answer: the version current when the request arrived, its validators,
//! and a 304 when the request's conditions say the client has that version already.
//!
//! RFC 9110 §13.2.2's order: `If-None-Match`, when sent, decides alone (weak comparison, `*`
//! matches any); otherwise `If-Modified-Since` against the version's `Last-Modified`, whose
//! whole seconds are all a date can carry — two versions within one second look alike to
//! it, as on any server.

use std::time::{Duration, SystemTime};

use hyper::header::{HeaderValue, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use hyper::{Response, StatusCode};

use super::{full, html_response, Asked, ResponseBody};
use crate::model::{HostId, Site};

/// The version of a changing page a response served, for the request log.
#[derive(Debug, Clone, Copy)]
pub(super) struct Served(pub(super) u64);

/// What the request's conditions say of the version current now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The client has it: 304.
    NotModified,
    /// Send it: 200.
    Full,
}

/// Whether `list` (an `If-None-Match` value) names the current version: `*` (any), or
/// `etag` by weak comparison.
fn none_match_names(list: &str, etag: Option<&str>) -> bool {
    let opaque = |t: &str| t.trim().trim_start_matches("W/").to_owned();
    list.trim() == "*" || etag.is_some_and(|e| list.split(',').any(|t| opaque(t) == opaque(e)))
}

/// The answer to `headers` for a version with these validators.
fn answer(
    headers: &hyper::HeaderMap,
    etag: Option<&str>,
    last_modified: Option<SystemTime>,
) -> Answer {
    if let Some(inm) = headers.get(IF_NONE_MATCH) {
        let names = inm.to_str().is_ok_and(|list| none_match_names(list, etag));
        return if names {
            Answer::NotModified
        } else {
            Answer::Full
        };
    }
    let since = headers
        .get(IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    match (since, last_modified) {
        (Some(since), Some(lm)) if whole_seconds(lm) <= since => Answer::NotModified,
        _ => Answer::Full,
    }
}

fn whole_seconds(t: SystemTime) -> SystemTime {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

/// Page `p` at `path` on host `h` as the request `asked` finds it; the site started at
/// `started` (wall clock).
pub(super) fn respond(
    site: &Site,
    h: HostId,
    path: &str,
    p: u64,
    asked: &Asked<'_>,
    started: SystemTime,
) -> Response<ResponseBody> {
    let v = site.version_at(p, asked.arrived.as_secs_f64());
    let validators = site.validators(p);
    let etag = validators.etag.then(|| site.etag(p, v));
    let last_modified = validators
        .last_modified
        .then(|| started + Duration::from_secs_f64(site.change_time(p, v)));
    let mut r = match answer(asked.headers, etag.as_deref(), last_modified) {
        Answer::NotModified => {
            let mut r = Response::new(full(Vec::new()));
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            r
        }
        Answer::Full => html_response(site, h, path, &site.page_html_at(p, v), asked.accepts),
    };
    if let Some(tag) = &etag {
        r.headers_mut()
            .insert(ETAG, HeaderValue::from_str(tag).expect("ASCII tag"));
    }
    if let Some(lm) = last_modified {
        let date = httpdate::fmt_http_date(lm);
        r.headers_mut().insert(
            LAST_MODIFIED,
            HeaderValue::from_str(&date).expect("ASCII date"),
        );
    }
    r.extensions_mut().insert(Served(v));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> hyper::HeaderMap {
        let mut h = hyper::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn if_none_match_decides_before_if_modified_since() {
        let lm = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let later = httpdate::fmt_http_date(lm + Duration::from_secs(10));
        let earlier = httpdate::fmt_http_date(lm - Duration::from_secs(10));
        let tag = Some("\"39-2\"");
        let ask = |pairs: &[(&'static str, &str)]| answer(&headers(pairs), tag, Some(lm));
        assert_eq!(ask(&[]), Answer::Full);
        assert_eq!(ask(&[("if-none-match", "\"39-2\"")]), Answer::NotModified);
        assert_eq!(
            ask(&[("if-none-match", "W/\"39-2\"")]),
            Answer::NotModified,
            "weak"
        );
        assert_eq!(
            ask(&[("if-none-match", "\"x\", \"39-2\"")]),
            Answer::NotModified
        );
        assert_eq!(ask(&[("if-none-match", "*")]), Answer::NotModified);
        // A stale tag loses even with a date that would match.
        assert_eq!(
            ask(&[("if-none-match", "\"39-1\""), ("if-modified-since", &later)]),
            Answer::Full
        );
        assert_eq!(ask(&[("if-modified-since", &later)]), Answer::NotModified);
        assert_eq!(
            ask(&[("if-modified-since", &httpdate::fmt_http_date(lm))]),
            Answer::NotModified
        );
        assert_eq!(ask(&[("if-modified-since", &earlier)]), Answer::Full);
        assert_eq!(ask(&[("if-modified-since", "yesterday")]), Answer::Full);
        // A page without validators is sent whole unless any version will do.
        assert_eq!(
            answer(&headers(&[("if-none-match", "\"39-2\"")]), None, None),
            Answer::Full
        );
        assert_eq!(
            answer(&headers(&[("if-modified-since", &later)]), None, None),
            Answer::Full
        );
        assert_eq!(
            answer(&headers(&[("if-none-match", "*")]), None, None),
            Answer::NotModified
        );
    }
}

//! Which queue a canonical URL goes to: its host's politeness key, or a client's key.

use url::Url;

/// The politeness key of a canonical URL: its authority without user info — `host`, or
/// `host:port` when the port is not the scheme's default (canonical URLs omit it).
pub fn host_key(url: &Url) -> &str {
    &url[url::Position::BeforeHost..url::Position::AfterPort]
}

/// The queue a canonical URL goes to: the key its client gave, or its [`host_key`].
pub fn queue_key<'a>(client: Option<&'a crate::ClientInfo>, url: &'a Url) -> &'a str {
    client
        .and_then(crate::ClientInfo::key)
        .unwrap_or_else(|| host_key(url))
}

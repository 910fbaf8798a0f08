//! Which address a host's requests go to, for politeness per address: the name resolved
//! through the same path the client connects with (a `fetch.resolve` rule, else the system's
//! resolver, then the SSRF guard), the smallest address of the answer taken — so a
//! round-robin name stays in one group however its answers are ordered —, and kept for
//! [`TTL`] (the system's resolver says no TTL: the lower bound BUbiNG and Heritrix use for
//! positive answers). A name that does not resolve is not cached: its fetch fails with
//! today's record, and its host stays in no group.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an answer is kept.
pub const TTL: Duration = Duration::from_secs(60);
/// Most names kept; past it, expired answers go first, then all.
const MAX_NAMES: usize = 100_000;

/// The cache of answers: `(name, port)` → the address and when it expires.
#[derive(Debug, Default)]
pub(crate) struct Addresses {
    answers: Mutex<HashMap<(String, u16), (IpAddr, Instant)>>,
}

impl Addresses {
    /// The cached address of `name` on `port`, if it has not expired at `now`.
    pub(crate) fn get(&self, name: &str, port: u16, now: Instant) -> Option<IpAddr> {
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers
            .get(&(name.to_owned(), port))
            .filter(|(_, until)| *until > now)
            .map(|(ip, _)| *ip)
    }

    /// Keeps `ip` as `name`'s address on `port` from `now` for [`TTL`].
    pub(crate) fn put(&self, name: &str, port: u16, ip: IpAddr, now: Instant) {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.len() >= MAX_NAMES {
            answers.retain(|_, (_, until)| *until > now);
            if answers.len() >= MAX_NAMES {
                answers.clear();
            }
        }
        answers.insert((name.to_owned(), port), (ip, now + TTL));
    }
}

/// The address a host's politeness counts: the smallest of `found`.
pub(crate) fn smallest(found: impl IntoIterator<Item = IpAddr>) -> Option<IpAddr> {
    found.into_iter().min()
}

impl crate::Fetcher {
    /// The address `url`'s host is fetched at, as far as politeness per address goes: an IP
    /// literal as it is; a name resolved as the client resolves it (a `fetch.resolve` rule or
    /// the system's resolver, through the SSRF guard), the smallest address of the answer,
    /// kept for [`TTL`]. `None`: no host, or the name does not resolve (to an
    /// allowed address).
    pub async fn address(&self, url: &url::Url) -> Option<std::net::IpAddr> {
        let name = match url.host()? {
            url::Host::Ipv4(ip) => return Some(ip.into()),
            url::Host::Ipv6(ip) => return Some(ip.into()),
            url::Host::Domain(name) => name.to_ascii_lowercase(),
        };
        let port = crate::guard::port_of(url);
        let now = std::time::Instant::now();
        if let Some(ip) = self.addresses.get(&name, port, now) {
            return Some(ip);
        }
        let found = self.names.resolve(name.clone(), port).await.ok()?;
        let ip = smallest(found.iter().map(|a| a.ip()))?;
        self.addresses.put(&name, port, ip, now);
        Some(ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_for_their_ttl_per_name_and_port() {
        let a = Addresses::default();
        let now = Instant::now();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(a.get("a.test", 80, now), None);
        a.put("a.test", 80, ip, now);
        assert_eq!(a.get("a.test", 80, now), Some(ip));
        assert_eq!(a.get("a.test", 8080, now), None);
        assert_eq!(a.get("a.test", 80, now + TTL), None, "expired");
    }

    #[test]
    fn the_smallest_address_is_the_group() {
        let found: Vec<IpAddr> = ["192.0.2.9", "192.0.2.3", "192.0.2.200"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(smallest(found), Some("192.0.2.3".parse().unwrap()));
        assert_eq!(smallest(Vec::new()), None);
    }
}

//! The SSRF guard (`fetch.allow_private = false`): a crawler that follows links from the open
//! web, and takes seeds over an API, must not be steered into the networks behind it —
//! loopback, private ranges, link-local (cloud metadata at 169.254.169.254), CGNAT,
//! unique-local IPv6, multicast and broadcast.
//!
//! Design choices:
//! - **The decision is on socket addresses, not names.** A non-public target is refused
//!   unless its exact *(address, port)* is one that an operator's seed (flags, seed file,
//!   configuration) resolves to. Allowing a *host* would allow every port of it: a page on
//!   `http://127.0.0.1:8080/` could send the crawler to `127.0.0.1:9999`, and with
//!   `fetch.resolve = {"*.test" = "127.0.0.1"}` any `x.test:PORT` to any local service.
//! - **`fetch.resolve` grants nothing.** It only says where a name points; a wildcard cannot
//!   widen what the seeds allow.
//! - **Checked where the connection is made.** IP-literal hosts are checked before the
//!   request; names are checked in the resolver the HTTP client connects with, with the
//!   port of the URL, so a name that resolves or rebinds to a private address is refused
//!   whatever it answered before.
//! - **A seed's origin keeps what it resolves to.** The seeds' origins are resolved at the
//!   start, and again whenever the client connects to one of them (a container restarted
//!   under a new address is still the operator's seed); the addresses found are allowed on
//!   the seed's port only.
//!
//! Seeds added over the API follow the guard unless `service.allow_private_seeds`.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::RwLock;

/// The mark every refusal carries, so a fetch error can be told apart from a network's.
pub const BLOCKED: &str = "(fetch.allow_private)";

/// Why a URL is not fetched.
pub fn blocked(addr: SocketAddr) -> String {
    format!("blocked address {addr} {BLOCKED}")
}

/// Whether `ip` is an address a public crawl must not reach: loopback, unspecified, RFC 1918
/// private, link-local, CGNAT (100.64/10), "this network" (0/8), broadcast, multicast,
/// IPv6 unique-local (fc00::/7) and link-local (fe80::/10), and IPv4 addresses mapped or
/// embedded in IPv6.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                // IPv4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96) forms.
                || (v6.segments()[..6] == [0; 6] && !v6.is_unspecified())
                || (v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0])
        }
    }
}

/// The guard of one crawl.
#[derive(Debug)]
pub struct Guard {
    allow_private: bool,
    /// The operator's origins: (host as URLs write it, lower case; port).
    origins: RwLock<HashSet<(String, u16)>>,
    /// The socket addresses those origins resolved to.
    sockets: RwLock<HashSet<SocketAddr>>,
}

/// The port `url` connects to (its own, or its scheme's default).
pub fn port_of(url: &url::Url) -> u16 {
    url.port_or_known_default().unwrap_or(80)
}

impl Guard {
    /// A guard that refuses private addresses (unless `allow_private`) but those the
    /// operator's origins resolve to ([`allow_origin`](Self::allow_origin)).
    pub fn new(allow_private: bool) -> Self {
        Self {
            allow_private,
            origins: RwLock::default(),
            sockets: RwLock::default(),
        }
    }

    /// Whether the guard is off (`fetch.allow_private`).
    pub fn allows_everything(&self) -> bool {
        self.allow_private
    }

    /// Allows the origin of `url` (an operator's seed): an IP literal's socket address at
    /// once, a name's addresses on that port once it resolves ([`filter`](Self::filter)).
    pub fn allow_origin(&self, url: &url::Url) {
        let Some(host) = url.host_str() else { return };
        let port = port_of(url);
        write(&self.origins).insert((host.to_ascii_lowercase(), port));
        let ip = match url.host() {
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
            _ => return,
        };
        self.allow_socket(SocketAddr::new(ip, port));
    }

    /// Allows one socket address (what an operator's origin resolved to).
    pub fn allow_socket(&self, addr: SocketAddr) {
        write(&self.sockets).insert(addr);
    }

    /// Whether `host:port` is an operator's origin.
    pub fn is_origin(&self, host: &str, port: u16) -> bool {
        let origins = self.origins.read().unwrap_or_else(|e| e.into_inner());
        origins.contains(&(host.to_ascii_lowercase(), port))
    }

    /// Whether the client may connect to `addr`.
    pub fn socket_allowed(&self, addr: SocketAddr) -> bool {
        self.allow_private
            || !is_private(addr.ip())
            || self
                .sockets
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&addr)
    }

    /// The check before a request: an IP-literal host whose socket address is private and
    /// not allowed is refused (names are checked when they resolve). `Err` is the record's
    /// reason.
    pub fn check_url(&self, url: &url::Url) -> Result<(), String> {
        let ip = match url.host() {
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
            _ => return Ok(()),
        };
        let addr = SocketAddr::new(ip, port_of(url));
        if self.socket_allowed(addr) {
            Ok(())
        } else {
            Err(blocked(addr))
        }
    }

    /// The resolver's check of `host:port` (a name): the addresses the client may connect
    /// to, with `port`; `Err` (the reason) when none is left. The addresses of an operator's
    /// origin are all kept, and allowed from then on.
    pub fn filter(
        &self,
        host: &str,
        port: u16,
        found: impl IntoIterator<Item = IpAddr>,
    ) -> Result<Vec<SocketAddr>, String> {
        let found: Vec<SocketAddr> = found
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect();
        if self.allow_private {
            return Ok(found);
        }
        if self.is_origin(host, port) {
            let mut sockets = write(&self.sockets);
            sockets.extend(found.iter().copied().filter(|a| is_private(a.ip())));
            return Ok(found);
        }
        let first_refused = found.iter().copied().find(|&a| !self.socket_allowed(a));
        let allowed: Vec<_> = found
            .into_iter()
            .filter(|&a| self.socket_allowed(a))
            .collect();
        match (allowed.is_empty(), first_refused) {
            (true, Some(addr)) => Err(blocked(addr)),
            _ => Ok(allowed),
        }
    }
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn u(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn private_addresses_are_told_apart_from_public_ones() {
        for private in [
            "127.0.0.1",
            "127.0.0.2",
            "10.0.0.5",
            "172.16.3.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "64:ff9b::a00:5",
        ] {
            assert!(is_private(ip(private)), "{private}");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:93.184.216.34",
        ] {
            assert!(!is_private(ip(public)), "{public}");
        }
    }

    #[test]
    fn literals_are_refused_unless_the_operator_named_the_socket_address() {
        let g = Guard::new(false);
        g.allow_origin(&u("http://127.0.0.1:8080/"));
        g.allow_origin(&u("http://[::1]:8080/"));
        assert!(g.check_url(&u("http://127.0.0.1:8080/a")).is_ok());
        assert!(g.check_url(&u("http://[::1]:8080/a")).is_ok());
        for refused in [
            "http://127.0.0.1:9999/secret",
            "http://127.0.0.1/",
            "http://127.0.0.2:8080/",
            "http://10.0.0.5/admin",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://[::1]:9999/",
            "http://0x7f.2/",
        ] {
            let why = g.check_url(&u(refused)).unwrap_err();
            assert!(
                why.starts_with("blocked address ") && why.ends_with(BLOCKED),
                "{why}"
            );
        }
        assert_eq!(
            g.check_url(&u("http://127.0.0.1:9999/")).unwrap_err(),
            format!("blocked address 127.0.0.1:9999 {BLOCKED}")
        );
        assert!(
            g.check_url(&u("http://example.com/")).is_ok(),
            "names resolve first"
        );
        assert!(g.check_url(&u("http://93.184.216.34:9999/")).is_ok());
        g.allow_origin(&u("http://10.0.0.5/"));
        assert!(g.check_url(&u("http://10.0.0.5/")).is_ok());
        assert!(g.check_url(&u("http://10.0.0.5:81/")).is_err());
        assert!(Guard::new(true).check_url(&u("http://10.0.0.5/")).is_ok());
    }

    #[test]
    fn names_keep_their_allowed_socket_addresses_only() {
        let g = Guard::new(false);
        g.allow_origin(&u("http://h0.test:8080/"));
        // A seed's origin keeps whatever it resolves to, on its port, and allows it.
        assert_eq!(
            g.filter("h0.test", 8080, [ip("127.0.0.1")]).unwrap(),
            [SocketAddr::new(ip("127.0.0.1"), 8080)]
        );
        // Another name on that socket address is allowed; on another port it is not.
        assert!(g.filter("h1.test", 8080, [ip("127.0.0.1")]).is_ok());
        assert_eq!(
            g.filter("h1.test", 9999, [ip("127.0.0.1")]).unwrap_err(),
            format!("blocked address 127.0.0.1:9999 {BLOCKED}")
        );
        // The seed's own name on another port is another origin.
        assert!(g.filter("h0.test", 9999, [ip("127.0.0.1")]).is_err());
        let why = g
            .filter("localhost", 80, [ip("127.0.0.1"), ip("::1")])
            .unwrap_err();
        assert_eq!(why, format!("blocked address 127.0.0.1:80 {BLOCKED}"));
        assert_eq!(
            g.filter("rebind.example", 80, [ip("10.0.0.1"), ip("93.184.216.34")])
                .unwrap(),
            [SocketAddr::new(ip("93.184.216.34"), 80)]
        );
        assert!(Guard::new(true)
            .filter("localhost", 9999, [ip("127.0.0.1")])
            .is_ok());
    }
}

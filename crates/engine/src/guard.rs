//! The SSRF guard (`fetch.allow_private = false`): a crawler that follows links from the open
//! web, and takes seeds over an API, must not be steered into the networks behind it —
//! loopback, private ranges, link-local (cloud metadata at 169.254.169.254), CGNAT,
//! unique-local IPv6.
//!
//! The check is on the addresses actually connected to: IP-literal hosts are checked before
//! the request, and names are checked in the resolver the HTTP client connects with, so a
//! name that resolves to a private address (or rebinds to one) is refused whatever it
//! answered before. The operator's own choices are allowed explicitly: the hosts of the seeds
//! given at start (flags, files, configuration) and every name `fetch.resolve` maps. Seeds
//! added over the API follow the guard unless `service.allow_private_seeds`.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::RwLock;

/// The mark every refusal carries, so a fetch error can be told apart from a network's.
pub const BLOCKED: &str = "(fetch.allow_private)";

/// Why a URL is not fetched.
pub fn blocked(ip: IpAddr) -> String {
    format!("blocked address {ip} {BLOCKED}")
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
    /// Hosts the operator named (lower case, IPv6 literals in brackets as URLs write them).
    allowed: RwLock<HashSet<String>>,
}

impl Guard {
    /// A guard that allows private addresses only for `hosts` (unless `allow_private`).
    pub fn new(allow_private: bool, hosts: impl IntoIterator<Item = String>) -> Self {
        Self {
            allow_private,
            allowed: RwLock::new(hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect()),
        }
    }

    /// Allows `host` (an operator's seed added at run time).
    pub fn allow_host(&self, host: &str) {
        self.allowed
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(host.to_ascii_lowercase());
    }

    /// Whether `host` may resolve to anything (the guard is off, or the operator named it).
    pub fn host_allowed(&self, host: &str) -> bool {
        self.allow_private
            || self
                .allowed
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&host.to_ascii_lowercase())
    }

    /// The check before a request: an IP-literal host that is private and not allowed is
    /// refused (names are checked when they resolve). `Err` is the record's reason.
    pub fn check_url(&self, url: &url::Url) -> Result<(), String> {
        let ip = match url.host() {
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
            _ => return Ok(()),
        };
        let host = url.host_str().unwrap_or_default();
        if is_private(ip) && !self.host_allowed(host) {
            return Err(blocked(ip));
        }
        Ok(())
    }

    /// The resolver's check: the addresses of a name that is not allowed, without the
    /// private ones; `Err` (the reason) when none is left.
    pub fn filter(
        &self,
        host: &str,
        addrs: Vec<std::net::SocketAddr>,
    ) -> Result<Vec<std::net::SocketAddr>, String> {
        if self.host_allowed(host) {
            return Ok(addrs);
        }
        let first_private = addrs.iter().find(|a| is_private(a.ip())).map(|a| a.ip());
        let public: Vec<_> = addrs.into_iter().filter(|a| !is_private(a.ip())).collect();
        match (public.is_empty(), first_private) {
            (true, Some(ip)) => Err(blocked(ip)),
            _ => Ok(public),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
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
    fn literals_are_refused_unless_the_operator_named_the_host() {
        let g = Guard::new(false, ["127.0.0.1".to_owned(), "[::1]".to_owned()]);
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert!(g.check_url(&u("http://127.0.0.1:8080/a")).is_ok());
        assert!(g.check_url(&u("http://[::1]:8080/a")).is_ok());
        for refused in [
            "http://127.0.0.2:8080/",
            "http://10.0.0.5/admin",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://0x7f.2/",
        ] {
            let why = g.check_url(&u(refused)).unwrap_err();
            assert!(
                why.starts_with("blocked address ") && why.ends_with(BLOCKED),
                "{why}"
            );
        }
        assert!(
            g.check_url(&u("http://example.com/")).is_ok(),
            "names resolve first"
        );
        g.allow_host("10.0.0.5");
        assert!(g.check_url(&u("http://10.0.0.5/")).is_ok());
        assert!(Guard::new(true, [])
            .check_url(&u("http://10.0.0.5/"))
            .is_ok());
    }

    #[test]
    fn names_keep_their_public_addresses_only() {
        let g = Guard::new(false, ["h0.test".to_owned()]);
        let sa = |s: &str| std::net::SocketAddr::new(ip(s), 0);
        assert_eq!(
            g.filter("h0.test", vec![sa("127.0.0.1")]).unwrap(),
            [sa("127.0.0.1")]
        );
        let why = g
            .filter("localhost", vec![sa("127.0.0.1"), sa("::1")])
            .unwrap_err();
        assert_eq!(why, format!("blocked address 127.0.0.1 {BLOCKED}"));
        assert_eq!(
            g.filter("rebind.example", vec![sa("10.0.0.1"), sa("93.184.216.34")])
                .unwrap(),
            [sa("93.184.216.34")]
        );
    }
}

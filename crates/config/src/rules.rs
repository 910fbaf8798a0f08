//! The rules that tie settings together (a timeout within another, a backend's URL, the
//! recrawl bounds, a scope's domains, the service's token and address): checked once every
//! layer is applied, each problem named with where its key was set.

use crate::problem::{Origin, Problem};
use crate::{CrawlConfig, DedupMode, FrontierBackend, ScopeKind};

/// Every cross-key problem of `c`; `origin` says where a key was set.
pub(crate) fn cross_key(c: &CrawlConfig, origin: impl Fn(&str) -> Origin) -> Vec<Problem> {
    let mut problems = Vec::new();
    if c.fetch.first_byte_timeout_ms > c.fetch.total_timeout_ms {
        problems.push(Problem {
            key: "fetch.first_byte_timeout_ms".into(),
            origin: origin("fetch.first_byte_timeout_ms"),
            message: "must not exceed fetch.total_timeout_ms".into(),
        });
    }
    if c.politeness.delay_factor > 0.0 && c.politeness.max_delay_ms < c.politeness.delay_ms {
        problems.push(Problem {
            key: "politeness.max_delay_ms".into(),
            origin: origin("politeness.max_delay_ms"),
            message: format!(
                "bounds the latency term from above and politeness.delay_ms ({} ms) from \
                 below: must not be less than it",
                c.politeness.delay_ms
            ),
        });
    }
    let redis = c.frontier.backend == FrontierBackend::Redis;
    let url = c.frontier.redis_url.trim();
    if redis
        && !url.is_empty()
        && ![
            "redis://",
            "rediss://",
            "redis+unix://",
            "unix://",
            "redis+cluster://",
            "rediss+cluster://",
        ]
        .iter()
        .any(|scheme| url.starts_with(scheme))
    {
        problems.push(Problem {
            key: "frontier.redis_url".into(),
            origin: origin("frontier.redis_url"),
            message: format!(
                "`{}` is not a Redis URL: redis://[user:password@]host:port/db \
                 (rediss:// for TLS, redis+unix:// for a socket, \
                 redis+cluster://host:port[,host:port…] for a Redis Cluster)",
                crate::redact::redact(url)
            ),
        });
    }
    let remote = c.frontier.backend == FrontierBackend::UrlFrontier;
    let address = c.frontier.urlfrontier_url.trim();
    if remote && !(address.starts_with("http://") || address.starts_with("https://")) {
        problems.push(Problem {
            key: "frontier.urlfrontier_url".into(),
            origin: origin("frontier.urlfrontier_url"),
            message: format!(
                "backend = \"urlfrontier\" needs the service's gRPC address, http://host:port \
                 (url-frontier's default port is 7071); got `{}`",
                crate::redact::redact(address)
            ),
        });
    }
    if remote && c.frontier.lease_secs.saturating_mul(1000) < c.fetch.total_timeout_ms + 10_000 {
        problems.push(Problem {
            key: "frontier.lease_secs".into(),
            origin: origin("frontier.lease_secs"),
            message: format!(
                "backend = \"urlfrontier\": the service's hold of a URL must outlast its fetch \
                 (fetch.total_timeout_ms) by 10 s or more, or a slow page is not recorded; \
                 at least {} s",
                (c.fetch.total_timeout_ms + 10_000).div_ceil(1000)
            ),
        });
    }
    if redis && c.frontier.redis_url.trim().is_empty() {
        problems.push(Problem {
            key: "frontier.redis_url".into(),
            origin: origin("frontier.redis_url"),
            message: "backend = \"redis\" needs the server's URL, e.g. \
                      redis://127.0.0.1:6379/0 (or --frontier-redis URL)"
                .into(),
        });
    }
    let r = &c.recrawl;
    if !(r.min_interval_secs <= r.interval_secs && r.interval_secs <= r.max_interval_secs) {
        problems.push(Problem {
            key: "recrawl.interval_secs".into(),
            origin: origin("recrawl.interval_secs"),
            message: format!(
                "must lie within [recrawl.min_interval_secs, recrawl.max_interval_secs]: \
                 {} <= {} <= {} does not hold",
                r.min_interval_secs, r.interval_secs, r.max_interval_secs
            ),
        });
    }
    if c.frontier.dedup == DedupMode::Exact && !c.crawl.persist && !redis && !remote {
        problems.push(Problem {
            key: "frontier.dedup".into(),
            origin: origin("frontier.dedup"),
            message: "dedup = \"exact\" keeps the exact set in the crawl state: it \
                      needs crawl.persist = true"
                .into(),
        });
    }
    if c.frontier.scope == ScopeKind::Domains && c.frontier.domains.is_empty() {
        problems.push(Problem {
            key: "frontier.domains".into(),
            origin: origin("frontier.domains"),
            message: "scope = \"domains\" needs at least one domain".into(),
        });
    }
    let token = &c.service.api_token;
    if !token.is_empty() && (token.len() < 16 || !token.bytes().all(|b| b.is_ascii_graphic())) {
        problems.push(Problem {
            key: "service.api_token".into(),
            origin: origin("service.api_token"),
            message: "a token must be at least 16 characters, without spaces or \
                      control characters (or empty: no token)"
                .into(),
        });
    }
    if c.service.listen.parse::<std::net::SocketAddr>().is_err() {
        problems.push(Problem {
            key: "service.listen".into(),
            origin: origin("service.listen"),
            message: format!(
                "`{}` is not an IP address and port (e.g. 127.0.0.1:8700)",
                c.service.listen
            ),
        });
    }
    let grpc = &c.service.grpc_listen;
    if !grpc.is_empty() {
        match grpc.parse::<std::net::SocketAddr>() {
            Err(_) => problems.push(Problem {
                key: "service.grpc_listen".into(),
                origin: origin("service.grpc_listen"),
                message: format!(
                    "`{grpc}` is not an IP address and port (e.g. 127.0.0.1:7071), nor \"\" (off)"
                ),
            }),
            Ok(addr)
                if addr.port() != 0
                    && c.service.listen.parse::<std::net::SocketAddr>().ok() == Some(addr) =>
            {
                problems.push(Problem {
                    key: "service.grpc_listen".into(),
                    origin: origin("service.grpc_listen"),
                    message: format!(
                        "`{grpc}` is service.listen too: the gRPC API needs a port of its own"
                    ),
                })
            }
            Ok(_) => {}
        }
    }
    for (pattern, target) in &c.fetch.resolve {
        if target.parse::<std::net::IpAddr>().is_err() {
            problems.push(Problem {
                key: format!("fetch.resolve.\"{pattern}\""),
                origin: origin("fetch.resolve"),
                message: format!("`{target}` is not an IP address"),
            });
        }
    }
    problems
}

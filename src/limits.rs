//! The process's open-file limit. Each fetch, each API client, the state database and the
//! output files take a file descriptor; the common soft limit of 1,024 is low for a crawl
//! with many connections and a service with clients, while the hard limit is usually far
//! higher. The soft limit is raised to the hard one at start (what any process may do), and
//! the API's connection cap is kept well under it so that clients can never take the
//! descriptors the crawl needs.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft limit in force
/// afterwards (`None` when unlimited or unknown).
pub fn raise_open_files() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => {
                    tracing::debug!(from = ?limit.current, to = ?limit.maximum, "open-file limit raised");
                }
                Err(e) => tracing::debug!(error = %e, "the open-file limit could not be raised"),
            }
        }
        getrlimit(Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The API's connection cap under an open-file limit of `nofile`: at most a quarter of it,
/// so that three quarters stay for the crawl (fetches, state, output, heartbeat).
pub fn connection_cap(configured: usize, nofile: Option<u64>) -> usize {
    match nofile {
        Some(n) => configured
            .min(usize::try_from(n / 4).unwrap_or(usize::MAX))
            .max(1),
        None => configured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_three_quarters_of_the_descriptors_to_the_crawl() {
        assert_eq!(connection_cap(256, Some(1024)), 256);
        assert_eq!(connection_cap(1000, Some(1024)), 256);
        assert_eq!(connection_cap(256, Some(256)), 64);
        assert_eq!(connection_cap(256, Some(2)), 1);
        assert_eq!(connection_cap(256, None), 256);
    }
}

//! What a Redis error means for the crawl: at the start (no room is its own error, exit 69)
//! and during it (full, unavailable, or failed for good; see [`frontier_error`]).

use frontier::FrontierError;
use redis::RetryMethod;

use crate::RedisFrontierError;

/// A Redis error at the start: no room (`OOM`) is [`RedisFrontierError::Full`].
pub(crate) fn start_error(e: redis::RedisError) -> RedisFrontierError {
    if e.code() == Some("OOM") {
        RedisFrontierError::Full(format!(
            "{e} (raise its maxmemory, or give the crawl a Redis with room)"
        ))
    } else {
        RedisFrontierError::Redis(e)
    }
}

/// A Redis error as the engine sees it, by what Redis said rather than by what redis-rs
/// would retry (it would give up on `OOM`, and retry refused credentials):
/// - out of memory (`OOM`): [`FrontierError::Full`] — the crawl's scripts all begin with a
///   write that Redis refuses when full, so a refused call changed nothing, and the crawl
///   waits for room;
/// - the connection lost, a timeout, Redis loading its data (`LOADING`), busy with a script
///   (`BUSY`), a replica answering during a failover (`READONLY`, `MASTERDOWN`, `TRYAGAIN`),
///   a script cache emptied by a restart (`NOSCRIPT`): [`FrontierError::Unavailable`],
///   retried;
/// - refused credentials or permissions (`NOAUTH`, `WRONGPASS`, `NOPERM`), keys of another
///   type than the crawl's (`WRONGTYPE`), anything else: [`FrontierError::Failed`] — the
///   crawl stops and says why.
pub(crate) fn frontier_error(e: redis::RedisError) -> FrontierError {
    let text = e.to_string();
    match e.code() {
        Some("OOM") => FrontierError::Full(format!(
            "Redis is out of memory (maxmemory reached): {text}"
        )),
        Some("LOADING") => FrontierError::Unavailable(format!("Redis is loading its data: {text}")),
        Some("BUSY") => FrontierError::Unavailable(format!("Redis is busy with a script: {text}")),
        Some("READONLY" | "MASTERDOWN" | "TRYAGAIN" | "CLUSTERDOWN") => FrontierError::Unavailable(
            format!("Redis does not take writes now (a replica, or a failover): {text}"),
        ),
        Some("NOSCRIPT") => FrontierError::Unavailable(text),
        Some("NOAUTH" | "WRONGPASS" | "NOPERM") => {
            FrontierError::Failed(format!("Redis refused this process' credentials: {text}"))
        }
        Some("WRONGTYPE") => FrontierError::Failed(format!(
            "a key of the crawl in Redis has another type (another program's data under \
             crawl:{{ID}}:?): {text}"
        )),
        _ if e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || !matches!(e.retry_method(), RetryMethod::NoRetry) =>
        {
            FrontierError::Unavailable(text)
        }
        _ => FrontierError::Failed(text),
    }
}

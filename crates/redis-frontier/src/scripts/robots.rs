//! The shared robots.txt: one process fetches an origin's file (a claim), every process
//! reads the verdict it stored.

/// A robots.txt verdict other processes stored, or the claim to fetch it. ARGV: origin,
/// holder, claim (ms). Returns the record, 1 (fetch it: the claim is this holder's) or 0
/// (another process holds the claim).
pub(super) const GET: &str = r"
local r = redis.call('GET', P .. 'robots:' .. ARGV[6])
if r then return r end
now_ms()
if redis.call('SET', P .. 'robots-claim:' .. ARGV[6], ARGV[7], 'NX', 'PX', ARGV[8]) then return 1 end
if redis.call('GET', P .. 'robots-claim:' .. ARGV[6]) == ARGV[7] then return 1 end
return 0
";

/// Stores a verdict (ARGV: origin, record, ttl ms) and drops the claim.
pub(super) const PUT: &str = r"
now_ms()
redis.call('SET', P .. 'robots:' .. ARGV[6], ARGV[7], 'PX', ARGV[8])
redis.call('DEL', P .. 'robots-claim:' .. ARGV[6])
return 1
";

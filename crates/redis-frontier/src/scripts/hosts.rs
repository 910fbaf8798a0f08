//! A host's pace and an operator's controls of it: robots.txt `Crawl-delay`, a late start,
//! the per-host controls, the crawl's default delay, and dropping a host's queue. The
//! helpers they call (`eff_pace`, `reschedule`, …) are the module's; see it for the keys.

/// A host's robots.txt `Crawl-delay` (ARGV: host, delay ms): the next fetch waits it from
/// the last fetch's start.
pub(super) const CRAWL_DELAY: &str = r"
now_ms()
local hk = hkey(ARGV[6])
redis.call('HSET', hk, 'crawl_delay', I(math.min(tonumber(ARGV[7]), B_MAX)))
local last = hnum(hk, 'last_start', -1)
if last >= 0 then
  redis.call('HSET', hk, 'next_at', I(math.max(hnum(hk, 'next_at', 0), last + eff_delay(hk))))
end
reschedule(ARGV[6])
return 1
";

/// A fetch of the host (ARGV: host) started late (its robots.txt came first): its next
/// fetch, and its address group's, wait from now.
pub(super) const CONTACTED: &str = r"
local hk = hkey(ARGV[6])
local now = now_ms()
redis.call('HSET', hk, 'last_start', I(now))
redis.call('HSET', hk, 'next_at', I(math.max(hnum(hk, 'next_at', 0), now + eff_delay(hk))))
group_contacted(ARGV[6], now)
reschedule(ARGV[6])
return 1
";

/// An operator's controls of a host. ARGV: host, delay (ms), most in flight, block for
/// (ms), budget, recrawl interval (s), most finished (0: none) — each empty to leave it.
/// Returns 0 for a host the crawl does not know.
pub(super) const SET_HOST: &str = r"
local host = ARGV[6]
if redis.call('SISMEMBER', P .. 'hosts', host) == 0 then return 0 end
local now = now_ms()
local hk = hkey(host)
if ARGV[7] ~= '' then
  redis.call('HSET', hk, 'delay', ARGV[7])
  -- The new delay counts from the last fetch's start, shorter or longer, as the local
  -- frontier's does; a host backing off keeps waiting (its wait may be a Retry-After).
  if hnum(hk, 'backoff', 0) == 0 then
    local last = hnum(hk, 'last_start', nil)
    local at = now
    if last then at = last + eff_pace(hk) end
    redis.call('HSET', hk, 'next_at', I(math.max(at, hnum(hk, 'held_at', 0))))
  end
end
if ARGV[8] ~= '' then redis.call('HSET', hk, 'max_inflight', ARGV[8]) end
if ARGV[9] ~= '' then
  local block = tonumber(ARGV[9])
  if block > 0 then block = now + block end
  redis.call('HSET', hk, 'blocked_until', I(block))
end
if ARGV[10] ~= '' then redis.call('HSET', hk, 'budget', ARGV[10]) end
if ARGV[11] and ARGV[11] ~= '' then redis.call('HSET', hk, 'recrawl_secs', ARGV[11]) end
if ARGV[12] and ARGV[12] ~= '' then
  if tonumber(ARGV[12]) > 0 then redis.call('HSET', hk, 'max_done', ARGV[12])
  else redis.call('HDEL', hk, 'max_done') end
end
-- Any control of its address group's representative hands the group's turn on (its own
-- time may be later now), as the local frontier does.
local g = redis.call('HGET', hk, 'ipg')
if g and redis.call('HGET', gkey(g), 'rep') == host then redis.call('HDEL', gkey(g), 'rep') end
reschedule(host)
if g then g_promote(g) end
return 1
";

/// Sets the crawl's default delay (ARGV: ms), for every process: it replaces their configured
/// one (`ARGV[2]`) in every script from now on.
pub(super) const SET_DEFAULT_DELAY: &str = r"
now_ms()
redis.call('HSET', P .. 'politeness', 'delay', ARGV[6])
return 1
";

/// The admission time (Unix s, `Entry::created`) of the entry starting at byte `at` of `el`:
/// the format-2 fields are skipped by their lengths to the flags byte, whose bit 3 says the
/// entry's last 4 bytes are the time. 0 when it has none (written before format 6).
pub(super) const CREATED_OF: &str = r"
local function created_of(el, at)
  local n = #el
  if n < at + 21 then return 0 end
  local p = at + 18 + struct.unpack('<I4', el, at + 14)
  if p + 3 > n then return 0 end
  local len = struct.unpack('<I4', el, p)
  p = p + 4
  if len ~= 4294967295 then p = p + len end
  p = p + 2
  if p + 3 > n then return 0 end
  len = struct.unpack('<I4', el, p)
  p = p + 4
  if len ~= 4294967295 then p = p + len end
  if p > n or bit.band(string.byte(el, p), 8) == 0 then return 0 end
  return struct.unpack('<I4', el, n - 3)
end
-- Whether a purge with `cutoff` (0: every URL) drops a URL admitted at `t`.
local function purged(t, cutoff)
  return cutoff == 0 or (t ~= 0 and t < cutoff)
end
";

/// Drops the URLs queued for a host (ARGV: host, cutoff): every one with cutoff 0, else
/// those admitted before it (Unix s; see `CREATED_OF`, which the script is given). Its state
/// and leases stay. Returns how many were dropped (0: none, or no such host). The crawl
/// clock's write comes first, so a full Redis refuses the call whole. A purge by age reads
/// the whole list in the script (an operator's call, as `DROP_ASLEEP`); every URL goes
/// without a read.
pub(super) const DELETE_QUEUE: &str = r"
local host = ARGV[6]
if redis.call('SISMEMBER', P .. 'hosts', host) == 0 then return 0 end
now_ms()
local hk = hkey(host)
local q = P .. 'q:' .. host
local cutoff = tonumber(ARGV[7] or 0)
local n
if cutoff == 0 then
  n = redis.call('LLEN', q)
  -- Freed in the background: a long queue does not hold up every process.
  redis.call('UNLINK', q)
else
  local kept = {}
  n = 0
  for _, el in ipairs(redis.call('LRANGE', q, 0, -1)) do
    if purged(created_of(el, 1), cutoff) then n = n + 1 else kept[#kept + 1] = el end
  end
  if n == 0 then return 0 end
  redis.call('DEL', q)
  for i = 1, #kept, 1000 do
    redis.call('RPUSH', q, unpack(kept, i, math.min(i + 999, #kept)))
  end
end
local counted = hnum(hk, 'queued', 0)
local gone = counted
if cutoff ~= 0 then gone = math.min(n, counted) end
redis.call('HSET', hk, 'queued', counted - gone)
if gone ~= 0 then redis.call('HINCRBY', P .. 'stats', 'queued', -gone) end
reschedule(host)
return n
";

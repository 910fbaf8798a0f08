//! Politeness per address in the scripts: hosts on one address group share its gap between
//! fetch starts (`politeness.ip_delay_ms`) and its fetches in flight (`max_per_ip`), on top
//! of their own limits — the local scheduler's groups (`frontier::scheduler::groups`), kept
//! in Redis so that every process of a crawl counts against the same address.
//!
//! Design choice: the `ready` set keeps its meaning, "hosts whose turn may come". A host
//! whose turn comes while its group holds it (full, or its gap not passed) waits in the
//! group's line (`gq:KEY`, first come first served, `h:HOST.parked`), and at most one waiting
//! host — the group's representative (`g:KEY.rep`) — is on `ready`, at the group's time. A
//! group of 1,000 names costs `ready` one entry, and its hosts take turns.
//!
//! Figures for `/metrics`, kept as they change (a scrape reads no group): `stats.ip_groups`,
//! `ip_groups_shared` (of more than one host), `ip_group_hosts_max` (the most hosts a group
//! has had) and `ip_waiting` (hosts in lines).
//!
//! Keys: `g:KEY` — `members`, `inflight`, `next_at` (crawl ms), `rep`, and the crawl's `gap`
//! (ms) and `max`, written by every placement (the settings are one crawl's: a process given
//! others is refused at start); `gq:KEY` — the line, scored by when each host joined it;
//! `h:HOST.ipg` — the host's group. A host is placed by the fetcher that resolved it (`PLACE`);
//! until then it is in none, and runs exactly as without groups — so does every host of a
//! crawl begun before groups existed. A host that moves takes its fetches in flight along.
//!
//! [`GROUPS`] replaces the module's `reschedule` and is included in every script.

/// The group helpers and the group-aware `reschedule` (after the module's helpers, before
/// anything that reschedules).
pub(super) const GROUPS: &str = r"
local function gkey(g) return P .. 'g:' .. g end
local function gqkey(g) return P .. 'gq:' .. g end
-- A host joins or leaves group `g`'s line; `stats.ip_waiting` counts the hosts in lines.
local function park(g, h, now)
  redis.call('HSET', hkey(h), 'parked', 1)
  if redis.call('ZADD', gqkey(g), 'NX', I(now), h) == 1 then
    redis.call('HINCRBY', P .. 'stats', 'ip_waiting', 1)
  end
end
local function unpark(g, h)
  redis.call('HDEL', hkey(h), 'parked')
  if redis.call('ZREM', gqkey(g), h) == 1 then
    redis.call('HINCRBY', P .. 'stats', 'ip_waiting', -1)
  end
end
-- A host's own readiness: whether it may be on the ready set (URLs queued, room for a
-- fetch, an operator's limit on URLs finished not spent), from when, its address group, and
-- whether it waits in the group's line.
local function host_state(host)
  local v = redis.call('HMGET', hkey(host), 'queued', 'inflight', 'max_inflight', 'next_at', 'blocked_until', 'done', 'max_done', 'ipg', 'parked')
  local queued, inflight = tonumber(v[1] or 0), tonumber(v[2] or 0)
  local maxin = tonumber(v[3] or -1)
  if maxin < 0 then maxin = D_MAX end
  -- An operator's limit on URLs finished, leases out counted: reached, nothing more.
  local spent = v[7] and tonumber(v[6] or 0) + inflight >= tonumber(v[7])
  local ok = queued > 0 and inflight < maxin and not spent
  return ok, math.max(tonumber(v[4] or 0), tonumber(v[5] or 0)), v[8], v[9]
end
-- Whether group `g` is full. A count left above zero with no lease out anywhere (a lost
-- write) is repaired here rather than holding the group's hosts for ever.
local function g_full(gk, n, max)
  if max <= 0 or n < max then return false end
  if redis.call('ZCARD', P .. 'leases') == 0 then
    redis.call('HSET', gk, 'inflight', 0)
    return false
  end
  return true
end
-- Whether group `g` takes no fetch at `now`: full, or its gap not passed.
local function g_holds(g, now)
  local gk = gkey(g)
  local v = redis.call('HMGET', gk, 'inflight', 'max', 'next_at')
  return g_full(gk, tonumber(v[1] or 0), tonumber(v[2] or 0)) or tonumber(v[3] or 0) > now
end
-- Puts group `g`'s first waiting host that can take a fetch on the ready set at the group's
-- time, unless one is there already or the group is full. A host whose own time is later
-- goes there at its own time (and meets the group then); one that can take no fetch leaves
-- the line, and comes back when its queue or its fetches change.
local function g_promote(g)
  local gk = gkey(g)
  local v = redis.call('HMGET', gk, 'inflight', 'max', 'next_at', 'rep')
  if v[4] or g_full(gk, tonumber(v[1] or 0), tonumber(v[2] or 0)) then return end
  local at = tonumber(v[3] or 0)
  while true do
    local w = redis.call('ZRANGE', gqkey(g), 0, 0)
    if #w == 0 then return end
    local h = w[1]
    unpark(g, h)
    local ok, own, hg = host_state(h)
    if ok and hg == g then
      if own > at then
        redis.call('ZADD', P .. 'ready', I(own), h)
      else
        redis.call('HSET', gk, 'rep', h)
        redis.call('ZADD', P .. 'ready', I(at), h)
        return
      end
    end
  end
end
-- Puts a host in the ready set (scored by when it may be fetched) or takes it out. A host
-- waiting in its group stays in the line (or leaves it, when it can take no fetch); the
-- group's representative keeps the group's time unless its own is later, when it hands the
-- turn on.
local function reschedule(host)
  local ok, own, g, parked = host_state(host)
  if parked and g then
    if not ok then unpark(g, host) end
    return
  end
  if g then
    local gk = gkey(g)
    if redis.call('HGET', gk, 'rep') == host then
      local at = tonumber(redis.call('HGET', gk, 'next_at') or 0)
      if ok and own <= at then
        redis.call('ZADD', P .. 'ready', I(at), host)
        return
      end
      redis.call('HDEL', gk, 'rep')
      if ok then
        redis.call('ZADD', P .. 'ready', I(own), host)
      else
        redis.call('ZREM', P .. 'ready', host)
      end
      g_promote(g)
      return
    end
  end
  if ok then
    redis.call('ZADD', P .. 'ready', I(own), host)
  else
    redis.call('ZREM', P .. 'ready', host)
  end
end
-- `host`'s turn came at `now` (it is first on the ready set; `g` its group, read once by the
-- caller): whether the group holds it, in which case it joins the group's line. Its group's
-- representative, it no longer is.
local function held_by_group(host, g, now)
  if not g then return false end
  local gk = gkey(g)
  if redis.call('HGET', gk, 'rep') == host then redis.call('HDEL', gk, 'rep') end
  if not g_holds(g, now) then return false end
  redis.call('ZREM', P .. 'ready', host)
  park(g, host, now)
  g_promote(g)
  return true
end
-- `host` (of group `g`) is about to be handed out alone (not through the ready set's
-- order): it leaves its group's line and no longer represents it.
local function leave_line(host, g)
  if not g then return end
  if redis.call('HGET', gkey(g), 'rep') == host then redis.call('HDEL', gkey(g), 'rep') end
  unpark(g, host)
end
-- A fetch of a host of group `g` was handed out at `now`: it counts in the group. Returns
-- whether there is one.
local function group_started(g, now)
  if not g then return false end
  local gk = gkey(g)
  redis.call('HINCRBY', gk, 'inflight', 1)
  local v = redis.call('HMGET', gk, 'next_at', 'gap')
  redis.call('HSET', gk, 'next_at', I(math.max(tonumber(v[1] or 0), now + tonumber(v[2] or 0))))
  g_promote(g)
  return true
end
-- A request to `host`'s address started at `now` outside a hand-out (its robots.txt): the
-- group's gap counts from it.
local function group_contacted(host, now)
  local g = redis.call('HGET', hkey(host), 'ipg')
  if not g then return end
  local v = redis.call('HMGET', gkey(g), 'next_at', 'gap')
  redis.call('HSET', gkey(g), 'next_at', I(math.max(tonumber(v[1] or 0), now + tonumber(v[2] or 0))))
end
-- A fetch of `host` ended: its group has room again.
local function group_done(host)
  local g = redis.call('HGET', hkey(host), 'ipg')
  if not g then return end
  if redis.call('HINCRBY', gkey(g), 'inflight', -1) < 0 then
    redis.call('HSET', gkey(g), 'inflight', 0)
  end
  g_promote(g)
end
";

/// Places a host in an address group (its fetcher resolved it). ARGV: host, the group's key,
/// whether the lease in hand was handed out under this group (1/0), the gap (ms), the most
/// in flight (0: no limit). The host joins the group, taking its fetches in flight along
/// (leaving the one it was in). Returns 1 when the lease in hand may be fetched now — one
/// handed out under this group was counted by its rules; any other must be within the
/// group's limit (itself counted) and gap, and then starts the gap —, else 0 (give it back).
pub(super) const PLACE: &str = r"
local now = now_ms()
local host, g, handed = ARGV[6], ARGV[7], ARGV[8] == '1'
local gk, hk = gkey(g), hkey(host)
redis.call('HSET', gk, 'gap', ARGV[9], 'max', ARGV[10])
local old = redis.call('HGET', hk, 'ipg')
if old == g and handed then return 1 end
if old ~= g then
  local n = hnum(hk, 'inflight', 0)
  if old then
    local ogk = gkey(old)
    local m = redis.call('HINCRBY', ogk, 'members', -1)
    if m == 0 then redis.call('HINCRBY', P .. 'stats', 'ip_groups', -1) end
    if m == 1 then redis.call('HINCRBY', P .. 'stats', 'ip_groups_shared', -1) end
    if redis.call('HINCRBY', ogk, 'inflight', -n) < 0 then redis.call('HSET', ogk, 'inflight', 0) end
    unpark(old, host)
    if redis.call('HGET', ogk, 'rep') == host then redis.call('HDEL', ogk, 'rep') end
    redis.call('HSET', hk, 'ipg', g)
    g_promote(old)
  end
  local m = redis.call('HINCRBY', gk, 'members', 1)
  if m == 1 then redis.call('HINCRBY', P .. 'stats', 'ip_groups', 1) end
  if m == 2 then redis.call('HINCRBY', P .. 'stats', 'ip_groups_shared', 1) end
  if m > tonumber(redis.call('HGET', P .. 'stats', 'ip_group_hosts_max') or 0) then
    redis.call('HSET', P .. 'stats', 'ip_group_hosts_max', m)
  end
  redis.call('HINCRBY', gk, 'inflight', n)
  redis.call('HSET', hk, 'ipg', g)
  reschedule(host)
end
local v = redis.call('HMGET', gk, 'inflight', 'next_at', 'max')
local max = tonumber(v[3] or 0)
if (max <= 0 or tonumber(v[1] or 0) <= max) and tonumber(v[2] or 0) <= now then
  redis.call('HSET', gk, 'next_at', I(now + tonumber(ARGV[9])))
  return 1
end
return 0
";

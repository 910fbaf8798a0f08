//! Politeness per address on a crawl of several partitions: an address' hosts may lie in
//! any partition, so its group cannot live beside their queues (`groups.rs`, one partition).
//!
//! Design choice: **the group lives in one partition — its home, chosen by its key — and
//! holds the fetches, not the hand-outs**. A lease is handed out as without groups; before
//! the fetch, its fetcher asks the group's home for a turn (`ACQUIRE`): a slot among
//! `max_per_ip`, with `ip_delay_ms` passed since the group's last start. A host refused for
//! the gap is given the group's next free turn (a reservation, first come first served) and
//! told to come back then; one refused because the group is full is told to come back after
//! the group's mean fetch time times the hosts waiting per slot, so that many hosts on one
//! address do not poll it in a loop. Its lease is given back with that wait, which its own
//! partition keeps as the host's next time. A slot is freed by its lease's completion
//! (`FREE`), or expires after `slot` ms (a process that died holding it).
//!
//! Keys (under the home partition's prefix): `ag:KEY` — `next_at` (crawl ms), `hold` (mean
//! ms a slot was held); `agi:KEY` — slots, lease token → expiry; `agr:KEY` — reserved turns,
//! host → crawl ms; `agw:KEY` — hosts refused for a full group, host → when; `agm:KEY` — the
//! group's hosts (figures: `stats.ip_groups`, `ip_groups_shared`, `ip_group_hosts_max`,
//! `ip_waiting`).

/// A turn for a fetch of `host` (its lease `token`) at group `g`. ARGV: g, host, token, gap
/// (ms), most in flight (0: no limit), slot (ms). Returns `{1, 0}` (fetch now; the slot is
/// taken, the gap starts) or `{0, wait}` (give the lease back; the host comes back after
/// `wait` ms).
pub(super) const ACQUIRE: &str = r"
local now = now_ms()
local g, host, token = ARGV[6], ARGV[7], ARGV[8]
local gap, max, slot = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local gk, ik, rk, wk = P .. 'ag:' .. g, P .. 'agi:' .. g, P .. 'agr:' .. g, P .. 'agw:' .. g
local S = P .. 'stats'
if redis.call('SADD', P .. 'agm:' .. g, host) == 1 then
  local m = redis.call('SCARD', P .. 'agm:' .. g)
  if m == 1 then redis.call('HINCRBY', S, 'ip_groups', 1) end
  if m == 2 then redis.call('HINCRBY', S, 'ip_groups_shared', 1) end
  if m > hnum(S, 'ip_group_hosts_max', 0) then redis.call('HSET', S, 'ip_group_hosts_max', m) end
end
local hold = hnum(gk, 'hold', 0)
-- Slots of a process that died expire; so do turns never claimed and waiters gone quiet.
redis.call('ZREMRANGEBYSCORE', ik, '-inf', I(now))
local gone = redis.call('ZREMRANGEBYSCORE', rk, '-inf', I(now - slot))
gone = gone + redis.call('ZREMRANGEBYSCORE', wk, '-inf', I(now - slot - 10 * hold))
if gone > 0 then redis.call('HINCRBY', S, 'ip_waiting', -gone) end
local function unwait()
  local n = redis.call('ZREM', rk, host) + redis.call('ZREM', wk, host)
  if n > 0 then redis.call('HINCRBY', S, 'ip_waiting', -n) end
end
local function wait_in(key, at)
  if redis.call('ZADD', key, I(at), host) == 1 then redis.call('HINCRBY', S, 'ip_waiting', 1) end
end
-- Placed again (its address changed back, a retry of the call): counted already.
if redis.call('ZSCORE', ik, token) then return {1, 0} end
local full = max > 0 and redis.call('ZCARD', ik) >= max
local function full_wait()
  local waiting = redis.call('ZCARD', wk) + redis.call('ZCARD', rk)
  return math.max(20, hold) * math.max(1, math.ceil(waiting / math.max(max, 1)))
end
local function take(start_gap)
  unwait()
  redis.call('ZADD', ik, I(now + slot), token)
  if start_gap then redis.call('HSET', gk, 'next_at', I(now + gap)) end
  return {1, 0}
end
local mine = redis.call('ZSCORE', rk, host)
if mine then
  -- A reserved turn: the gap was counted when it was given.
  mine = tonumber(mine)
  if now < mine then return {0, mine - now} end
  if not full then return take(false) end
  return {0, full_wait()}
end
local at = hnum(gk, 'next_at', 0)
if full then
  redis.call('ZREM', rk, host)
  wait_in(wk, now)
  return {0, full_wait()}
end
if at <= now then return take(true) end
-- The gap has not passed: the group's next free turn is this host's.
redis.call('ZREM', wk, host)
wait_in(rk, at)
redis.call('HSET', gk, 'next_at', I(at + gap))
return {0, at - now}
";

/// Frees lease `token`'s slot at group `g` (its fetch ended). ARGV: g, token, slot (ms).
/// The time it was held feeds the group's mean. Returns 1 if it was held.
pub(super) const FREE: &str = r"
local now = now_ms()
local g, token, slot = ARGV[6], ARGV[7], tonumber(ARGV[8])
local ik, gk = P .. 'agi:' .. g, P .. 'ag:' .. g
local expiry = redis.call('ZSCORE', ik, token)
if not expiry then return 0 end
redis.call('ZREM', ik, token)
local took = math.max(0, now - (tonumber(expiry) - slot))
local hold = redis.call('HGET', gk, 'hold')
if hold then took = math.floor((tonumber(hold) * 7 + took) / 8) end
redis.call('HSET', gk, 'hold', I(took))
return 1
";

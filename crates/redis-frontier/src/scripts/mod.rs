//! The server-side scripts: every change to the shared frontier is one Lua script, so it is
//! atomic against every other process (Redis runs one script at a time) and needs one round
//! trip. Times come from the server's clock (`TIME`), never a client's, so processes on
//! machines whose clocks differ still agree on delays and lease expiry.
//!
//! Two rules every script that changes the crawl keeps:
//! - **Its first write is one Redis refuses when out of memory** (the crawl clock's `HSET`,
//!   an admission's counters): under `maxmemory` Redis refuses a script's writes only until
//!   the script has written once, so a script whose first write is a deletion (`LPOP`,
//!   `HDEL`) would hand out or finish leases while every admission and renewal is refused.
//!   With the refusal first, a full Redis refuses each call whole — nothing is lost or
//!   half-done, and the crawl waits for room.
//! - **Time is the crawl's clock** (`now_ms`): the server's time less the time no script of
//!   the crawl ran for longer than `clock.step` (a quarter of a lease). While Redis is down or
//!   stopped, and every process is cut off, the clock stands still, so leases expire by the
//!   time the crawl could renew them: an outage longer than a lease does not hand live
//!   holders' leases to others. After an outage no lease expires for one lease plus the
//!   outage's length (at most four leases in all: `grace`), so a process that reconnects
//!   later than the others keeps its leases too. A process paused
//!   alone while others run does lose its leases.
//!
//! Keys (all under the crawl's prefix `crawl:{ID}:`, one hash slot):
//! - `visited` — the Bloom bitmap; `exact` — binary fingerprints (`dedup = "exact"`);
//! - `q:HOST` — a host's queue of encoded entries; `h:HOST` — a hash of its state (`queued`,
//!   `inflight`, `next_at`, `last_start`, `delay`, `crawl_delay`, `lat` (the latency term,
//!   ms), `backoff`, `backoff_lease`
//!   (the newest lease id when the back-off last grew), `held_at` (what errors hold the host
//!   to: its back-off wait, a `Retry-After`), `blocked_until`,
//!   `max_inflight`, `budget`, `admitted`, `done`, `errors`); `hosts` — every host;
//! - `ready` — hosts with queued URLs and room for a fetch, scored by when they may be
//!   fetched next (ms);
//! - `leases` — lease ids scored by expiry (ms); `leased` — id → `HOLDER\nHOST\nENTRY`;
//! - `stats` — crawl-wide counters (`queued`, `pages`, `offered`, `admitted`, `duplicates`,
//!   `oos:REASON`, `expired`, `lease_seq`: the newest lease id, at least the server's ms ×
//!   1024 when it was handed out, so ids never come back after Redis lost its last writes);
//!   `seeds` — seed URLs (they widen the scope);
//! - `due:S` — URLs asleep until second `S` of the server's clock (fetched under a recrawl
//!   schedule, or given a date by a client) (elements `HOST\nENTRY`, the entry carrying its history); `duez` — those
//!   seconds, scored by themselves; `stats.scheduled` counts the URLs in them; `dueat:B` —
//!   which second a sleeping URL is due at, by the high 8 bytes of its fingerprint, in
//!   buckets `B` by its low bits (small hashes, Redis' compact encoding), kept when the URL
//!   is promoted (overwritten when it sleeps again);
//! - `g:KEY`, `gq:KEY` and `h:HOST.ipg`/`parked` — address groups (politeness per address;
//!   see `groups.rs`);
//! - `politeness` — `delay`: an operator's default delay (ms) for every host without its own,
//!   in place of each process' configured one;
//! - `clock` — the crawl clock (`last`: server ms of the last script, `off`: ms not counted,
//!   `step`: the longest gap counted whole, a quarter of a lease; `grace`: no lease expires
//!   before this crawl time, a lease and the outage's length after the last outage).
//!
//! Every script takes `ARGV[1..5]` = prefix, default delay (ms), default `max_per_host`,
//! back-off base (ms), most back-off (ms); its own arguments follow.

mod address_home;
mod budget;
mod groups;
mod hosts;
mod renew;
mod robots;
mod schedule;

pub(crate) use renew::WRITE_PIN;
use renew::{HOLD, RENEW};

/// Helpers every script starts with.
const HELPERS: &str = r"
local P = ARGV[1]
-- The crawl's default delay: an operator's (`politeness`), else this process' configuration.
-- Read once, and only by a script that paces a host (admissions never do).
local D_DELAY = nil
local function default_delay()
  if not D_DELAY then
    D_DELAY = tonumber(redis.call('HGET', P .. 'politeness', 'delay') or ARGV[2])
  end
  return D_DELAY
end
local D_MAX = tonumber(ARGV[3])
local B_BASE = tonumber(ARGV[4])
local B_MAX = tonumber(ARGV[5])
local function I(x) return string.format('%d', x) end
-- The server's own time (ms) as the last `now_ms` read it: due times of recrawl schedules.
local SERVER_MS = 0
-- The crawl's clock (see the module header); its write comes first in every script that
-- changes the crawl.
local function now_ms()
  local t = redis.call('TIME')
  local server = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local c = redis.call('HMGET', P .. 'clock', 'last', 'off', 'step')
  local last, off, step = tonumber(c[1] or server), tonumber(c[2] or 0), tonumber(c[3] or 10000)
  local gap = server - last
  SERVER_MS = server
  -- A silence longer than a step is an outage: only a step of it counts, and no lease
  -- expires for a lease (four steps) plus the outage's length (at most three more leases)
  -- after it, so a process that reconnects later than another still renews in time. A
  -- server clock set back does not take the crawl's back.
  if gap > step then
    off = off + gap - step
    local grace = 4 * step + math.min(gap, 12 * step)
    redis.call('HSET', P .. 'clock', 'last', I(server), 'off', I(off), 'grace', I(server - off + grace))
  else
    if gap < 0 then off = off + gap end
    redis.call('HSET', P .. 'clock', 'last', I(server), 'off', I(off))
  end
  return server - off
end
local function hkey(host) return P .. 'h:' .. host end
local function hnum(hk, f, d)
  local v = redis.call('HGET', hk, f)
  if v then return tonumber(v) end
  return d
end
-- The gap between two fetch starts of a healthy host: its delay, `Crawl-delay` and latency
-- term (`lat`: set by a completion, see `frontier::PaceTerms`).
local function eff_pace(hk)
  local v = redis.call('HMGET', hk, 'delay', 'crawl_delay', 'lat')
  local d = tonumber(v[1] or -1)
  if d < 0 then d = default_delay() end
  return math.max(d, tonumber(v[2] or 0), tonumber(v[3] or 0))
end
-- The gap now in force: the pace, or the back-off while the host backs off.
local function eff_delay(hk)
  return math.max(eff_pace(hk), hnum(hk, 'backoff', 0))
end
local function push_front(host, entry)
  redis.call('LPUSH', P .. 'q:' .. host, entry)
  redis.call('HINCRBY', hkey(host), 'queued', 1)
  redis.call('HINCRBY', P .. 'stats', 'queued', 1)
end
-- An error of a lease handed out since the host last backed off (`current`) doubles the
-- back-off and starts a new round: leases up to the newest id then out are of the old one.
-- An error of an older lease is part of the failure that set the back-off; only a longer
-- hint extends it.
local function back_off(hk, now, hint, current)
  local wait = math.min(math.max(hint, 0), B_MAX)
  if current then
    local b = math.min(math.max(hnum(hk, 'backoff', 0) * 2, B_BASE), B_MAX)
    local newest = redis.call('HGET', P .. 'stats', 'lease_seq') or '0'
    redis.call('HSET', hk, 'backoff', I(b), 'backoff_lease', newest)
    wait = math.max(b, wait)
  end
  local held = math.max(hnum(hk, 'held_at', 0), now + wait)
  redis.call('HSET', hk, 'held_at', I(held), 'next_at', I(math.max(hnum(hk, 'next_at', 0), held)))
end
-- A backing-off host is paced to one fetch per back-off. Its next fetch may start at `at`,
-- not before what errors hold it to (a `Retry-After` of a fetch from before); a host whose
-- back-off began under scripts without `held_at` keeps its time.
local function repace(hk, at)
  local held = hnum(hk, 'held_at', nil) or hnum(hk, 'next_at', 0)
  redis.call('HSET', hk, 'next_at', I(math.max(held, at)))
end
";

/// The end of a lease (after the schedule's helpers, which it calls).
const FINISH: &str = r"
-- Ends lease `id` with `kind` (done, error, skip, retry, release); false if it is not out
-- (or, `holder` given, not that holder's). A final kind (done, error, skip) with `again` (an entry
-- carrying its next visit) puts the URL to sleep for `again_s` seconds of the server's clock.
local function finish(id, kind, hint, retry_entry, now, holder, again, again_s, at_b, at_f)
  local blob = redis.call('HGET', P .. 'leased', id)
  if not blob then return false end
  if holder and string.sub(blob, 1, #holder + 1) ~= holder .. '\n' then return false end
  redis.call('HDEL', P .. 'leased', id)
  redis.call('ZREM', P .. 'leases', id)
  local a = string.find(blob, '\n', 1, true)
  local b = string.find(blob, '\n', a + 1, true)
  local host = string.sub(blob, a + 1, b - 1)
  local entry = string.sub(blob, b + 1)
  local hk = hkey(host)
  local current = tonumber(id) > hnum(hk, 'backoff_lease', 0)
  redis.call('HINCRBY', hk, 'inflight', -1)
  group_done(host)
  if kind == 'done' or kind == 'skip' then
    if current and hnum(hk, 'backoff', 0) > 0 then
      if kind == 'done' then
        -- Went through: the back-off ends, the host is back to its pace from the last
        -- fetch's start, not a whole back-off later.
        redis.call('HSET', hk, 'backoff', 0)
        repace(hk, hnum(hk, 'last_start', 0) + eff_pace(hk))
      else
        -- A skip did not reach the host and leaves the back-off, but gives its turn back.
        repace(hk, now + eff_pace(hk))
      end
    end
    redis.call('HINCRBY', hk, 'done', 1)
    if kind == 'done' then
      redis.call('HINCRBY', P .. 'stats', 'pages', 1)
      -- The fetch's latency term (`hint`; -1: no duration said) paces the host from its
      -- last start on.
      if hint > 0 or (hint == 0 and hnum(hk, 'lat', 0) > 0) then
        redis.call('HSET', hk, 'lat', I(hint))
        local at = hnum(hk, 'last_start', now) + eff_pace(hk)
        if at > hnum(hk, 'next_at', 0) then redis.call('HSET', hk, 'next_at', I(at)) end
      end
    end
  elseif kind == 'error' then
    back_off(hk, now, hint, current)
    redis.call('HINCRBY', hk, 'done', 1)
    redis.call('HINCRBY', hk, 'errors', 1)
    redis.call('HINCRBY', P .. 'stats', 'pages', 1)
  elseif kind == 'retry' then
    back_off(hk, now, hint, current)
    redis.call('HINCRBY', hk, 'errors', 1)
    push_front(host, retry_entry)
  else
    push_front(host, entry)
    -- Given back with a wait (its address group had no room): the host waits that long.
    if hint > 0 then redis.call('HSET', hk, 'next_at', I(math.max(hnum(hk, 'next_at', 0), now + hint))) end
  end
  if again and again ~= '' and (kind == 'done' or kind == 'skip' or kind == 'error') then
    sleep_until(host, again, math.ceil(SERVER_MS / 1000) + tonumber(again_s), at_b, at_f)
  end
  reschedule(host)
  return true
end
";

/// Admits a page's links. ARGV: k, n (URLs), h (hosts), exact (0/1), default host budget (0:
/// none), order (`b`: append, `d`: prepend), force (1: queue even if seen, no budget — a
/// requeue), duplicates the client's near cache answered (counted as offered and seen), dated
/// (0/1), m, then m pairs (out-of-scope reason, count) counted as offered, then every URL's k
/// bit offsets, then per host: the host, its number of URLs, and per URL its 16-byte
/// fingerprint (only with exact), its entry and, only when dated, its due second (Unix, 0:
/// queue it now) and due index bucket and field — a URL with a date sleeps until then, as a
/// fetched one under a recrawl schedule; last, optionally, a fence: holder, lease (ms), lease
/// id.
/// The URLs come grouped by host (the client keeps their order within a host). Returns per
/// URL, in that order, 1 (admitted), 0 (seen) or 2 (over its host's budget); with a fence,
/// one more: 1 if the lease is still the holder's (then pinned as `HOLD` pins it), else 0.
///
/// A URL refused for its host's budget stays unseen, so a raised budget admits it later:
/// where the budget could refuse a URL its bits are read first and set only when it is
/// admitted; where it cannot (no budget, or room for every URL left), they are tested and set
/// in one call. The first write is the `offered` counter, refused whole by a full Redis.
///
/// The cost is per argument and per call, not in the work, so both are few: k offsets and
/// one entry a URL, a `BITFIELD_RO` of its bits and, when new, a `BITFIELD` setting them (a
/// URL twice in a page is new once), and per host one push, one counter update and, if its
/// queue was empty, one reschedule.
const ADMIT: &str = r"
local k, n, nh = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local exact, dbudget, order, force = ARGV[9] == '1', tonumber(ARGV[10]), ARGV[11], ARGV[12] == '1'
local near = tonumber(ARGV[13])
local dated = ARGV[14] == '1'
local m = tonumber(ARGV[15])
local a = 16
local offered = n + near
local oos = {}
for _ = 1, m do
  oos[#oos + 1] = {ARGV[a], ARGV[a + 1]}
  offered = offered + tonumber(ARGV[a + 1])
  a = a + 2
end
if not force then redis.call('HINCRBY', P .. 'stats', 'offered', offered) end
for _, o in ipairs(oos) do redis.call('HINCRBY', P .. 'stats', 'oos:' .. o[1], o[2]) end
local visited = P .. 'visited'
-- The URLs' bit offsets start at `bits`: URL u's are ARGV[bits + (u - 1) * k ...].
local bits = a
a = a + n * k
local out = {}
local dups, admitted, queued = 0, 0, 0
local u = 0
for _ = 1, nh do
  local host, count = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local hk = hkey(host)
  local room = count
  if not force then
    local v = redis.call('HMGET', hk, 'budget', 'admitted')
    local budget = tonumber(v[1] or -1)
    if budget < 0 then budget = dbudget end
    if budget > 0 then room = math.max(0, budget - tonumber(v[2] or 0)) end
  end
  local entries = {P .. 'q:' .. host}
  local refused, slept = 0, 0
  local first = u + 1
  for _ = 1, count do
    u = u + 1
    local b = bits + (u - 1) * k
    -- The URL's k bits in one BITFIELD, its arguments written out (see `Scripts::new`): set
    -- at once (the old bits say whether it is new) when the host's budget cannot refuse it,
    -- else read, and set below only if it is admitted.
    local sure = #entries - 1 + slept + (count - (u - first)) <= room
    local old
    if sure then
      old = redis.call('BITFIELD', visited, SETS)
    else
      old = redis.call('BITFIELD_RO', visited, GETS)
    end
    local fresh = false
    for i = 1, k do
      if old[i] == 0 then fresh = true end
    end
    local fp
    if exact then
      fp = ARGV[a]
      a = a + 1
      if not fresh then fresh = redis.call('SISMEMBER', P .. 'exact', fp) == 0 end
    end
    local due = 0
    if dated then due = tonumber(ARGV[a + 1]) end
    if not (fresh or force) then
      dups = dups + 1
      out[u] = 0
    elseif #entries - 1 + slept >= room then
      refused = refused + 1
      out[u] = 2
    else
      if not sure then redis.call('BITFIELD', visited, SETS) end
      if exact then redis.call('SADD', P .. 'exact', fp) end
      if due > 0 then
        -- Its date is a wall-clock date: the second it names, early or late.
        sleep_until(host, ARGV[a], due, ARGV[a + 2], ARGV[a + 3])
        slept = slept + 1
      else
        entries[#entries + 1] = ARGV[a]
      end
      out[u] = 1
    end
    a = a + 1
    if dated then a = a + 3 end
  end
  if refused > 0 then redis.call('HINCRBY', P .. 'stats', 'oos:host_budget', refused) end
  if slept > 0 then
    redis.call('SADD', P .. 'hosts', host)
    if not force then
      redis.call('HINCRBY', hk, 'admitted', slept)
      admitted = admitted + slept
    end
  end
  local took = #entries - 1
  if took > 0 then
    for c = 2, #entries, 1000 do
      local chunk = {entries[1]}
      for e = c, math.min(#entries, c + 999) do chunk[#chunk + 1] = entries[e] end
      if order == 'd' then redis.call('LPUSH', unpack(chunk)) else redis.call('RPUSH', unpack(chunk)) end
    end
    if not force then
      redis.call('HINCRBY', hk, 'admitted', took)
      admitted = admitted + took
    end
    queued = queued + took
    -- A host whose queue was empty joins the ready set; one already queued is in it (or
    -- waits for a completion, which reschedules it).
    if redis.call('HINCRBY', hk, 'queued', took) == took then
      redis.call('SADD', P .. 'hosts', host)
      reschedule(host)
    end
  end
end
if queued > 0 then redis.call('HINCRBY', P .. 'stats', 'queued', queued) end
if not force then
  if admitted > 0 then redis.call('HINCRBY', P .. 'stats', 'admitted', admitted) end
  if dups + near > 0 then redis.call('HINCRBY', P .. 'stats', 'duplicates', dups + near) end
end
if #ARGV >= a + 2 then
  local holder, lease_ms, id = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2]
  local blob = redis.call('HGET', P .. 'leased', id)
  if blob and string.sub(blob, 1, #holder + 1) == holder .. '\n' then
    redis.call('ZADD', P .. 'leases', 'XX', 'GT', I(now_ms() + lease_ms * WRITE_PIN), id)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
return out
";

/// Hands out a URL whose host is ready. ARGV: holder, lease (ms), most pages (0: none), the
/// one host to take from (empty: any; a newline: none — a *tick*, which keeps the partition's
/// clock, lease expiry and due URLs moving and answers its figures), and optionally a completion of this holder's to make
/// first (as `COMPLETE`'s: id, kind, hint, retry entry, next visit, its delay, its index bucket
/// and field) — a worker's completion and its next lease in one call.
/// Expired leases go back to the front of their hosts' queues first, then URLs due again are
/// promoted. Returns `{'lease', id, host, entry, last_of_host, host's recrawl_secs (0: none),
/// handed out under its address group (1/0)}`,
/// `{'budget'}` or `{'wait', next due (ms, -1: none), queued, leases out, now, scheduled,
/// next scheduled (crawl ms, -1: none), newest lease id, admitted}`.
const LEASE: &str = r"
local holder, lease_ms, max_pages, only = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local now = now_ms()
if #ARGV >= 13 then
  finish(ARGV[10], ARGV[11], tonumber(ARGV[12]), ARGV[13], now, holder, ARGV[14], ARGV[15], ARGV[16], ARGV[17])
end
local expired = {}
if now >= tonumber(redis.call('HGET', P .. 'clock', 'grace') or 0) then
  expired = redis.call('ZRANGE', P .. 'leases', '-inf', I(now), 'BYSCORE', 'LIMIT', 0, 64)
end
for _, id in ipairs(expired) do
  if finish(id, 'release', 0, '', now) then redis.call('HINCRBY', P .. 'stats', 'expired', 1) end
end
promote(64)
local leases = redis.call('ZCARD', P .. 'leases')
local pages = tonumber(redis.call('HGET', P .. 'stats', 'pages') or 0)
local queued = tonumber(redis.call('HGET', P .. 'stats', 'queued') or 0)
-- What the end's double collect compares (several partitions): the newest lease id, and the
-- URLs admitted.
local function versions()
  local v = redis.call('HMGET', P .. 'stats', 'lease_seq', 'admitted')
  return tonumber(v[1] or 0), tonumber(v[2] or 0)
end
if max_pages > 0 then
  if pages >= max_pages then return {'budget'} end
  if pages + leases >= max_pages then
    local seq, admitted = versions()
    return {'wait', -1, queued, leases, now, tonumber(redis.call('HGET', P .. 'stats', 'scheduled') or 0), -1, seq, admitted}
  end
end
-- A budget over several partitions (`max_pages` < 0; see `budget.rs`): this partition's
-- share is spent when its pages and leases out reach it, and a URL it would hand out then
-- makes the answer `quota` (ask partition 0 for more) instead of `wait`.
local spent, starved = false, false
if max_pages < 0 then
  local q = redis.call('HMGET', P .. 'quota', 'in', 'out')
  spent = pages + leases >= tonumber(q[1] or 0) - tonumber(q[2] or 0)
end
-- The lease of `host`'s next URL (the host is ready; `g` its address group, or nil), or false
-- when its queue was empty or the partition's share is spent.
local function take(host, g)
  if spent then
    starved = true
    return false
  end
  local hk = hkey(host)
  leave_line(host, g)
  local entry = redis.call('LPOP', P .. 'q:' .. host)
  if not entry then
    -- A ready host with an empty queue (not expected): repair its count, and hand its
    -- group's turn on (it no longer holds it).
    redis.call('HSET', hk, 'queued', 0)
    reschedule(host)
    if g then g_promote(g) end
    return false
  end
  local left = redis.call('HINCRBY', hk, 'queued', -1)
  local inflight = redis.call('HINCRBY', hk, 'inflight', 1)
  redis.call('HINCRBY', P .. 'stats', 'queued', -1)
  redis.call('HSET', hk, 'last_start', I(now), 'next_at', I(now + eff_delay(hk)))
  reschedule(host)
  -- An id past every one handed out and past the server's time in ms × 1024: a Redis
  -- that lost its last writes (a crash, a replica promoted) counts on from a later time,
  -- never from the rolled-back counter, so no id of the lost stretch is handed out again
  -- (a holder's late completion of its lost lease would end another URL's).
  -- Written as a decimal string (a Lua number may be written in exponent form by Redis).
  local id = math.max(hnum(P .. 'stats', 'lease_seq', 0) + 1, SERVER_MS * 1024)
  local sid = I(id)
  redis.call('HSET', P .. 'stats', 'lease_seq', sid)
  redis.call('HSET', P .. 'leased', sid, holder .. '\n' .. host .. '\n' .. entry)
  redis.call('ZADD', P .. 'leases', I(now + lease_ms), sid)
  -- After the lease is out: a group's count is checked against the leases out.
  local grouped = 0
  if group_started(g, now) then grouped = 1 end
  local last = 0
  if left <= 0 and inflight == 1 then last = 1 end
  return {'lease', id, host, entry, last, hnum(hk, 'recrawl_secs', 0), grouped}
end
if only == '\n' then
  -- A tick: nothing handed out.
elseif only ~= '' then
  -- One host: queued, room for a fetch, under its limits, due, and its address group (if
  -- any) takes a fetch — a host waiting in the group's line is served out of turn.
  local ok, own, g = host_state(only)
  if ok and own <= now and not (g and g_holds(g, now)) then
    local got = take(only, g)
    if got then return got end
  end
else
  for _ = 1, 16 do
    local r = redis.call('ZRANGE', P .. 'ready', '-inf', I(now), 'BYSCORE', 'LIMIT', 0, 1)
    if #r == 0 or starved then break end
    local g = redis.call('HGET', hkey(r[1]), 'ipg')
    if not held_by_group(r[1], g, now) then
      local got = take(r[1], g)
      if got then return got end
    end
  end
end
local first = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
local due = -1
if #first > 0 then due = tonumber(first[2]) end
local sleeping = tonumber(redis.call('HGET', P .. 'stats', 'scheduled') or 0)
local soonest = redis.call('ZRANGE', P .. 'duez', 0, 0, 'WITHSCORES')
local wake = -1
if #soonest > 0 then wake = math.max(0, tonumber(soonest[2]) * 1000 - (SERVER_MS - now)) end
local seq, admitted = versions()
local answer = 'wait'
if starved then answer = 'quota' end
return {answer, due, queued, leases, now, sleeping, wake, seq, admitted}
";

/// Gives a lease back. ARGV: id, kind (done, error, skip, retry, release), the hint (ms: for
/// error and retry the server's wait, 0: none; for done the fetch's latency term, -1: no
/// duration said), the entry to queue for a retry, the holder, and under a recrawl
/// schedule the entry with its next visit, its delay (s), and its index bucket and field.
/// Returns 1, or 0 when the lease was not out or not the holder's (a late or repeated
/// completion: nothing changes).
const COMPLETE: &str = r"
local now = now_ms()
if finish(ARGV[6], ARGV[7], tonumber(ARGV[8]), ARGV[9], now, ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14]) then
  return 1
end
return 0
";

/// The scripts, hashed once.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub admit: redis::Script,
    pub lease: redis::Script,
    pub complete: redis::Script,
    pub renew: redis::Script,
    pub hold: redis::Script,
    pub crawl_delay: redis::Script,
    pub contacted: redis::Script,
    pub set_host: redis::Script,
    pub delete_queue: redis::Script,
    pub drop_asleep: redis::Script,
    pub set_default_delay: redis::Script,
    pub robots_get: redis::Script,
    pub robots_put: redis::Script,
    pub schedule: redis::Script,
    pub recrawl: redis::Script,
    pub place: redis::Script,
    pub acquire: redis::Script,
    pub free: redis::Script,
    pub quota: redis::Script,
    pub grant: redis::Script,
}

impl Scripts {
    /// The scripts for a visited set of `k` hash functions: the admission's `BITFIELD` calls
    /// are written out for k bits (`SET u1 ARGV[b] 1 SET u1 ARGV[b + 1] 1 …`), so their
    /// arguments go straight from the script's arguments to the command, with no table built
    /// per URL.
    pub(crate) fn new(k: u32) -> Self {
        let s = |body: &str| {
            redis::Script::new(&format!(
                "{HELPERS}{}{}{FINISH}{body}",
                groups::GROUPS,
                schedule::HELPERS
            ))
        };
        let sets: Vec<String> = (0..k)
            .map(|i| format!("'SET', 'u1', ARGV[b + {i}], 1"))
            .collect();
        let gets: Vec<String> = (0..k)
            .map(|i| format!("'GET', 'u1', ARGV[b + {i}]"))
            .collect();
        Self {
            admit: s(&ADMIT
                .replace("SETS", &sets.join(", "))
                .replace("GETS", &gets.join(", "))
                .replace("WRITE_PIN", &WRITE_PIN.to_string())),
            lease: s(LEASE),
            complete: s(COMPLETE),
            renew: s(RENEW),
            hold: s(&HOLD.replace("WRITE_PIN", &WRITE_PIN.to_string())),
            crawl_delay: s(hosts::CRAWL_DELAY),
            contacted: s(hosts::CONTACTED),
            set_host: s(hosts::SET_HOST),
            delete_queue: s(&format!("{}{}", hosts::CREATED_OF, hosts::DELETE_QUEUE)),
            drop_asleep: s(&format!("{}{}", hosts::CREATED_OF, schedule::DROP_ASLEEP)),
            set_default_delay: s(hosts::SET_DEFAULT_DELAY),
            robots_get: s(robots::GET),
            robots_put: s(robots::PUT),
            acquire: s(address_home::ACQUIRE),
            free: s(address_home::FREE),
            quota: s(budget::QUOTA),
            grant: s(budget::GRANT),
            schedule: s(schedule::FIGURES),
            recrawl: s(schedule::RECRAWL),
            place: s(groups::PLACE),
        }
    }
}

//! The recrawl schedule's part of the scripts: the helpers that put a fetched URL to sleep
//! and promote due ones (every script includes them, before `finish`, which calls them), the
//! schedule's figures, and an operator's recrawl. See the module above for the keys.

/// Putting URLs to sleep and waking them (Lua local functions; `HELPERS` first).
pub(super) const HELPERS: &str = r"
-- Puts a fetched URL to sleep until `due_s` (server seconds): its element joins that
-- second's list, the second joins `duez`, and the URL's field of index bucket `b` (`f`: its
-- fingerprint's high 8 bytes) says which second, for an operator's recrawl to find it.
local function sleep_until(host, entry, due_s, b, f)
  local s = I(due_s)
  redis.call('RPUSH', P .. 'due:' .. s, host .. '\n' .. entry)
  redis.call('ZADD', P .. 'duez', s, s)
  redis.call('HINCRBY', P .. 'stats', 'scheduled', 1)
  if b and b ~= '' then redis.call('HSET', P .. 'dueat:' .. b, f, s) end
end
-- Moves at most `most` URLs due by now (server seconds) into their hosts' queues, earliest
-- second first. A promotion is not an admission: no visited bits, no host budget.
local function promote(most)
  local now_s = math.floor(SERVER_MS / 1000)
  local moved = 0
  while moved < most do
    local z = redis.call('ZRANGE', P .. 'duez', '-inf', I(now_s), 'BYSCORE', 'LIMIT', 0, 1)
    if #z == 0 then break end
    local dk = P .. 'due:' .. z[1]
    local els = redis.call('LPOP', dk, most - moved)
    if els then
      for _, el in ipairs(els) do
        local nl = string.find(el, '\n', 1, true)
        local host = string.sub(el, 1, nl - 1)
        redis.call('RPUSH', P .. 'q:' .. host, string.sub(el, nl + 1))
        if redis.call('HINCRBY', hkey(host), 'queued', 1) == 1 then reschedule(host) end
      end
      moved = moved + #els
    end
    if redis.call('EXISTS', dk) == 0 then redis.call('ZREM', P .. 'duez', z[1]) end
  end
  if moved > 0 then
    redis.call('HINCRBY', P .. 'stats', 'queued', moved)
    redis.call('HINCRBY', P .. 'stats', 'scheduled', -moved)
  end
end
";

/// An operator's recrawl: URLs sleeping until due are made due at second `at` of the server's
/// clock (now when earlier). ARGV: at, then per URL its index bucket, field and URL. Returns
/// per URL 1 (moved) or 0 (not sleeping: queued, in flight, or never seen). The URL is found
/// in its second's list by the URL inside each element (`HOST\nENTRY`; an entry's URL length
/// is a u32 LE at byte 14, its URL follows); the index names the second.
pub(super) const RECRAWL: &str = r"
now_ms()
local now_s = math.floor(SERVER_MS / 1000)
local at = I(math.max(tonumber(ARGV[6]), now_s))
local out = {}
for i = 7, #ARGV - 2, 3 do
  local ik, field, url = P .. 'dueat:' .. ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local sec = redis.call('HGET', ik, field)
  local moved = 0
  if sec then
    local dk = P .. 'due:' .. sec
    for _, el in ipairs(redis.call('LRANGE', dk, 0, -1)) do
      local o = string.find(el, '\n', 1, true) + 14
      if #el >= o + 4 and string.sub(el, o + 5, o + 4 + struct.unpack('<I4', el, o + 1)) == url then
        redis.call('LREM', dk, 1, el)
        if redis.call('EXISTS', dk) == 0 then redis.call('ZREM', P .. 'duez', sec) end
        redis.call('RPUSH', P .. 'due:' .. at, el)
        redis.call('ZADD', P .. 'duez', at, at)
        redis.call('HSET', ik, field, at)
        moved = 1
        break
      end
    end
  end
  out[#out + 1] = moved
end
return out
";

/// A deleted queue's sleeping URLs, one due list at a time (so no call holds Redis for all
/// of them): drops the elements of queue ARGV[6] from the list of second ARGV[7] — those
/// admitted before ARGV[8] only, unless it is 0 (`hosts::CREATED_OF`) — and returns how
/// many. The `dueat` index keeps their fields (a recrawl that follows one finds
/// nothing and says so).
pub(super) const DROP_ASLEEP: &str = r"
local host, sec, cutoff = ARGV[6], ARGV[7], tonumber(ARGV[8] or 0)
local dk = P .. 'due:' .. sec
local prefix = host .. '\n'
local kept, n = {}, 0
for _, el in ipairs(redis.call('LRANGE', dk, 0, -1)) do
  if string.sub(el, 1, #prefix) == prefix and purged(created_of(el, #prefix + 1), cutoff) then
    n = n + 1
  else
    kept[#kept + 1] = el
  end
end
if n == 0 then return 0 end
redis.call('DEL', dk)
for i = 1, #kept, 1000 do
  redis.call('RPUSH', dk, unpack(kept, i, math.min(i + 999, #kept)))
end
if #kept == 0 then redis.call('ZREM', P .. 'duez', sec) end
redis.call('HINCRBY', P .. 'stats', 'scheduled', -n)
return n
";

/// The recrawl schedule's figures, read only: `{scheduled, next due (server s, 0: none), due
/// within the hour (counting those due already)}`.
pub(super) const FIGURES: &str = r"
local now_s = tonumber(redis.call('TIME')[1])
local n = tonumber(redis.call('HGET', P .. 'stats', 'scheduled') or 0)
local first = redis.call('ZRANGE', P .. 'duez', 0, 0, 'WITHSCORES')
local next_due = 0
if #first > 0 then next_due = tonumber(first[2]) end
local hour = 0
for _, s in ipairs(redis.call('ZRANGE', P .. 'duez', '-inf', I(now_s + 3600), 'BYSCORE')) do
  hour = hour + redis.call('LLEN', P .. 'due:' .. s)
end
return {n, next_due, hour}
";

//! A crawl-wide page budget (`crawl.max_pages`) over several partitions: each partition's
//! lease script can only count its own pages and leases, so the budget is split into shares.
//!
//! Design choice: **shares granted by partition 0, kept as ever-growing totals on both
//! sides**. Partition 0 holds, per partition q, the units ever granted to it (`budget`
//! field `g:q`) and ever given back (`r:q`); partition q holds what it has learnt of both
//! (`quota` fields `in`, `out`). A partition hands out a lease only while its pages and
//! leases out are below `in - out`, and partition 0 grants only while `Σ (g - r)` is below
//! the budget, so no more pages than the budget are ever fetched. A share moves in two calls
//! (the grant, then the partition told it; a partition gives back, then partition 0 told
//! it), and every call raises the totals to the larger value (`max`), so a process dying
//! between the two — or a master losing its last writes — only delays a share, never
//! doubles one: the next call of any process carries the totals on.
//!
//! Keys: `crawl:{TAG 0}:budget` (`g:q`, `r:q`); every partition's `quota` (`in`, `out`).

/// A partition learns its share's totals and, asked to, gives back what it holds but does
/// not use. ARGV: granted total, given-back total (what partition 0 recorded; 0: nothing
/// known), give back (1/0). Returns `{in, out, pages}`.
pub(super) const QUOTA: &str = r"
now_ms()
local q = redis.call('HMGET', P .. 'quota', 'in', 'out')
local qin = math.max(tonumber(q[1] or 0), tonumber(ARGV[6]))
local qout = math.max(tonumber(q[2] or 0), tonumber(ARGV[7]))
local pages = hnum(P .. 'stats', 'pages', 0)
local leases = redis.call('ZCARD', P .. 'leases')
if ARGV[8] == '1' then
  local spare = qin - qout - pages - leases
  if spare > 0 then qout = qout + spare end
end
redis.call('HSET', P .. 'quota', 'in', I(qin), 'out', I(qout))
return {qin, qout, pages}
";

/// Partition 0 records what partitions reported and grants partition p a share. ARGV: the
/// budget, p, the divisor of a share (a share is the unspent budget over it, at least 1),
/// then triples (partition, its `in`, its `out`). Returns
/// `{p's granted total, p's given-back total, units granted now}`.
pub(super) const GRANT: &str = r"
now_ms()
local max, p, div = tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local B = P .. 'budget'
for i = 9, #ARGV - 2, 3 do
  local q = ARGV[i]
  if tonumber(ARGV[i + 1]) > hnum(B, 'g:' .. q, 0) then redis.call('HSET', B, 'g:' .. q, ARGV[i + 1]) end
  if tonumber(ARGV[i + 2]) > hnum(B, 'r:' .. q, 0) then redis.call('HSET', B, 'r:' .. q, ARGV[i + 2]) end
end
local out = 0
local all = redis.call('HGETALL', B)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'g:' then
    out = out + tonumber(all[i + 1])
  else
    out = out - tonumber(all[i + 1])
  end
end
local n = 0
if max - out > 0 then
  n = math.max(1, math.floor((max - out) / div))
  redis.call('HSET', B, 'g:' .. p, I(hnum(B, 'g:' .. p, 0) + n))
end
return {hnum(B, 'g:' .. p, 0), hnum(B, 'r:' .. p, 0), n}
";

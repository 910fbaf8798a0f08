//! Keeping leases: the heartbeat's renewal, and the fence before a record is written.

/// Renews this holder's leases. ARGV: holder, lease (ms), then lease ids. Returns the ids
/// no longer held (expired and handed to someone else, or completed). A renewal never
/// shortens a lease (`GT`): one pinned for its record's write (`HOLD`) keeps its pin.
pub(super) const RENEW: &str = r"
local holder, lease_ms = ARGV[6], tonumber(ARGV[7])
local now = now_ms()
local lost = {}
for i = 8, #ARGV do
  local blob = redis.call('HGET', P .. 'leased', ARGV[i])
  if blob and string.sub(blob, 1, #holder + 1) == holder .. '\n' then
    redis.call('ZADD', P .. 'leases', 'XX', 'GT', I(now + lease_ms), ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
";

/// Whether this holder still holds lease `id` — the fence before its record is written —,
/// pinning it for [`WRITE_PIN`] leases: between this answer and the completion, the holder
/// writes the record, and a pause there (shorter than the pin) must not hand the URL to
/// another fetcher, which would record it too. ARGV: holder, lease (ms), id. Returns 1, or 0
/// (it expired and went to another fetcher, or was completed).
pub(super) const HOLD: &str = r"
local holder, lease_ms, id = ARGV[6], tonumber(ARGV[7]), ARGV[8]
local now = now_ms()
local blob = redis.call('HGET', P .. 'leased', id)
if blob and string.sub(blob, 1, #holder + 1) == holder .. '\n' then
  redis.call('ZADD', P .. 'leases', 'XX', 'GT', I(now + lease_ms * WRITE_PIN), id)
  return 1
end
return 0
";

/// Leases a lease is pinned for once its holder writes its record (see `HOLD`): a holder
/// that dies there loses its URL to the others after this many leases instead of one.
pub(crate) const WRITE_PIN: u64 = 10;

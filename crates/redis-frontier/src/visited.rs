//! The visited set as a Redis bitmap, and the atomic admission of a page's links.

use bloom::{shape_for, Funnel, Strategy, StringFunnel};
use redis::aio::ConnectionManager;
use redis::Script;

use crate::RedisFrontierError;

/// Tests-and-sets each URL's bits; a URL that flipped any bit is new: its entry is appended
/// to its host's queue and its host joins the ready set (if absent) at `now`.
///
/// KEYS: the bitmap, the ready set, then one queue key per URL.
/// ARGV: k, the number of URLs, now, then per URL its k bit offsets, its entry, its host.
/// Returns the 1-based positions of the URLs admitted.
const ADMIT: &str = r"
local k = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local now = ARGV[3]
local admitted = {}
local a = 4
for i = 1, n do
  local new = false
  for _ = 1, k do
    if redis.call('SETBIT', KEYS[1], ARGV[a], 1) == 0 then new = true end
    a = a + 1
  end
  if new then
    redis.call('RPUSH', KEYS[2 + i], ARGV[a])
    redis.call('ZADD', KEYS[2], 'NX', now, ARGV[a + 1])
    admitted[#admitted + 1] = i
  end
  a = a + 2
end
return admitted
";

/// The shape of the shared visited set and where it lives.
#[derive(Debug, Clone)]
pub struct Visited {
    prefix: String,
    bit_size: u64,
    hashes: u32,
    strategy: Strategy,
}

/// One URL to admit: its canonical form, its politeness key and its encoded queue entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admit {
    /// Canonical URL (what is hashed).
    pub url: String,
    /// Host (politeness key): the queue it joins.
    pub host: String,
    /// The queue entry, as the frontier encodes it.
    pub entry: Vec<u8>,
}

impl Visited {
    /// The visited set of crawl `crawl_id`, sized as the local filter is for `expected_urls`
    /// at `fpp` (Guava's formulas; the bit count rounded up to whole 64-bit words).
    pub fn new(crawl_id: &str, expected_urls: u64, fpp: f64) -> Result<Self, RedisFrontierError> {
        let (bits, hashes) = shape_for(expected_urls, fpp)?;
        let bit_size = bits.div_ceil(64) * 64;
        if bit_size > 1 << 32 {
            return Err(RedisFrontierError::TooLarge { bits: bit_size });
        }
        Ok(Self {
            prefix: format!("crawl:{{{crawl_id}}}:"),
            bit_size,
            hashes,
            strategy: Strategy::default(),
        })
    }

    /// The bitmap's key.
    pub fn bits_key(&self) -> String {
        format!("{}visited", self.prefix)
    }

    /// The key of the sorted set of hosts by when they may be fetched next.
    pub fn ready_key(&self) -> String {
        format!("{}ready", self.prefix)
    }

    /// The key of `host`'s queue.
    pub fn queue_key(&self, host: &str) -> String {
        format!("{}queue:{host}", self.prefix)
    }

    /// Bits in the filter.
    pub fn bit_size(&self) -> u64 {
        self.bit_size
    }

    /// Hash functions per URL.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// The bit indices of `url`: the ones a local filter of the same shape sets.
    pub fn indices(&self, url: &str) -> impl Iterator<Item = u64> {
        let hash = StringFunnel.hash(url);
        self.strategy.indices(hash, self.hashes, self.bit_size)
    }

    /// Admits a page's links in one atomic script: returns, per link, whether it was new
    /// (and so queued). `now_ms` is the ready-set score a newly seen host gets.
    pub async fn admit(
        &self,
        conn: &mut ConnectionManager,
        links: &[Admit],
        now_ms: u64,
    ) -> Result<Vec<bool>, RedisFrontierError> {
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let script = Script::new(ADMIT);
        let mut call = script.key(self.bits_key());
        call.key(self.ready_key());
        for l in links {
            call.key(self.queue_key(&l.host));
        }
        call.arg(self.hashes).arg(links.len()).arg(now_ms);
        for l in links {
            for i in self.indices(&l.url) {
                call.arg(i);
            }
            call.arg(l.entry.as_slice()).arg(l.host.as_str());
        }
        let admitted: Vec<usize> = call.invoke_async(conn).await?;
        let mut new = vec![false; links.len()];
        for i in admitted {
            if let Some(slot) = i.checked_sub(1).and_then(|i| new.get_mut(i)) {
                *slot = true;
            }
        }
        Ok(new)
    }
}

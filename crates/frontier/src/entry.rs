//! An admitted URL waiting in the queue, and its compact binary form for the spill and the
//! crawl state (format 6 adds the time it was admitted, format 5 a client's queue key, format 4 a url-frontier client's string
//! and metadata, format 3 the
//! recrawl schedule, format 2 how the URL was found, its sitemap role and `lastmod`; format-3
//! bytes are format-6 bytes without client fields or a time, format-4 bytes are format-5 bytes
//! without a key, format-5 bytes are format-6 bytes without a time, and formats 1 and 2 are
//! still read).
//!
//! The admission time (`created`, Unix seconds in a `u32`: until 2106) is what url-frontier's
//! `creation_date` reports and what PurgeURLs by age reads; it costs 4 bytes on disk and in
//! Redis, 8 in memory (an entry is 112 bytes on 64-bit targets, was 104), for the URLs the
//! queue keeps in memory only.

use crate::client_info::ClientInfo;
use crate::visit::Visit;

/// How a URL was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Via {
    /// A link on a page.
    #[default]
    Link,
    /// Given by the operator.
    Seed,
    /// The target of a redirect.
    Redirect,
    /// Listed in a sitemap (or, for a sitemap file, named by robots.txt or a sitemap index).
    Sitemap,
}

impl Via {
    /// The name records use.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Link => "link",
            Via::Seed => "seed",
            Via::Redirect => "redirect",
            Via::Sitemap => "sitemap",
        }
    }

    fn code(self) -> u8 {
        match self {
            Via::Link => 0,
            Via::Seed => 1,
            Via::Redirect => 2,
            Via::Sitemap => 3,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Via::Link,
            1 => Via::Seed,
            2 => Via::Redirect,
            3 => Via::Sitemap,
            _ => return None,
        })
    }
}

/// One queued URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Canonical URL.
    pub url: String,
    /// Link depth (seeds are 0).
    pub depth: u32,
    /// The page that linked here (or redirected here), if any.
    pub parent: Option<String>,
    /// Redirect hops that led here (a redirect target is `hops + 1` of its source).
    pub hops: u8,
    /// Failed attempts so far (retries are re-queued, not fetched in a loop).
    pub attempt: u8,
    /// The admission's number in a durable [`Journal`](crate::Journal) (0 without one): how
    /// the store is told this URL is done.
    pub id: u64,
    /// How it was found.
    pub via: Via,
    /// A sitemap file to read, at this nesting level (1: named by robots.txt or the host's
    /// `/sitemap.xml`; 2, 3: listed by an index); 0 for a page.
    pub sitemap: u8,
    /// `<lastmod>` of its sitemap entry, as written.
    pub lastmod: Option<String>,
    /// A URL fetched before and scheduled again (`[recrawl]`): when it is due, and what its
    /// fetches left. `None` for a URL never fetched.
    pub visit: Option<Box<Visit>>,
    /// What a url-frontier client put with it (its string, its metadata), handed back with
    /// it; `None` for a URL of the crawl's own.
    pub client: Option<Box<ClientInfo>>,
    /// When the frontier admitted it (Unix seconds; 0 = not known: admitted before format 6
    /// or not through a frontier).
    pub created: u32,
}

impl Entry {
    /// A fresh entry with no hops and no attempts: a seed without a parent, a link with one.
    pub fn new(url: String, depth: u32, parent: Option<String>) -> Self {
        Self {
            url,
            depth,
            via: if parent.is_some() {
                Via::Link
            } else {
                Via::Seed
            },
            parent,
            hops: 0,
            attempt: 0,
            id: 0,
            sitemap: 0,
            lastmod: None,
            visit: None,
            client: None,
            created: 0,
        }
    }

    /// The current time as [`created`](Self::created) keeps it (Unix seconds; 0 if the clock
    /// is before 1970, `u32::MAX` past 2106).
    pub fn now_secs() -> u32 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
    }

    /// Called when the URL wakes from a sleep: a visit with no fetch in its history (a
    /// client's date for a URL this crawl never fetched) goes, so that its fetch counts as
    /// the first — not a refetch, and its schedule starts from the first interval.
    pub fn woken(&mut self) {
        if self
            .visit
            .as_ref()
            .is_some_and(|v| v.history.last_fetch == 0)
        {
            self.visit = None;
        }
    }

    /// What a purge of the URLs admitted more than `days` days ago compares
    /// [`created`](Self::created) with: `None` for 0 (every URL goes), else the time `days`
    /// days before now — at least 1, so that an age past the epoch drops nothing (a Redis
    /// script reads a cutoff of 0 as "every URL").
    pub fn purge_cutoff(days: u32) -> Option<u32> {
        (days > 0).then(|| {
            Self::now_secs()
                .saturating_sub(days.saturating_mul(86_400))
                .max(1)
        })
    }

    /// Whether a purge with `cutoff` ([`purge_cutoff`](Self::purge_cutoff)) drops this URL:
    /// every URL without one; with one, a URL admitted before it — one of unknown admission
    /// time (written before format 6) stays.
    pub fn purged_by(&self, cutoff: Option<u32>) -> bool {
        cutoff.is_none_or(|t| self.created != 0 && self.created < t)
    }

    /// The queue key a client gave it, when that is not its host's (see [`ClientInfo`]).
    pub fn queue_key(&self) -> Option<&str> {
        self.client.as_deref().and_then(ClientInfo::key)
    }

    /// Bytes of heap this entry holds (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.url.capacity()
            + self.parent.as_ref().map_or(0, String::capacity)
            + self.lastmod.as_ref().map_or(0, String::capacity)
            + self
                .visit
                .as_ref()
                .map_or(0, |_| std::mem::size_of::<Visit>())
            + self.client.as_ref().map_or(0, |c| c.heap_bytes())
    }

    /// Appends the binary form (format 6): the format-2 fields, then a flags byte — bit 0 a
    /// visit follows (its due time, history and spilled ETag), bit 1 client fields follow
    /// ([`ClientInfo`]), bit 2 they end with a queue key, bit 3 the admission time ends the
    /// entry (u32 LE: last, so that a Redis script finds it from the end) — then those.
    /// Without client fields or a time it is format 3, byte for byte; without a key, format 4;
    /// without a time, format 5.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_v2(out);
        out.push(
            u8::from(self.visit.is_some())
                | u8::from(self.client.is_some()) << 1
                | u8::from(self.queue_key().is_some()) << 2
                | u8::from(self.created != 0) << 3,
        );
        if let Some(v) = &self.visit {
            v.encode(out);
        }
        if let Some(c) = &self.client {
            c.encode(out);
        }
        if self.created != 0 {
            out.extend_from_slice(&self.created.to_le_bytes());
        }
    }

    /// Format 2: the format-1 fields — id (u64 LE), depth (u32 LE), hops, attempt, url length
    /// (u32 LE), url, parent length (u32 LE, `u32::MAX` for none), parent — then via, sitemap
    /// level, lastmod length (u32 LE, `u32::MAX` for none), lastmod.
    fn encode_v2(&self, out: &mut Vec<u8>) {
        self.encode_v1(out);
        out.push(self.via.code());
        out.push(self.sitemap);
        match &self.lastmod {
            Some(l) => {
                out.extend_from_slice(&(l.len() as u32).to_le_bytes());
                out.extend_from_slice(l.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
    }

    fn encode_v1(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
        out.push(self.hops);
        out.push(self.attempt);
        out.extend_from_slice(&(self.url.len() as u32).to_le_bytes());
        out.extend_from_slice(self.url.as_bytes());
        match &self.parent {
            Some(p) => {
                out.extend_from_slice(&(p.len() as u32).to_le_bytes());
                out.extend_from_slice(p.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
    }

    /// Decodes exactly `count` entries (format 6, 5, 4 or 3) filling `bytes`; `None` if the
    /// bytes are not that.
    pub fn decode_all(bytes: &[u8], count: usize) -> Option<Vec<Entry>> {
        Self::decode(bytes, count, 3)
    }

    /// [`decode_all`](Self::decode_all) for format 2 (written before the recrawl schedule).
    pub fn decode_all_v2(bytes: &[u8], count: usize) -> Option<Vec<Entry>> {
        Self::decode(bytes, count, 2)
    }

    /// [`decode_all`](Self::decode_all) for format 1 (written before `via`, `sitemap` and
    /// `lastmod` existed): a seed is an entry without a parent, a redirect one with hops.
    pub fn decode_all_v1(bytes: &[u8], count: usize) -> Option<Vec<Entry>> {
        Self::decode(bytes, count, 1)
    }

    fn decode(mut bytes: &[u8], count: usize, format: u8) -> Option<Vec<Entry>> {
        fn u32_at(b: &mut &[u8]) -> Option<u32> {
            let (head, rest) = b.split_first_chunk::<4>()?;
            *b = rest;
            Some(u32::from_le_bytes(*head))
        }
        fn string(b: &mut &[u8], len: usize) -> Option<String> {
            if b.len() < len {
                return None;
            }
            let (s, rest) = b.split_at(len);
            *b = rest;
            String::from_utf8(s.to_vec()).ok()
        }
        let mut out = Vec::with_capacity(count.min(bytes.len() / 10));
        for _ in 0..count {
            let (id, rest) = bytes.split_first_chunk::<8>()?;
            let id = u64::from_le_bytes(*id);
            bytes = rest;
            let depth = u32_at(&mut bytes)?;
            let (&[hops, attempt], rest) = bytes.split_first_chunk::<2>()?;
            bytes = rest;
            let url_len = u32_at(&mut bytes)? as usize;
            let url = string(&mut bytes, url_len)?;
            let parent = match u32_at(&mut bytes)? {
                u32::MAX => None,
                n => Some(string(&mut bytes, n as usize)?),
            };
            let mut entry = Entry::new(url, depth, parent);
            entry.hops = hops;
            entry.attempt = attempt;
            entry.id = id;
            if format >= 2 {
                let (&[via, sitemap], rest) = bytes.split_first_chunk::<2>()?;
                bytes = rest;
                entry.via = Via::from_code(via)?;
                entry.sitemap = sitemap;
                entry.lastmod = match u32_at(&mut bytes)? {
                    u32::MAX => None,
                    n => Some(string(&mut bytes, n as usize)?),
                };
            } else if hops > 0 {
                entry.via = Via::Redirect;
            }
            // A last entry that ends before the marker was written as format 2 (a shared
            // crawl's queue in Redis keeps entries without a format byte): no visit.
            if format >= 3 && !bytes.is_empty() {
                let (&flags, rest) = bytes.split_first()?;
                bytes = rest;
                // A key comes with client fields only.
                if flags & !0b1111 != 0 || flags & 0b110 == 0b100 {
                    return None;
                }
                if flags & 1 != 0 {
                    entry.visit = Some(Box::new(Visit::decode(&mut bytes).ok()?));
                }
                if flags & 2 != 0 {
                    let keyed = flags & 4 != 0;
                    entry.client = Some(Box::new(ClientInfo::decode(&mut bytes, keyed)?));
                }
                if flags & 8 != 0 {
                    entry.created = u32_at(&mut bytes).filter(|&t| t != 0)?;
                }
            }
            out.push(entry);
        }
        bytes.is_empty().then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let mut e = Entry::new("http://a.test/é".into(), 7, None);
        e.hops = 2;
        e.attempt = 1;
        e.id = u64::MAX - 3;
        let f = Entry::new("http://a.test/x".into(), 0, Some("http://a.test/".into()));
        let mut buf = Vec::new();
        e.encode(&mut buf);
        f.encode(&mut buf);
        assert_eq!(Entry::decode_all(&buf, 2), Some(vec![e, f]));
        // Without its last byte (the visit marker) the last entry reads as format 2; any
        // shorter is not an entry.
        assert_eq!(Entry::decode_all(&buf[..buf.len() - 2], 2), None);
        assert_eq!(Entry::decode_all(&buf, 1), None, "trailing bytes");
        assert_eq!(Entry::decode_all(&[0xff; 20], 1), None);
    }

    #[test]
    fn format_2_fields_and_format_1_still_read() {
        let mut e = Entry::new(
            "http://a.test/s.xml".into(),
            0,
            Some("http://a.test/".into()),
        );
        e.via = Via::Sitemap;
        e.sitemap = 2;
        e.lastmod = Some("2026-11-01".into());
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(Entry::decode_all(&buf, 1), Some(vec![e.clone()]));
        let mut bad = buf.clone();
        let via_at = buf.len() - 1 - 4 - "2026-11-01".len() - 2;
        bad[via_at] = 9;
        assert_eq!(Entry::decode_all(&bad, 1), None, "unknown via");
        // Format 1: no extras; a seed has no parent, a redirect target has hops.
        let mut old = Vec::new();
        let mut r = Entry::new("http://a.test/r".into(), 1, Some("http://a.test/".into()));
        r.hops = 1;
        r.encode_v1(&mut old);
        Entry::new("http://a.test/".into(), 0, None).encode_v1(&mut old);
        let back = Entry::decode_all_v1(&old, 2).unwrap();
        assert_eq!(back[0].via, Via::Redirect);
        assert_eq!(back[1].via, Via::Seed);
        assert_eq!(back[1].lastmod, None);
    }

    #[test]
    fn format_3_carries_the_visit_and_format_2_is_still_read() {
        let mut e = Entry::new("http://a.test/p".into(), 2, Some("http://a.test/".into()));
        e.visit = Some(Box::new(Visit {
            due: 1_800_000_060,
            history: recrawl::History {
                status: 304,
                last_fetch: 1_800_000_000,
                interval: 60,
                ..recrawl::History::default()
            },
        }));
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(Entry::decode_all(&buf, 1), Some(vec![e.clone()]));
        let mut v2 = Vec::new();
        e.encode_v2(&mut v2);
        let back = Entry::decode_all_v2(&v2, 1).unwrap();
        assert_eq!(back[0].visit, None);
        assert_eq!(back[0].url, e.url);
        // Read as format 3 too, when it is the last entry (Redis keeps format-2 bytes).
        assert_eq!(Entry::decode_all(&v2, 1), Some(back));
        let mut bad = buf.clone();
        bad[v2.len()] = 7;
        assert_eq!(Entry::decode_all(&bad, 1), None, "unknown visit marker");
    }

    #[test]
    fn format_4_carries_client_fields_and_format_3_bytes_are_format_4() {
        let mut e = Entry::new("http://a.test/?x".into(), 1, None);
        let mut plain = Vec::new();
        e.encode(&mut plain);
        e.client = Some(Box::new(ClientInfo {
            original: Some("http://a.test?x".into()),
            key: None,
            metadata: vec![("k".into(), vec!["v".into()])],
        }));
        let mut with = Vec::new();
        e.encode(&mut with);
        assert_eq!(with[..plain.len() - 1], plain[..plain.len() - 1]);
        assert_eq!((plain[plain.len() - 1], with[plain.len() - 1]), (0, 2));
        let mut both = plain.clone();
        both.extend_from_slice(&with);
        let decoded = Entry::decode_all(&both, 2).unwrap();
        assert_eq!(decoded[0].client, None);
        assert_eq!(decoded[1], e);
        // A key without client fields is not an entry; nor is an unknown flag.
        with[plain.len() - 1] = 4;
        assert_eq!(Entry::decode_all(&with, 1), None);
        with[plain.len() - 1] = 16;
        assert_eq!(Entry::decode_all(&with, 1), None);
    }

    #[test]
    fn format_5_carries_a_queue_key_after_the_client_fields() {
        let mut e = Entry::new("http://a.test/".into(), 1, None);
        e.client = Some(ClientInfo::keyed("http://a.test/", "shared", Vec::new()).unwrap());
        e.client = e.client.take().and_then(|c| c.settle(&e.url, "a.test"));
        assert_eq!(e.queue_key(), Some("shared"));
        let mut buf = Vec::new();
        e.encode(&mut buf);
        let flags_at = buf.len() - (4 + 2 + 2 + "shared".len()) - 1;
        assert_eq!(buf[flags_at], 0b110);
        assert_eq!(Entry::decode_all(&buf, 1), Some(vec![e]));
        for cut in flags_at + 1..buf.len() {
            assert_eq!(Entry::decode_all(&buf[..cut], 1), None, "cut at {cut}");
        }
    }

    #[test]
    fn format_6_ends_with_the_admission_time() {
        let mut e = Entry::new("http://a.test/".into(), 1, None);
        let mut v5 = Vec::new();
        e.encode(&mut v5);
        e.created = 1_800_000_000;
        e.client = Some(ClientInfo::keyed("http://a.test/", "k", Vec::new()).unwrap());
        e.client = e.client.take().and_then(|c| c.settle(&e.url, "a.test"));
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(buf[buf.len() - 4..], 1_800_000_000u32.to_le_bytes());
        assert_eq!(buf[v5.len() - 1], 0b1110);
        assert_eq!(Entry::decode_all(&buf, 1), Some(vec![e.clone()]));
        for cut in v5.len()..buf.len() {
            assert_eq!(Entry::decode_all(&buf[..cut], 1), None, "cut at {cut}");
        }
        // A time of 0 is written as no time: a flag with a zero is not an entry.
        let n = buf.len();
        buf[n - 4..].copy_from_slice(&[0; 4]);
        assert_eq!(Entry::decode_all(&buf, 1), None);
        // Format-5 bytes read with no time.
        assert_eq!(Entry::decode_all(&v5, 1).unwrap()[0].created, 0);
    }
}

//! An admitted URL waiting in the queue, and its compact binary form for the spill.

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
}

impl Entry {
    /// A fresh entry with no hops and no attempts.
    pub fn new(url: String, depth: u32, parent: Option<String>) -> Self {
        Self {
            url,
            depth,
            parent,
            hops: 0,
            attempt: 0,
            id: 0,
        }
    }

    /// Bytes of heap this entry holds (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.url.capacity() + self.parent.as_ref().map_or(0, String::capacity)
    }

    /// Appends the binary form: id (u64 LE), depth (u32 LE), hops, attempt, url length
    /// (u32 LE), url, parent length (u32 LE, `u32::MAX` for none), parent.
    pub fn encode(&self, out: &mut Vec<u8>) {
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

    /// Decodes exactly `count` entries filling `bytes`; `None` if the bytes are not that.
    pub fn decode_all(mut bytes: &[u8], count: usize) -> Option<Vec<Entry>> {
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
            out.push(Entry {
                url,
                depth,
                parent,
                hops,
                attempt,
                id,
            });
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
        assert_eq!(Entry::decode_all(&buf[..buf.len() - 1], 2), None);
        assert_eq!(Entry::decode_all(&buf, 1), None, "trailing bytes");
        assert_eq!(Entry::decode_all(&[0xff; 20], 1), None);
    }
}

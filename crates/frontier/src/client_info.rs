//! What a url-frontier client put with a URL and gets back with it: the string it gave, when
//! the crawl's canonical form differs (`http://h?x` is kept as such, queued as
//! `http://h/?x`), its queue key, when it is not the URL's host, and its metadata. Carried by
//! the queue [`Entry`](crate::Entry) (bit 1 of its flags, bit 2 for a key: formats 4 and 5)
//! through memory, spill, the crawl state and Redis.
//!
//! The key is the URL's politeness key: its queue, its delay and concurrency, its budget and
//! its host controls are the key's, as url-frontier's are (several hosts under one key share
//! one pace; robots.txt stays the URL's origin's). It is fixed at admission: a URL stays in
//! the queue it was admitted to.
//!
//! Design choice: bounded by construction ([`ClientInfo::new`] refuses more than
//! [`MAX_CLIENT_BYTES`]), so a client cannot make one queued URL cost more than a few pages
//! of memory; the decoder checks every length against the bytes it has, so stored bytes
//! cannot make it allocate more than they hold.

/// Most bytes of a URL's client fields in their binary form (the string put, the queue key,
/// every metadata key and value, and their lengths: an empty value counts its 4 length bytes).
pub const MAX_CLIENT_BYTES: usize = 8 * 1024;

/// Longest queue key, in bytes (a host name is at most 253).
pub const MAX_KEY_BYTES: usize = 512;

/// A client's string for a URL and its metadata, in key order. Made by [`ClientInfo::new`]
/// only, so it is always within [`MAX_CLIENT_BYTES`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// The string the client put, when the canonical form differs.
    pub(crate) original: Option<String>,
    /// The queue key the client gave, when it is not the URL's host key.
    pub(crate) key: Option<String>,
    /// Metadata keys, each with its values, sorted by key.
    pub(crate) metadata: Vec<(String, Vec<String>)>,
}

impl ClientInfo {
    /// The fields of a URL put as `original` with `metadata` (keys in any order), or why not
    /// (past [`MAX_CLIENT_BYTES`]). What is kept of them is decided once the URL's canonical
    /// form is known ([`settle`](Self::settle)).
    pub fn new(
        original: &str,
        metadata: impl IntoIterator<Item = (String, Vec<String>)>,
    ) -> Result<Box<Self>, String> {
        Self::keyed(original, "", metadata)
    }

    /// As [`new`](Self::new), queued under `key` (empty: the URL's host), or why not (a key
    /// longer than [`MAX_KEY_BYTES`] or with a control character).
    pub fn keyed(
        original: &str,
        key: &str,
        metadata: impl IntoIterator<Item = (String, Vec<String>)>,
    ) -> Result<Box<Self>, String> {
        if key.len() > MAX_KEY_BYTES {
            return Err(format!(
                "a queue key of {} bytes; at most {MAX_KEY_BYTES}",
                key.len()
            ));
        }
        if key.chars().any(char::is_control) {
            return Err("a queue key with a control character".into());
        }
        let mut metadata: Vec<(String, Vec<String>)> = metadata.into_iter().collect();
        metadata.sort_by(|a, b| a.0.cmp(&b.0));
        let fields = Self {
            original: Some(original.to_owned()),
            key: (!key.is_empty()).then(|| key.to_owned()),
            metadata,
        };
        let size = fields.binary_size();
        if size > MAX_CLIENT_BYTES {
            return Err(format!(
                "a URL's string and metadata take {size} bytes; at most {MAX_CLIENT_BYTES}"
            ));
        }
        Ok(Box::new(fields))
    }

    /// The size of the binary form ([`encode`](Self::encode)): past the bound long before a
    /// count could overflow its u16.
    fn binary_size(&self) -> usize {
        4 + self.original.as_ref().map_or(0, String::len)
            + self.key.as_ref().map_or(0, |k| 2 + k.len())
            + 2
            + self
                .metadata
                .iter()
                .map(|(k, v)| 4 + k.len() + v.iter().map(|s| 4 + s.len()).sum::<usize>())
                .sum::<usize>()
    }

    /// What is kept once the URL's canonical form and its host's key
    /// ([`host_key`](crate::host_key)) are known: the string put only where it differs from
    /// `canonical`, the queue key only where it differs from `host`; `None` when nothing is
    /// left.
    pub fn settle(mut self: Box<Self>, canonical: &str, host: &str) -> Option<Box<Self>> {
        if self.original.as_deref() == Some(canonical) {
            self.original = None;
        }
        let key = self.key.take().filter(|k| k != host);
        // No larger than it was made: within the bound.
        self.replacing(canonical, key.as_deref()).unwrap_or(None)
    }

    /// The string the client put, when the canonical form differs.
    pub fn original(&self) -> Option<&str> {
        self.original.as_deref()
    }

    /// The queue key the client gave, when it is not the URL's host.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// These fields in place of those of a queued URL `canonical` under the queue key `key`
    /// (`None`: its host): an update's string and metadata replace the put's, and the URL
    /// stays in its queue. `None` when nothing is left to keep; `Err` with the fields back
    /// when the kept key would take them past [`MAX_CLIENT_BYTES`] (they were checked with
    /// the update's own key).
    pub(crate) fn replacing(
        mut self: Box<Self>,
        canonical: &str,
        key: Option<&str>,
    ) -> Result<Option<Box<Self>>, Box<Self>> {
        self.key = key.map(str::to_owned);
        if self.original.as_deref() == Some(canonical) {
            self.original = None;
        }
        if self.binary_size() > MAX_CLIENT_BYTES {
            return Err(self);
        }
        Ok(
            (self.original.is_some() || self.key.is_some() || !self.metadata.is_empty())
                .then_some(self),
        )
    }

    /// Metadata keys, each with its values, sorted by key.
    pub fn metadata(&self) -> &[(String, Vec<String>)] {
        &self.metadata
    }

    /// The string put (if kept) and the metadata, taken apart.
    pub fn into_parts(self) -> (Option<String>, Vec<(String, Vec<String>)>) {
        (self.original, self.metadata)
    }

    /// Bytes of heap it holds (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.original.as_ref().map_or(0, String::capacity)
            + self.key.as_ref().map_or(0, String::capacity)
            + self.metadata.capacity() * std::mem::size_of::<(String, Vec<String>)>()
            + self
                .metadata
                .iter()
                .map(|(k, v)| {
                    k.capacity()
                        + v.capacity() * std::mem::size_of::<String>()
                        + v.iter().map(String::capacity).sum::<usize>()
                })
                .sum::<usize>()
    }

    /// Appends the binary form: the string put (u32 LE length, `u32::MAX` for none), then the
    /// number of keys (u16 LE) and per key its length (u16 LE), the key, the number of values
    /// (u16 LE) and per value its length (u32 LE) and bytes; then, when there is a queue key
    /// (the entry's flags say so), its length (u16 LE) and bytes.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match &self.original {
            Some(o) => {
                out.extend_from_slice(&(o.len() as u32).to_le_bytes());
                out.extend_from_slice(o.as_bytes());
            }
            None => out.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        out.extend_from_slice(&(self.metadata.len() as u16).to_le_bytes());
        for (key, values) in &self.metadata {
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(&(values.len() as u16).to_le_bytes());
            for v in values {
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v.as_bytes());
            }
        }
        if let Some(key) = &self.key {
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key.as_bytes());
        }
    }

    /// Reads the binary form from the front of `bytes` (with a queue key at its end when
    /// `keyed`), advancing it; `None` if it is not that (a length past the end, a string that
    /// is not UTF-8).
    pub(crate) fn decode(bytes: &mut &[u8], keyed: bool) -> Option<Self> {
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            if b.len() < n {
                return None;
            }
            let (head, rest) = b.split_at(n);
            *b = rest;
            Some(head)
        }
        fn u16_at(b: &mut &[u8]) -> Option<usize> {
            let head = take(b, 2)?;
            Some(usize::from(u16::from_le_bytes([head[0], head[1]])))
        }
        fn u32_at(b: &mut &[u8]) -> Option<u32> {
            let head = take(b, 4)?;
            Some(u32::from_le_bytes([head[0], head[1], head[2], head[3]]))
        }
        fn string(b: &mut &[u8], n: usize) -> Option<String> {
            String::from_utf8(take(b, n)?.to_vec()).ok()
        }
        let original = match u32_at(bytes)? {
            u32::MAX => None,
            n => Some(string(bytes, n as usize)?),
        };
        let keys = u16_at(bytes)?;
        // Each key takes at least 4 bytes: no more is reserved than the bytes could hold.
        let mut metadata = Vec::with_capacity(keys.min(bytes.len() / 4));
        for _ in 0..keys {
            let n = u16_at(bytes)?;
            let key = string(bytes, n)?;
            let count = u16_at(bytes)?;
            let mut values = Vec::with_capacity(count.min(bytes.len() / 4));
            for _ in 0..count {
                let n = u32_at(bytes)? as usize;
                values.push(string(bytes, n)?);
            }
            metadata.push((key, values));
        }
        let key = match keyed {
            true => {
                let n = u16_at(bytes)?;
                Some(string(bytes, n)?)
            }
            false => None,
        };
        Some(Self {
            original,
            key,
            metadata,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.iter().map(|s| (*s).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn kept_sorted_settled_against_the_canonical_form_and_bounded() {
        let info =
            ClientInfo::new("http://h?x", meta(&[("z", &["1"]), ("a", &["2", "3"])])).unwrap();
        assert_eq!(info.metadata, meta(&[("a", &["2", "3"]), ("z", &["1"])]));
        let settled = info.clone().settle("http://h/?x", "h").unwrap();
        assert_eq!(settled.original.as_deref(), Some("http://h?x"));
        let same = info.settle("http://h?x", "h").unwrap();
        assert_eq!((same.original.as_deref(), same.metadata.len()), (None, 2));
        let bare = ClientInfo::new("http://h/", Vec::new()).unwrap();
        assert_eq!(bare.settle("http://h/", "h"), None, "nothing to keep");
        // A key is kept where it is not the host's.
        let keyed = ClientInfo::keyed("http://h/", "shared", Vec::new()).unwrap();
        assert_eq!(
            keyed.clone().settle("http://h/", "h").unwrap().key(),
            Some("shared")
        );
        assert_eq!(
            keyed.settle("http://h/", "shared"),
            None,
            "the host's own key"
        );
        let long = "k".repeat(MAX_KEY_BYTES + 1);
        assert!(ClientInfo::keyed("http://h/", &long, Vec::new()).is_err());
        let e = ClientInfo::keyed("http://h/", "a\nb", Vec::new()).unwrap_err();
        assert!(e.contains("control character"), "{e}");
        // An update made within the bound with no key passes it with the kept key: refused.
        let full = MAX_CLIENT_BYTES - 4 - 2 - 4 - 1 - 4;
        let update = ClientInfo::new("", vec![("k".into(), vec!["v".repeat(full)])]).unwrap();
        assert_eq!(update.binary_size(), MAX_CLIENT_BYTES);
        assert!(update.clone().replacing("http://h/", None).is_ok());
        assert!(update.replacing("http://h/", Some("key")).is_err());
        let big = "v".repeat(MAX_CLIENT_BYTES);
        let e = ClientInfo::new("http://h/", vec![("k".into(), vec![big])]).unwrap_err();
        assert!(e.contains("at most 8192"), "{e}");
        // Empty values count their length bytes: no way around the bound by count.
        let empties = vec![String::new(); MAX_CLIENT_BYTES / 4];
        assert!(ClientInfo::new("", vec![("k".into(), empties)]).is_err());
        let keys = (0..MAX_CLIENT_BYTES / 4).map(|i| (i.to_string(), Vec::new()));
        assert!(ClientInfo::new("", keys).is_err());
        let fits = vec![String::new(); (MAX_CLIENT_BYTES - 16) / 4];
        let mut buf = Vec::new();
        ClientInfo::new("", vec![("k".into(), fits)])
            .unwrap()
            .encode(&mut buf);
        assert_eq!(buf.len(), 4 + 2 + 4 + 1 + (MAX_CLIENT_BYTES - 16) / 4 * 4);
        assert!(
            buf.len() <= MAX_CLIENT_BYTES,
            "the bound is the binary form's size"
        );
    }

    #[test]
    fn round_trip_and_hostile_bytes() {
        let info = ClientInfo {
            original: Some("http://h?é".into()),
            key: Some("ké".into()),
            metadata: meta(&[("a", &["", "x"]), ("b", &[])]),
        };
        let mut buf = Vec::new();
        info.encode(&mut buf);
        buf.push(9);
        let mut rest = buf.as_slice();
        assert_eq!(ClientInfo::decode(&mut rest, true), Some(info));
        assert_eq!(rest, [9], "reads its own bytes only");
        // Cut anywhere, it is not that; a length far past the end allocates nothing.
        for cut in 0..buf.len() - 1 {
            let mut b = &buf[..cut];
            assert_eq!(ClientInfo::decode(&mut b, true), None, "cut at {cut}");
        }
        let mut huge = u32::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&u16::MAX.to_le_bytes());
        huge.extend_from_slice(&[0, 0, 0xff, 0xff]);
        assert_eq!(ClientInfo::decode(&mut huge.as_slice(), false), None);
        let mut not_utf8 = 1u32.to_le_bytes().to_vec();
        not_utf8.extend_from_slice(&[0xff, 0, 0]);
        assert_eq!(ClientInfo::decode(&mut not_utf8.as_slice(), false), None);
    }
}

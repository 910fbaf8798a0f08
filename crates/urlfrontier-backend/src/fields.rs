//! What the protocol does not carry, carried in a URL's metadata: its depth, parent, how it
//! was found, redirect hops, sitemap level, `lastmod` and failed attempts, under reserved keys
//! (`crawler.*`) that a lease strips again. A url-frontier service keeps metadata with the
//! URL and hands it back with GetURLs, so an entry survives the round trip whole.

use std::collections::HashMap;

use frontier::{host_key, Canonicalizer, ClientInfo, Entry, Via};
use urlfrontier_proto::v2::{StringList, UrlInfo};

const DEPTH: &str = "crawler.depth";
const PARENT: &str = "crawler.parent";
const VIA: &str = "crawler.via";
const HOPS: &str = "crawler.hops";
const SITEMAP: &str = "crawler.sitemap";
const LASTMOD: &str = "crawler.lastmod";
const ATTEMPT: &str = "crawler.attempt";

/// The deepest depth taken from metadata.
const MAX_DEPTH: u32 = 1_000_000;

/// Sets the failed attempts `info` carries.
pub(crate) fn set_attempt(info: &mut UrlInfo, attempt: u8) {
    info.metadata.insert(
        ATTEMPT.to_owned(),
        StringList {
            values: vec![attempt.to_string()],
        },
    );
}

fn via_named(name: &str) -> Via {
    match name {
        "seed" => Via::Seed,
        "redirect" => Via::Redirect,
        "sitemap" => Via::Sitemap,
        _ => Via::Link,
    }
}

/// The URL info of `entry` (canonical) in queue `key` of crawl `crawl_id`: the string its
/// client put (or the canonical one), its client's metadata and the entry's own fields.
pub(crate) fn info_of(entry: &Entry, key: &str, crawl_id: &str) -> UrlInfo {
    let mut metadata: HashMap<String, StringList> = HashMap::new();
    let url = match &entry.client {
        Some(c) => {
            for (k, values) in c.metadata() {
                metadata.insert(
                    k.clone(),
                    StringList {
                        values: values.clone(),
                    },
                );
            }
            c.original().unwrap_or(&entry.url).to_owned()
        }
        None => entry.url.clone(),
    };
    let mut put = |k: &str, v: String| {
        metadata.insert(k.to_owned(), StringList { values: vec![v] });
    };
    put(DEPTH, entry.depth.to_string());
    if let Some(p) = &entry.parent {
        put(PARENT, p.clone());
    }
    if entry.via != Via::Link {
        put(VIA, entry.via.as_str().to_owned());
    }
    if entry.hops > 0 {
        put(HOPS, entry.hops.to_string());
    }
    if entry.sitemap > 0 {
        put(SITEMAP, entry.sitemap.to_string());
    }
    if let Some(l) = &entry.lastmod {
        put(LASTMOD, l.clone());
    }
    if entry.attempt > 0 {
        put(ATTEMPT, entry.attempt.to_string());
    }
    UrlInfo {
        url,
        key: key.to_owned(),
        metadata,
        crawl_id: crawl_id.to_owned(),
    }
}

/// The queue key and entry of a URL handed out as `info` (`None`: not a URL this crawl's
/// canonicaliser takes).
pub(crate) fn entry_of(canon: &Canonicalizer, mut info: UrlInfo) -> Option<(String, Entry)> {
    let mut take = |k: &str| {
        info.metadata
            .remove(k)
            .and_then(|l| l.values.into_iter().next())
    };
    // Bounded: a depth from elsewhere cannot overflow the next link's.
    let depth = take(DEPTH)
        .and_then(|d| d.parse::<u32>().ok())
        .unwrap_or(0)
        .min(MAX_DEPTH);
    let parent = take(PARENT);
    let via = take(VIA).map(|v| via_named(&v));
    let hops = take(HOPS).and_then(|h| h.parse().ok()).unwrap_or(0);
    let sitemap = take(SITEMAP).and_then(|s| s.parse().ok()).unwrap_or(0);
    let lastmod = take(LASTMOD);
    let attempt = take(ATTEMPT).and_then(|a| a.parse().ok()).unwrap_or(0);
    let canonical = canon.canonicalize(&info.url, None).ok()?;
    let mut entry = Entry::new(canonical.to_string(), depth, parent);
    if let Some(via) = via {
        entry.via = via;
    }
    entry.hops = hops;
    entry.sitemap = sitemap;
    entry.lastmod = lastmod;
    entry.attempt = attempt;
    let key = if info.key.is_empty() {
        host_key(&canonical).to_owned()
    } else {
        info.key
    };
    let metadata = info.metadata.into_iter().map(|(k, v)| (k, v.values));
    entry.client = ClientInfo::keyed(&info.url, &key, metadata)
        .ok()
        .and_then(|c| c.settle(canonical.as_str(), host_key(&canonical)));
    Some((key, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_survives_the_round_trip() {
        let canon = Canonicalizer::new(frontier::CanonConfig::default());
        let mut e = Entry::new("http://a.test/x".into(), 3, Some("http://a.test/".into()));
        e.via = Via::Redirect;
        e.hops = 2;
        e.sitemap = 1;
        e.lastmod = Some("2026-11-01".into());
        e.attempt = 1;
        let info = info_of(&e, "a.test", "C");
        assert_eq!(
            (info.url.as_str(), info.crawl_id.as_str()),
            ("http://a.test/x", "C")
        );
        let (key, back) = entry_of(&canon, info).unwrap();
        assert_eq!((key.as_str(), back), ("a.test", e));
    }
}

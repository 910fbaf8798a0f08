//! The crawl state's stored queue entries (and the frontier's disk spill, the same
//! encoding, format 6 with a client's string, queue key, metadata and admission time): any
//! bytes decode to entries or `None`, never a panic, and what decodes, encoded again, decodes to the same entries.
#![no_main]

use frontier::Entry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let count = data.first().map_or(1, |n| usize::from(*n % 4) + 1);
    if let Some(entries) = Entry::decode_all(data.get(1..).unwrap_or_default(), count) {
        let mut again = Vec::new();
        for e in &entries {
            e.encode(&mut again);
        }
        let back = Entry::decode_all(&again, entries.len()).expect("re-encoded entries decode");
        assert_eq!(back, entries);
    }
});

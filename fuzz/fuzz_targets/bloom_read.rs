//! Guava's serialized filter format: any bytes give a filter or an error, never a panic, and
//! never an allocation beyond what the input holds (libFuzzer's -rss_limit_mb and
//! -malloc_limit_mb catch one).
#![no_main]

use bloom::RawFilter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(filter) = RawFilter::read_from(data) {
        let mut out = Vec::new();
        filter
            .write_to(&mut out)
            .expect("a filter read writes back");
        assert!(out.len() <= data.len(), "written back larger than read");
    }
});

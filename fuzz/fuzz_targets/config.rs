//! Configuration loading from any text (and the same text as CRAWLER_* variables): a
//! configuration or a list of problems, never a panic.
#![no_main]

use config::Loader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Loader::new().file("fuzz.toml", text).build();
    let vars = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            (
                format!("CRAWLER_{}", k.trim().to_ascii_uppercase()),
                v.to_owned(),
            )
        });
    let _ = Loader::new().env(vars).build();
});

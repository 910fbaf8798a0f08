//! Content decoding of response bodies (gzip, deflate, br, as servers send them, or garbage
//! claiming to be): never panics, never produces more than it is asked for per step, and
//! always makes progress, whatever the bytes and however they are split.
#![no_main]

use fetch::decode::Decoder;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let encoding = ["gzip", "deflate", "br", "identity"][usize::from(head & 3)];
    let piece = usize::from(head >> 2) + 1;
    let step = usize::from(head >> 4) * 97 + 1;
    let mut d = Decoder::new(Some(encoding));
    let mut out = Vec::new();
    let mut total = 0usize;
    for chunk in body.chunks(piece) {
        let mut input = chunk;
        loop {
            let before = (input.len(), out.len());
            if d.decode(&mut input, &mut out, step).is_err() {
                return;
            }
            let made = out.len() - before.1;
            assert!(made <= step, "{made} > {step}");
            total += made;
            out.clear();
            if made < step && input.is_empty() {
                break;
            }
            assert!((input.len(), made) != (before.0, 0), "no progress");
            // A bomb: what a fetch would cut at its cap (kept small: at one byte a step, a
            // bigger output would take longer than libFuzzer's timeout).
            if total > 1 << 20 {
                return;
            }
        }
    }
    let _ = d.finish();
});

//! Attributes of the tag being read: which are kept (a few names, on the tags the sink asks
//! for), their values as slices of the input, each name once (the first value wins, as in
//! HTML5), and the value-length limit.

use super::{Tokenizer, MAX_NAME_BYTES, MAX_VALUE_BYTES};

const KEPT_FONT_SIZE: &str = "size";

/// The only attributes ever kept (as their names, so a kept name needs no UTF-8 check); a
/// tag's other attributes are skipped without copying.
fn kept(name: &[u8]) -> Option<&'static str> {
    Some(match name {
        b"href" => "href",
        b"src" => "src",
        b"rel" => "rel",
        b"name" => "name",
        b"content" => "content",
        b"http-equiv" => "http-equiv",
        b"type" => "type",
        b"encoding" => "encoding",
        b"color" => "color",
        b"face" => "face",
        _ => return None,
    })
}

impl Tokenizer {
    pub(super) fn start_attr(&mut self) {
        self.finish_attr();
        self.attr_name.clear();
        self.attr_value.clear();
        self.attr_kept = None;
    }

    /// Called when the attribute's name is complete: keep it if wanted and not a duplicate.
    #[inline]
    pub(super) fn name_done(&mut self) {
        if !self.keep || self.attr_name.len() > MAX_NAME_BYTES {
            return;
        }
        let name = self.attr_name.as_slice();
        let wanted = kept(name).or_else(|| {
            (name == KEPT_FONT_SIZE.as_bytes() && self.name == "font").then_some(KEPT_FONT_SIZE)
        });
        self.attr_kept =
            wanted.filter(|w| !self.attrs[..self.attr_count].iter().any(|(n, _)| n == w));
    }

    #[inline]
    pub(super) fn finish_attr(&mut self) {
        if let Some(name) = self.attr_kept {
            // Slots are reused from tag to tag: no allocation once warm. The value's buffer
            // and the slot's trade places, so the value is not copied.
            if self.attr_count == self.attrs.len() {
                self.attrs.push(("", String::new()));
            }
            let (n, v) = &mut self.attrs[self.attr_count];
            *n = name;
            std::mem::swap(v, &mut self.attr_value);
            self.attr_value.clear();
            self.attr_count += 1;
        }
        self.attr_kept = None;
    }

    /// `text[from..to]`, more of the attribute value being read. The bounds are where the
    /// value starts and ends (after `=`, a quote or spaces; at a quote, a space, `>` or the
    /// piece's end), so always between characters: the value is never re-validated as UTF-8.
    pub(super) fn push_value(&mut self, text: &str, from: usize, to: usize) {
        if self.attr_kept.is_none() {
            return;
        }
        match text.get(from..to) {
            Some(more) if self.attr_value.len() + more.len() <= MAX_VALUE_BYTES => {
                self.attr_value.push_str(more);
            }
            // Past the limit (or, which the bounds above rule out, not between characters):
            // the value is not kept, as a cut value would be a wrong link.
            _ => self.attr_kept = None,
        }
    }
}

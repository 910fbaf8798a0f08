//! Tags read in one go. Most tags on a page are plain — a lower-case name, attributes with
//! lower-case names and quoted values, all within the piece being read — and reading one
//! through the state machine costs a dispatch per step (name, spaces, `=`, quote, value,
//! quote, `>`). These functions read such a tag in one pass and give up on anything else
//! (upper case, unquoted values, spaces around `=`, odd characters, the piece's end), before
//! the tag is reported: the state machine then reads the same tag from its start, so what a
//! tag gives never depends on which path read it. The differential tests against the DOM hold
//! both paths to the same links.

use super::{find, is_space, Sink, State, Tokenizer, MAX_NAME_BYTES};

/// Characters of a tag name read here (anything else: the state machine).
fn tag_char(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Characters of an attribute name read here.
fn attr_char(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b':' | b'.')
}

/// The end of the run of bytes from `from` that `ok` accepts.
fn run_of(s: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    s[from..]
        .iter()
        .position(|&b| !ok(b))
        .map_or(s.len(), |at| from + at)
}

impl Tokenizer {
    /// A start tag whose name begins at `text[from]`, read whole: where reading goes on and
    /// the state after the tag, or `None` (nothing reported) when the state machine must.
    pub(super) fn fast_start_tag(
        &mut self,
        text: &str,
        from: usize,
        sink: &mut impl Sink,
    ) -> Option<(usize, State)> {
        let s = text.as_bytes();
        let name_end = run_of(s, from, tag_char);
        if name_end - from > MAX_NAME_BYTES {
            return None;
        }
        self.new_tag(false);
        self.name.push_str(text.get(from..name_end)?);
        self.tag_name_done(sink);
        let mut i = name_end;
        loop {
            match *s.get(i)? {
                b'>' => return Some((i + 1, self.emit(sink))),
                b'/' => {
                    if *s.get(i + 1)? != b'>' {
                        return None;
                    }
                    self.self_closing = true;
                    return Some((i + 2, self.emit(sink)));
                }
                b if is_space(b) => i += 1,
                _ if i == name_end => return None, // an attribute must follow a space
                _ => i = self.fast_attribute(text, i)?,
            }
        }
    }

    /// An attribute at `text[from]` (`name`, or `name="value"` / `name='value'` followed by a
    /// space, `/` or `>`): where reading goes on.
    fn fast_attribute(&mut self, text: &str, from: usize) -> Option<usize> {
        let s = text.as_bytes();
        let name_end = run_of(s, from, attr_char);
        if name_end == from || name_end - from > MAX_NAME_BYTES {
            return None;
        }
        self.start_attr();
        if self.keep {
            self.attr_name.extend_from_slice(&s[from..name_end]);
        }
        self.name_done();
        match *s.get(name_end)? {
            b'=' => {}
            b if is_space(b) || b == b'/' || b == b'>' => {
                // No value: a space before `=` is left to the state machine.
                let next = s[name_end..].iter().position(|&b| !is_space(b))?;
                return (s[name_end + next] != b'=').then_some(name_end);
            }
            _ => return None,
        }
        let quote = *s.get(name_end + 1)?;
        if quote != b'"' && quote != b'\'' {
            return None;
        }
        let value = name_end + 2;
        let end = value + find(quote, &s[value..])?;
        match *s.get(end + 1)? {
            b if is_space(b) || b == b'/' || b == b'>' => {}
            _ => return None,
        }
        self.push_value(text, value, end);
        Some(end + 1)
    }

    /// An end tag whose name begins at `text[from]`, when it is `name>`: where reading goes
    /// on and the state after it.
    pub(super) fn fast_end_tag(
        &mut self,
        text: &str,
        from: usize,
        sink: &mut impl Sink,
    ) -> Option<(usize, State)> {
        let s = text.as_bytes();
        let name_end = run_of(s, from, tag_char);
        if name_end - from > MAX_NAME_BYTES || *s.get(name_end)? != b'>' {
            return None;
        }
        self.new_tag(true);
        self.name.push_str(text.get(from..name_end)?);
        Some((name_end + 1, self.emit(sink)))
    }
}

//! The script-data states: inside `<script>`, a `<!--` starts an escape in which
//! `<script>` … `</script>` nests, and only the `</script>` outside it ends the element.

use memchr::memchr2;

use super::{Raw, State, Tokenizer, MAX_NAME_BYTES};

impl Tokenizer {
    /// The script-data states past `<`, and the escaped and double-escaped ones: where a
    /// `<!--` in a script changes which `</script>` ends it. `None` when the piece is read.
    pub(super) fn script(&mut self, state: State, s: &[u8], i: &mut usize) -> Option<State> {
        let c = s[*i];
        Some(match state {
            State::ScriptLessThan => match c {
                b'/' => {
                    *i += 1;
                    self.temp.clear();
                    State::RawEndTagOpen(Raw::Script)
                }
                b'!' => {
                    *i += 1;
                    State::ScriptEscapeStart
                }
                _ => State::Text(Raw::Script),
            },
            State::ScriptEscapeStart | State::ScriptEscapeStartDash => match c {
                b'-' => {
                    *i += 1;
                    if state == State::ScriptEscapeStart {
                        State::ScriptEscapeStartDash
                    } else {
                        State::ScriptEscapedDashDash
                    }
                }
                _ => State::Text(Raw::Script),
            },
            State::Text(Raw::ScriptEscaped) => {
                let at = memchr2(b'-', b'<', &s[*i..])?;
                *i += at + 1;
                match s[*i - 1] {
                    b'-' => State::ScriptEscapedDash,
                    _ => State::ScriptEscapedLessThan,
                }
            }
            State::ScriptEscapedDash | State::ScriptEscapedDashDash => {
                *i += 1;
                match c {
                    b'-' => State::ScriptEscapedDashDash,
                    b'<' => State::ScriptEscapedLessThan,
                    b'>' if state == State::ScriptEscapedDashDash => State::Text(Raw::Script),
                    _ => State::Text(Raw::ScriptEscaped),
                }
            }
            State::ScriptEscapedLessThan => match c {
                b'/' => {
                    *i += 1;
                    self.temp.clear();
                    State::RawEndTagOpen(Raw::ScriptEscaped)
                }
                c if c.is_ascii_alphabetic() => {
                    self.temp.clear();
                    State::ScriptDoubleEscapeStart
                }
                _ => State::Text(Raw::ScriptEscaped),
            },
            State::ScriptDoubleEscapeStart | State::ScriptDoubleEscapeEnd => {
                let start = state == State::ScriptDoubleEscapeStart;
                let (on_script, otherwise) = if start {
                    (State::ScriptDoubleEscaped, State::Text(Raw::ScriptEscaped))
                } else {
                    (State::Text(Raw::ScriptEscaped), State::ScriptDoubleEscaped)
                };
                match c {
                    b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>' => {
                        *i += 1;
                        if self.temp == b"script" {
                            on_script
                        } else {
                            otherwise
                        }
                    }
                    c if c.is_ascii_alphabetic() => {
                        *i += 1;
                        if self.temp.len() <= MAX_NAME_BYTES {
                            self.temp.push(c.to_ascii_lowercase());
                        }
                        self.state
                    }
                    // Not consumed: read again in the state it returns to.
                    _ if start => State::Text(Raw::ScriptEscaped),
                    _ => State::ScriptDoubleEscaped,
                }
            }
            State::ScriptDoubleEscaped => {
                let at = memchr2(b'-', b'<', &s[*i..])?;
                *i += at + 1;
                match s[*i - 1] {
                    b'-' => State::ScriptDoubleEscapedDash,
                    _ => State::ScriptDoubleEscapedLessThan,
                }
            }
            State::ScriptDoubleEscapedDash | State::ScriptDoubleEscapedDashDash => {
                *i += 1;
                match c {
                    b'-' => State::ScriptDoubleEscapedDashDash,
                    b'<' => State::ScriptDoubleEscapedLessThan,
                    b'>' if state == State::ScriptDoubleEscapedDashDash => State::Text(Raw::Script),
                    _ => State::ScriptDoubleEscaped,
                }
            }
            State::ScriptDoubleEscapedLessThan => match c {
                b'/' => {
                    *i += 1;
                    self.temp.clear();
                    State::ScriptDoubleEscapeEnd
                }
                _ => State::ScriptDoubleEscaped,
            },
            _ => state,
        })
    }
}

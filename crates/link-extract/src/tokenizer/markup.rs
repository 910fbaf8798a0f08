//! Markup declarations after `<!`: comments as the HTML standard ends them (`<!-->`, `<!--->`,
//! `--!>`), DOCTYPE and bogus comments (to the first `>`), CDATA sections in foreign content.

use memchr::memchr;

use super::{State, Tokenizer};

impl Tokenizer {
    /// `<!`: comments (`<!-->`, `--!>` included), DOCTYPE, bogus comments and CDATA sections.
    /// `None` when the piece is read (or the look-ahead carried to the next one).
    pub(super) fn markup(
        &mut self,
        state: State,
        s: &[u8],
        i: &mut usize,
        last: bool,
        cdata_allowed: bool,
    ) -> Option<State> {
        let c = s[*i];
        Some(match state {
            State::MarkupDeclarationOpen => {
                let rest = &s[*i..];
                let doctype = b"doctype";
                let cdata = b"[CDATA[";
                if rest.starts_with(b"--") {
                    *i += 2;
                    State::CommentStart
                } else if rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(doctype) {
                    *i += 7;
                    State::Doctype
                } else if rest.starts_with(cdata) && cdata_allowed {
                    *i += 7;
                    State::Cdata
                } else if !last
                    && rest.len() < 7
                    && (b"--".starts_with(rest)
                        || doctype[..rest.len()].eq_ignore_ascii_case(rest)
                        || cdata.starts_with(rest))
                {
                    // A prefix of `--`, `doctype` or `[CDATA[`: ASCII.
                    self.carry.extend(rest.iter().map(|&b| char::from(b)));
                    return None;
                } else {
                    State::BogusComment
                }
            }
            State::CommentStart | State::CommentStartDash => match c {
                b'-' if state == State::CommentStart => {
                    *i += 1;
                    State::CommentStartDash
                }
                b'-' => {
                    *i += 1;
                    State::CommentEnd
                }
                b'>' => {
                    *i += 1;
                    State::Data
                }
                _ => State::Comment,
            },
            State::Comment => {
                let at = memchr(b'-', &s[*i..])?;
                *i += at + 1;
                State::CommentEndDash
            }
            State::CommentEndDash => match c {
                b'-' => {
                    *i += 1;
                    State::CommentEnd
                }
                _ => State::Comment,
            },
            State::CommentEnd => match c {
                b'>' => {
                    *i += 1;
                    State::Data
                }
                b'!' => {
                    *i += 1;
                    State::CommentEndBang
                }
                b'-' => {
                    *i += 1;
                    State::CommentEnd
                }
                _ => State::Comment,
            },
            State::CommentEndBang => match c {
                b'-' => {
                    *i += 1;
                    State::CommentEndDash
                }
                b'>' => {
                    *i += 1;
                    State::Data
                }
                _ => State::Comment,
            },
            State::BogusComment | State::Doctype => {
                let at = memchr(b'>', &s[*i..])?;
                *i += at + 1;
                State::Data
            }
            State::Cdata => {
                let at = memchr(b']', &s[*i..])?;
                *i += at + 1;
                State::CdataBracket
            }
            State::CdataBracket => match c {
                b']' => {
                    *i += 1;
                    State::CdataEnd
                }
                _ => State::Cdata,
            },
            State::CdataEnd => match c {
                b']' => {
                    *i += 1;
                    State::CdataEnd
                }
                b'>' => {
                    *i += 1;
                    State::Data
                }
                _ => State::Cdata,
            },
            _ => state,
        })
    }
}

//! An HTML5 tokenizer that finds where tags begin and end exactly as the WHATWG tokenizer does
//! (comments with `<!-->` and `--!>`, bogus comments, DOCTYPE, CDATA, RCDATA, RAWTEXT,
//! PLAINTEXT and the script-data escapes) but keeps only what link extraction needs: tag names
//! and, for the tags its sink asks for, the first value of a few attributes. It copies no text
//! and builds no tree; which content model follows a start tag is the sink's say, as it is the
//! tree builder's in a browser (`tree.rs`).
//!
//! It takes the page in pieces (`feed`) and keeps its state between them, so a body can be read
//! as it arrives. What it holds is bounded whatever the input: tag and attribute names are cut at
//! `MAX_NAME_BYTES`, kept values at `MAX_VALUE_BYTES`, and look-ahead is at most the seven bytes
//! after `<!`.

mod attrs;
mod fast;
mod markup;
mod script;

use memchr::memchr;

/// Longer tag and attribute names are cut (and marked so they match nothing): no name this
/// extractor acts on is near this long.
const MAX_NAME_BYTES: usize = 32;
/// A kept attribute value longer than this is dropped as if absent: no URL is this long (the
/// frontier refuses URLs past a few KiB), and a hostile page cannot make the value grow.
pub(super) const MAX_VALUE_BYTES: usize = 64 * 1024;
/// The content model the tree builder puts the tokenizer in after a start tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Content {
    Data,
    Rcdata,
    Rawtext,
    ScriptData,
    Plaintext,
}

/// A start tag, as far as it was kept.
#[derive(Debug)]
pub(super) struct Tag<'a> {
    /// Lower-case name (U+0000 read as U+FFFD).
    pub name: &'a str,
    /// `<name ... />`.
    pub self_closing: bool,
    attrs: &'a [(&'static str, String)],
}

impl Tag<'_> {
    /// The raw (undecoded) first value of attribute `name`, if kept and present.
    pub fn raw_attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the tokenizer reports, and the tree-construction decisions it asks for.
pub(super) trait Sink {
    /// Keep the attributes of start tags named `name`.
    fn wants_attributes(&self, name: &[u8]) -> bool;
    /// A start tag; returns the content model that follows it.
    fn start_tag(&mut self, tag: &Tag<'_>) -> Content;
    /// An end tag (lower-case name).
    fn end_tag(&mut self, name: &str);
    /// Whether `text` must be called (tree construction still cares about text).
    fn wants_text(&self) -> bool;
    /// Text other than whitespace in the data state; `only_nul` when all of it is U+0000
    /// (which a tree builder drops, though it opens the body).
    fn text(&mut self, only_nul: bool);
    /// Whether `<![CDATA[` opens a CDATA section here (in foreign content) or a bogus comment.
    fn cdata_allowed(&self) -> bool;
}

/// Text content models the tokenizer returns to after a `</` that was not their end tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Raw {
    Rcdata,
    Rawtext,
    Script,
    ScriptEscaped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Data,
    Text(Raw),
    Plaintext,
    TagOpen,
    EndTagOpen,
    TagName,
    RawLessThan(Raw),
    RawEndTagOpen(Raw),
    RawEndTagName(Raw),
    ScriptLessThan,
    ScriptEscapeStart,
    ScriptEscapeStartDash,
    ScriptEscapedLessThan,
    ScriptEscapedDash,
    ScriptEscapedDashDash,
    ScriptDoubleEscapeStart,
    ScriptDoubleEscaped,
    ScriptDoubleEscapedDash,
    ScriptDoubleEscapedDashDash,
    ScriptDoubleEscapedLessThan,
    ScriptDoubleEscapeEnd,
    BeforeAttrName,
    AttrName,
    AfterAttrName,
    BeforeAttrValue,
    AttrValueQuoted(u8),
    AttrValueUnquoted,
    AfterAttrValueQuoted,
    SelfClosingStartTag,
    MarkupDeclarationOpen,
    CommentStart,
    CommentStartDash,
    Comment,
    CommentEndDash,
    CommentEnd,
    CommentEndBang,
    BogusComment,
    Doctype,
    Cdata,
    CdataBracket,
    CdataEnd,
}

/// The tokenizer's state between pieces of input.
#[derive(Debug)]
pub(super) struct Tokenizer {
    state: State,
    /// Unread look-ahead after `<!` carried to the next piece (ASCII).
    carry: String,
    /// The tag being read: its lower-case name, kept as text (slices of the valid UTF-8
    /// input, cut only at ASCII delimiters), so it is never validated again; a name past
    /// `MAX_NAME_BYTES` is not kept, only marked `long`.
    end_tag: bool,
    name: String,
    long: bool,
    self_closing: bool,
    keep: bool,
    attrs: Vec<(&'static str, String)>,
    /// How many of `attrs` belong to the tag being read.
    attr_count: usize,
    /// The attribute being read: its name, value and whether it is kept (a value past
    /// `MAX_VALUE_BYTES` is not). The value is slices of the (valid UTF-8) input, so it needs
    /// no validation.
    attr_name: Vec<u8>,
    attr_value: String,
    attr_kept: Option<&'static str>,
    /// Lower-case letters after `</` in text, or of `<script` in an escaped script.
    temp: Vec<u8>,
    /// The element whose end tag ends the current text content.
    text_end: String,
}

/// Where `needle` first is in `hay`. Most spans of markup are short (the text between two
/// tags, an attribute value), and on those memchr's dispatch and set-up cost more than the
/// search: the first bytes are looked at one by one, memchr searches the rest. (memchr was 17%
/// of tokenizing the test site's pages; this halves it.)
#[inline]
fn find(needle: u8, hay: &[u8]) -> Option<usize> {
    const SHORT: usize = 16;
    let head = &hay[..hay.len().min(SHORT)];
    if let Some(at) = head.iter().position(|&b| b == needle) {
        return Some(at);
    }
    match hay.get(SHORT..) {
        Some(rest) => memchr(needle, rest).map(|at| at + SHORT),
        None => None,
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn push_lower(buf: &mut Vec<u8>, b: u8) {
    if buf.len() <= MAX_NAME_BYTES {
        match b {
            0 => buf.extend_from_slice("\u{FFFD}".as_bytes()),
            _ => buf.push(b.to_ascii_lowercase()),
        }
    }
}

impl Tokenizer {
    pub(super) fn new() -> Self {
        Self {
            state: State::Data,
            carry: String::new(),
            end_tag: false,
            name: String::new(),
            long: false,
            self_closing: false,
            keep: false,
            attrs: Vec::new(),
            attr_count: 0,
            attr_name: Vec::new(),
            attr_value: String::new(),
            attr_kept: None,
            temp: Vec::new(),
            text_end: String::new(),
        }
    }

    /// Reads the next piece of the page.
    pub(super) fn feed(&mut self, piece: &str, sink: &mut impl Sink) {
        if self.carry.is_empty() {
            self.run(piece, false, sink);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.push_str(piece);
            self.run(&joined, false, sink);
        }
    }

    /// The page ended: an unfinished tag is dropped, as a browser drops it.
    pub(super) fn finish(&mut self, sink: &mut impl Sink) {
        let carry = std::mem::take(&mut self.carry);
        self.run(&carry, true, sink);
    }

    /// More of the tag's name: lower-cased, U+0000 read as U+FFFD; past `MAX_NAME_BYTES` the
    /// name is only marked long.
    fn push_name(&mut self, part: &str) {
        if self.long || self.name.len() + part.len() > MAX_NAME_BYTES {
            self.long = true;
            self.name.clear();
            return;
        }
        let from = self.name.len();
        if part.as_bytes().contains(&0) {
            self.name.extend(part.chars().map(|c| match c {
                '\0' => '\u{FFFD}',
                c => c,
            }));
        } else {
            self.name.push_str(part);
        }
        self.name[from..].make_ascii_lowercase();
        if self.name.len() > MAX_NAME_BYTES {
            self.long = true;
            self.name.clear();
        }
    }

    /// A tag whose name begins at `text[*i]`: read in one pass when it is plain
    /// (`fast.rs`), else by the state machine from its name.
    fn tag(&mut self, end: bool, text: &str, i: &mut usize, sink: &mut impl Sink) -> State {
        let fast = match end {
            false => self.fast_start_tag(text, *i, sink),
            true => self.fast_end_tag(text, *i, sink),
        };
        match fast {
            Some((next, state)) => {
                *i = next;
                state
            }
            None => {
                self.new_tag(end);
                State::TagName
            }
        }
    }

    fn new_tag(&mut self, end: bool) {
        self.end_tag = end;
        self.name.clear();
        self.long = false;
        self.self_closing = false;
        self.keep = false;
        self.attr_count = 0;
        self.attr_kept = None;
    }

    /// The tag's name is complete: decide whether its attributes are kept.
    #[inline]
    fn tag_name_done(&mut self, sink: &impl Sink) {
        self.keep = !self.end_tag && !self.long && sink.wants_attributes(self.name.as_bytes());
    }

    fn emit(&mut self, sink: &mut impl Sink) -> State {
        self.finish_attr();
        let name = match self.long {
            false => self.name.as_str(),
            true => "\u{FFFD}long",
        };
        if self.end_tag {
            sink.end_tag(name);
            return State::Data;
        }
        let tag = Tag {
            name,
            self_closing: self.self_closing,
            attrs: &self.attrs[..self.attr_count],
        };
        let content = sink.start_tag(&tag);
        if content != Content::Data {
            self.text_end.clear();
            self.text_end.push_str(name);
        }
        match content {
            Content::Data => State::Data,
            Content::Rcdata => State::Text(Raw::Rcdata),
            Content::Rawtext => State::Text(Raw::Rawtext),
            Content::ScriptData => State::Text(Raw::Script),
            Content::Plaintext => State::Plaintext,
        }
    }

    fn run(&mut self, text: &str, last: bool, sink: &mut impl Sink) {
        let s = text.as_bytes();
        let mut i = 0;
        while i < s.len() {
            let c = s[i];
            self.state = match self.state {
                State::Data => {
                    let end = find(b'<', &s[i..]).map_or(s.len(), |at| i + at);
                    if sink.wants_text() {
                        let mut text = s[i..end].iter().filter(|&&b| !is_space(b));
                        if let Some(&first) = text.next() {
                            sink.text(first == 0 && text.all(|&b| b == 0));
                        }
                    }
                    if end == s.len() {
                        return;
                    }
                    i = end + 1;
                    State::TagOpen
                }
                State::Text(raw @ (Raw::Rcdata | Raw::Rawtext | Raw::Script)) => {
                    let Some(at) = memchr(b'<', &s[i..]) else {
                        return;
                    };
                    i += at + 1;
                    match raw {
                        Raw::Script => State::ScriptLessThan,
                        _ => State::RawLessThan(raw),
                    }
                }
                State::Plaintext => return,
                State::TagOpen => match c {
                    b'!' => {
                        i += 1;
                        State::MarkupDeclarationOpen
                    }
                    b'/' => {
                        i += 1;
                        State::EndTagOpen
                    }
                    b'?' => State::BogusComment,
                    c if c.is_ascii_alphabetic() => self.tag(false, text, &mut i, sink),
                    _ => {
                        if sink.wants_text() {
                            sink.text(false); // the `<` is text
                        }
                        State::Data
                    }
                },
                State::EndTagOpen => match c {
                    c if c.is_ascii_alphabetic() => self.tag(true, text, &mut i, sink),
                    b'>' => {
                        i += 1;
                        State::Data
                    }
                    _ => State::BogusComment,
                },
                State::TagName => {
                    let end = s[i..]
                        .iter()
                        .position(|&b| is_space(b) || b == b'/' || b == b'>')
                        .map_or(s.len(), |at| i + at);
                    // Both ends are ASCII delimiters or a piece's ends: between characters.
                    if let Some(part) = text.get(i..end) {
                        self.push_name(part);
                    }
                    i = end;
                    if end == s.len() {
                        continue;
                    }
                    self.tag_name_done(sink);
                    i += 1;
                    match s[end] {
                        b'/' => State::SelfClosingStartTag,
                        b'>' => self.emit(sink),
                        _ => State::BeforeAttrName,
                    }
                }
                State::RawLessThan(raw) => match c {
                    b'/' => {
                        i += 1;
                        self.temp.clear();
                        State::RawEndTagOpen(raw)
                    }
                    _ => State::Text(raw),
                },
                State::RawEndTagOpen(raw) => match c {
                    c if c.is_ascii_alphabetic() => State::RawEndTagName(raw),
                    _ => State::Text(raw),
                },
                State::RawEndTagName(raw) => match c {
                    c if c.is_ascii_alphabetic() => {
                        i += 1;
                        if self.temp.len() <= MAX_NAME_BYTES {
                            self.temp.push(c.to_ascii_lowercase());
                        }
                        State::RawEndTagName(raw)
                    }
                    b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'
                        if self.temp == self.text_end.as_bytes() =>
                    {
                        self.new_tag(true);
                        self.name.push_str(&self.text_end);
                        i += 1;
                        match c {
                            b'/' => State::SelfClosingStartTag,
                            b'>' => self.emit(sink),
                            _ => State::BeforeAttrName,
                        }
                    }
                    _ => State::Text(raw),
                },
                state @ (State::ScriptLessThan
                | State::ScriptEscapeStart
                | State::ScriptEscapeStartDash
                | State::Text(Raw::ScriptEscaped)
                | State::ScriptEscapedDash
                | State::ScriptEscapedDashDash
                | State::ScriptEscapedLessThan
                | State::ScriptDoubleEscapeStart
                | State::ScriptDoubleEscapeEnd
                | State::ScriptDoubleEscaped
                | State::ScriptDoubleEscapedDash
                | State::ScriptDoubleEscapedDashDash
                | State::ScriptDoubleEscapedLessThan) => match self.script(state, s, &mut i) {
                    Some(next) => next,
                    None => return,
                },
                State::BeforeAttrName => match c {
                    c if is_space(c) => {
                        i += 1;
                        State::BeforeAttrName
                    }
                    b'/' | b'>' => State::AfterAttrName,
                    b'=' => {
                        i += 1;
                        self.start_attr();
                        self.attr_name.push(b'=');
                        State::AttrName
                    }
                    _ => {
                        self.start_attr();
                        State::AttrName
                    }
                },
                State::AttrName => {
                    let end = s[i..]
                        .iter()
                        .position(|&b| is_space(b) || matches!(b, b'/' | b'>' | b'='))
                        .map_or(s.len(), |at| i + at);
                    if self.keep {
                        // Names matter only on tags whose attributes are kept.
                        for &b in &s[i..end] {
                            push_lower(&mut self.attr_name, b);
                        }
                    }
                    i = end;
                    if end == s.len() {
                        continue;
                    }
                    self.name_done();
                    if s[end] == b'=' {
                        i += 1;
                        State::BeforeAttrValue
                    } else {
                        State::AfterAttrName
                    }
                }
                State::AfterAttrName => match c {
                    c if is_space(c) => {
                        i += 1;
                        State::AfterAttrName
                    }
                    b'/' => {
                        i += 1;
                        State::SelfClosingStartTag
                    }
                    b'=' => {
                        i += 1;
                        State::BeforeAttrValue
                    }
                    b'>' => {
                        i += 1;
                        self.emit(sink)
                    }
                    _ => {
                        self.start_attr();
                        State::AttrName
                    }
                },
                State::BeforeAttrValue => match c {
                    c if is_space(c) => {
                        i += 1;
                        State::BeforeAttrValue
                    }
                    b'"' | b'\'' => {
                        i += 1;
                        State::AttrValueQuoted(c)
                    }
                    b'>' => {
                        i += 1;
                        self.emit(sink)
                    }
                    _ => State::AttrValueUnquoted,
                },
                State::AttrValueQuoted(quote) => {
                    let end = find(quote, &s[i..]).map_or(s.len(), |at| i + at);
                    self.push_value(text, i, end);
                    if end == s.len() {
                        i = end;
                        continue;
                    }
                    i = end + 1;
                    State::AfterAttrValueQuoted
                }
                State::AttrValueUnquoted => {
                    let end = s[i..]
                        .iter()
                        .position(|&b| is_space(b) || b == b'>')
                        .map_or(s.len(), |at| i + at);
                    self.push_value(text, i, end);
                    i = end;
                    if end == s.len() {
                        continue;
                    }
                    i += 1;
                    match s[end] {
                        b'>' => self.emit(sink),
                        _ => State::BeforeAttrName,
                    }
                }
                State::AfterAttrValueQuoted => match c {
                    c if is_space(c) => {
                        i += 1;
                        State::BeforeAttrName
                    }
                    b'/' => {
                        i += 1;
                        State::SelfClosingStartTag
                    }
                    b'>' => {
                        i += 1;
                        self.emit(sink)
                    }
                    _ => State::BeforeAttrName,
                },
                State::SelfClosingStartTag => match c {
                    b'>' => {
                        i += 1;
                        self.self_closing = true;
                        self.emit(sink)
                    }
                    _ => State::BeforeAttrName,
                },
                state @ (State::MarkupDeclarationOpen
                | State::CommentStart
                | State::CommentStartDash
                | State::Comment
                | State::CommentEndDash
                | State::CommentEnd
                | State::CommentEndBang
                | State::BogusComment
                | State::Doctype
                | State::Cdata
                | State::CdataBracket
                | State::CdataEnd) => {
                    let cdata = sink.cdata_allowed();
                    match self.markup(state, s, &mut i, last, cdata) {
                        Some(next) => next,
                        None => return,
                    }
                }
            };
        }
    }
}

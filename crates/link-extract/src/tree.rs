//! What an HTML5 tree builder (scripting off, as for a client that runs no script) decides that
//! a tokenizer alone cannot, kept to what changes which links a page has:
//!
//! - which start tags switch the tokenizer to RCDATA, RAWTEXT, script data or PLAINTEXT — only
//!   HTML elements do; `<noscript>` does not, scripting being off;
//! - foreign content: inside `<svg>` and `<math>` (outside their integration points) `<style>`
//!   or `<script>` hold markup and `<![CDATA[` opens a CDATA section; the elements that break out
//!   of foreign content end it;
//! - framesets: `<frame>` exists only in a frameset document, and once the `<frameset>` is in,
//!   nothing but frames is.
//!
//! Where a tree builder reorders or duplicates elements (tables foster-parenting misplaced
//! content, the adoption agency cloning `<a>` across misnested tags) the set of links is the
//! same and only their order or repeats may differ; the differential tests against the DOM say
//! exactly which.

use super::tokenizer::{Content, Tag};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ns {
    Html,
    Svg,
    MathMl,
}

/// An element open inside foreign content.
#[derive(Debug)]
struct Open {
    name: Name,
    ns: Ns,
    /// An HTML integration point (svg `foreignObject`, `desc`, `title`; MathML
    /// `annotation-xml` declaring HTML).
    html_point: bool,
    /// A MathML text integration point (`mi`, `mo`, `mn`, `ms`, `mtext`).
    text_point: bool,
}

/// The tree builder's state, as far as link extraction needs it.
#[derive(Debug)]
pub(super) struct Tree {
    /// Elements open since the outermost `<svg>` or `<math>`; empty in plain HTML.
    foreign: Vec<Open>,
    /// No content yet that rules out a frameset (the spec's "frameset-ok" flag).
    frameset_ok: bool,
    in_frameset: bool,
    /// `<frameset>` elements open; frames after the outermost one closed are ignored.
    framesets: u32,
    /// HTML elements open outside foreign content, by name, closed by their end tags (and `<p>`
    /// by the blocks that close it): what an end tag inside `<svg>` or `<math>` may close.
    html: Vec<Name>,
    /// `<template>` elements open: template contents never hold a frameset.
    templates: u32,
    /// Content that belongs in `<body>` has been seen (a frameset would throw it away).
    in_body: bool,
}

/// What a start tag becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Insert {
    /// An element (its links count); false when the tree builder ignores the tag.
    pub element: bool,
    /// The content model that follows.
    pub content: Content,
    /// A `<frameset>` replaced the body: the body's elements are gone.
    pub body_dropped: bool,
}

impl Insert {
    fn element(content: Content) -> Self {
        Self {
            element: true,
            content,
            body_dropped: false,
        }
    }

    fn ignored() -> Self {
        Self {
            element: false,
            content: Content::Data,
            body_dropped: false,
        }
    }
}

/// Start tags that stay in `<head>` (or before it); any other starts the body.
const IN_HEAD: u8 = 1;
/// HTML start tags that end foreign content (the spec's list; `font` only with `color`,
/// `face` or `size`).
const BREAKS_OUT: u8 = 2;
/// HTML start tags after which a `<frameset>` is ignored.
const NO_FRAMESET: u8 = 4;
/// Start tags that close an open `<p>`.
const CLOSES_P: u8 = 8;
/// Elements without content: never open.
const VOID: u8 = 16;

/// What the tree builder's lists say of an element name (one `match`, not a scan of lists).
fn class(name: &str) -> u8 {
    match name {
        "address" => CLOSES_P,
        "applet" => NO_FRAMESET,
        "area" => NO_FRAMESET | VOID,
        "article" => CLOSES_P,
        "aside" => CLOSES_P,
        "b" => BREAKS_OUT,
        "base" => IN_HEAD | VOID,
        "basefont" => IN_HEAD | VOID,
        "bgsound" => IN_HEAD | VOID,
        "big" => BREAKS_OUT,
        "blockquote" => BREAKS_OUT | CLOSES_P,
        "body" => BREAKS_OUT | NO_FRAMESET,
        "br" => BREAKS_OUT | NO_FRAMESET | VOID,
        "button" => NO_FRAMESET,
        "center" => BREAKS_OUT | CLOSES_P,
        "code" => BREAKS_OUT,
        "col" => VOID,
        "dd" => BREAKS_OUT | NO_FRAMESET,
        "details" => CLOSES_P,
        "dialog" => CLOSES_P,
        "dir" => CLOSES_P,
        "div" => BREAKS_OUT | CLOSES_P,
        "dl" => BREAKS_OUT | CLOSES_P,
        "dt" => BREAKS_OUT | NO_FRAMESET,
        "em" => BREAKS_OUT,
        "embed" => BREAKS_OUT | NO_FRAMESET | VOID,
        "fieldset" => CLOSES_P,
        "figcaption" => CLOSES_P,
        "figure" => CLOSES_P,
        "footer" => CLOSES_P,
        "form" => CLOSES_P,
        "frame" => VOID,
        "h1" => BREAKS_OUT | CLOSES_P,
        "h2" => BREAKS_OUT | CLOSES_P,
        "h3" => BREAKS_OUT | CLOSES_P,
        "h4" => BREAKS_OUT | CLOSES_P,
        "h5" => BREAKS_OUT | CLOSES_P,
        "h6" => BREAKS_OUT | CLOSES_P,
        "head" => IN_HEAD | BREAKS_OUT,
        "header" => CLOSES_P,
        "hgroup" => CLOSES_P,
        "hr" => BREAKS_OUT | NO_FRAMESET | CLOSES_P | VOID,
        "html" => IN_HEAD,
        "i" => BREAKS_OUT,
        "iframe" => NO_FRAMESET,
        "image" => NO_FRAMESET,
        "img" => BREAKS_OUT | NO_FRAMESET | VOID,
        "input" => NO_FRAMESET | VOID,
        "keygen" => NO_FRAMESET | VOID,
        "li" => BREAKS_OUT | NO_FRAMESET,
        "link" => IN_HEAD | VOID,
        "listing" => BREAKS_OUT | NO_FRAMESET | CLOSES_P,
        "main" => CLOSES_P,
        "marquee" => NO_FRAMESET,
        "menu" => BREAKS_OUT | CLOSES_P,
        "meta" => IN_HEAD | BREAKS_OUT | VOID,
        "nav" => CLOSES_P,
        "nobr" => BREAKS_OUT,
        "noframes" => IN_HEAD,
        "noscript" => IN_HEAD,
        "object" => NO_FRAMESET,
        "ol" => BREAKS_OUT | CLOSES_P,
        "p" => BREAKS_OUT | CLOSES_P,
        "pre" => BREAKS_OUT | NO_FRAMESET | CLOSES_P,
        "ruby" => BREAKS_OUT,
        "s" => BREAKS_OUT,
        "script" => IN_HEAD,
        "search" => CLOSES_P,
        "section" => CLOSES_P,
        "select" => NO_FRAMESET,
        "small" => BREAKS_OUT,
        "source" => VOID,
        "span" => BREAKS_OUT,
        "strike" => BREAKS_OUT,
        "strong" => BREAKS_OUT,
        "style" => IN_HEAD,
        "sub" => BREAKS_OUT,
        "summary" => CLOSES_P,
        "sup" => BREAKS_OUT,
        "table" => BREAKS_OUT | NO_FRAMESET | CLOSES_P,
        "template" => IN_HEAD,
        "textarea" => NO_FRAMESET,
        "title" => IN_HEAD,
        "track" => VOID,
        "tt" => BREAKS_OUT,
        "u" => BREAKS_OUT,
        "ul" => BREAKS_OUT | CLOSES_P,
        "var" => BREAKS_OUT,
        "wbr" => NO_FRAMESET,
        "xmp" => NO_FRAMESET,
        _ => 0,
    }
}

/// An element name as held on a stack of open elements: its first 24 bytes packed
/// into words, zero-padded (a name holds no U+0000; the tokenizer reads it as U+FFFD), so
/// making one copies no memory and comparing two is three integer compares. Longer names are
/// cut (none that matters here is that long).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Name([u64; 3]);

impl Name {
    const fn new(name: &str) -> Self {
        let bytes = name.as_bytes();
        Self([word(bytes, 0), word(bytes, 8), word(bytes, 16)])
    }
}

/// Bytes `from..from + 8` of `bytes` (as far as they go) as a little-endian word, built in a
/// register (a loop that or-ed bytes into an array in memory was most of `open_html_at`).
const fn word(bytes: &[u8], from: usize) -> u64 {
    let mut word = 0u64;
    let mut k = 0;
    while k < 8 && from + k < bytes.len() {
        word |= (bytes[from + k] as u64) << (8 * k);
        k += 1;
    }
    word
}

const TEMPLATE: Name = Name::new("template");
const P: Name = Name::new("p");
const ANNOTATION_XML: Name = Name::new("annotation-xml");

/// At most this many open HTML elements are tracked (deeper nesting is not followed), as
/// browsers cap the depth of the tree they build.
const MAX_OPEN: usize = 512;

impl Tree {
    pub(super) fn new() -> Self {
        Self {
            foreign: Vec::new(),
            frameset_ok: true,
            in_frameset: false,
            framesets: 0,
            html: Vec::new(),
            templates: 0,
            in_body: false,
        }
    }

    /// Tree construction still reads text (to know whether a frameset may come).
    pub(super) fn wants_text(&self) -> bool {
        self.frameset_ok && !self.in_frameset
    }

    /// Text other than whitespace opens the body; unless it is all U+0000 (dropped), a
    /// frameset can no longer replace the body.
    pub(super) fn text(&mut self, only_nul: bool) {
        self.frameset_ok &= only_nul;
        // Template contents are not the body.
        self.in_body |= self.templates == 0;
    }

    /// Whether the body has started (text or a start tag that belongs in it).
    pub(super) fn in_body(&self) -> bool {
        self.in_body
    }

    /// `<![CDATA[` is a CDATA section only in foreign content.
    pub(super) fn cdata_allowed(&self) -> bool {
        self.foreign.last().is_some_and(|top| top.ns != Ns::Html)
    }

    fn html_context(&self, name: &str) -> bool {
        match self.foreign.last() {
            None => true,
            Some(top) => {
                top.ns == Ns::Html
                    || top.html_point
                    || (top.text_point && name != "mglyph" && name != "malignmark")
                    || (top.name == ANNOTATION_XML && name == "svg")
            }
        }
    }

    /// A start tag: whether it becomes an element (links count only then), and the content
    /// model that follows it.
    pub(super) fn start_tag(&mut self, tag: &Tag<'_>) -> Insert {
        let name = tag.name;
        let class = class(name);
        if self.in_frameset {
            return match name {
                "frame" | "frameset" if self.framesets > 0 => {
                    if name == "frameset" {
                        self.framesets += 1;
                    }
                    Insert::element(Content::Data)
                }
                "noframes" => Insert::element(Content::Rawtext),
                _ => Insert::ignored(),
            };
        }
        if !self.html_context(name) {
            let breakout = class & BREAKS_OUT != 0
                || (name == "font"
                    && ["color", "face", "size"]
                        .iter()
                        .any(|a| tag.raw_attr(a).is_some()));
            if !breakout {
                let ns = match name {
                    "svg" => Ns::Svg,
                    "math" => Ns::MathMl,
                    _ => self.foreign.last().map_or(Ns::Html, |top| top.ns),
                };
                if !tag.self_closing {
                    self.push_foreign(tag, ns);
                }
                return Insert::element(Content::Data);
            }
            self.break_out();
        }
        // An HTML element.
        if class & IN_HEAD == 0 && name != "frameset" && self.templates == 0 {
            self.in_body = true;
        }
        match name {
            "frameset" => {
                // Before the body a frameset is always taken; in it, only if nothing ruled
                // it out (text or tags in a template in the head can have).
                let ok = !self.in_body || self.frameset_ok;
                if !(ok && self.foreign.is_empty() && self.templates == 0) {
                    return Insert::ignored();
                }
                self.in_frameset = true;
                self.framesets = 1;
                return Insert {
                    body_dropped: self.in_body,
                    ..Insert::element(Content::Data)
                };
            }
            "frame" => return Insert::ignored(),
            "template" => self.templates += 1,
            "input"
                if tag
                    .raw_attr("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("hidden")) => {}
            _ if class & NO_FRAMESET != 0 => self.frameset_ok = false,
            _ => {}
        }
        match name {
            "svg" if !tag.self_closing => self.push_foreign(tag, Ns::Svg),
            "math" if !tag.self_closing => self.push_foreign(tag, Ns::MathMl),
            _ if !self.foreign.is_empty() && class & VOID == 0 => self.foreign.push(Open {
                name: Name::new(name),
                ns: Ns::Html,
                html_point: false,
                text_point: false,
            }),
            _ if !self.foreign.is_empty() => {}
            _ => self.open_html(name, class),
        }
        let content = match name {
            "title" | "textarea" => Content::Rcdata,
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => Content::Rawtext,
            "script" => Content::ScriptData,
            "plaintext" => Content::Plaintext,
            _ => Content::Data,
        };
        Insert::element(content)
    }

    /// Where the HTML element an end tag named `name` closes is open; a `<template>` bounds the
    /// search for anything but `</template>`.
    fn open_html_at(&self, name: &str) -> Option<usize> {
        let key = Name::new(name);
        // `templates` counts every template opened and not yet closed by its end tag, so
        // at zero none is on the stack and the scan for one is skipped.
        let floor = match name {
            _ if self.templates == 0 => 0,
            "template" => 0,
            _ => self
                .html
                .iter()
                .rposition(|open| *open == TEMPLATE)
                .map_or(0, |t| t + 1),
        };
        self.html[floor..]
            .iter()
            .rposition(|open| *open == key)
            .map(|at| floor + at)
    }

    /// An HTML element opens outside foreign content.
    fn open_html(&mut self, name: &str, class: u8) {
        if class & CLOSES_P != 0 {
            if let Some(at) = self.html.iter().rposition(|open| *open == P) {
                self.html.truncate(at);
            }
        }
        if class & VOID == 0
            && !matches!(name, "html" | "head" | "body")
            && self.html.len() < MAX_OPEN
        {
            self.html.push(Name::new(name));
        }
    }

    fn push_foreign(&mut self, tag: &Tag<'_>, ns: Ns) {
        let name = tag.name;
        let html_point = match ns {
            Ns::Svg => matches!(name, "foreignobject" | "desc" | "title"),
            Ns::MathMl => {
                name == "annotation-xml"
                    && tag.raw_attr("encoding").is_some_and(|e| {
                        e.eq_ignore_ascii_case("text/html")
                            || e.eq_ignore_ascii_case("application/xhtml+xml")
                    })
            }
            Ns::Html => false,
        };
        let text_point = ns == Ns::MathMl && matches!(name, "mi" | "mo" | "mn" | "ms" | "mtext");
        self.foreign.push(Open {
            name: Name::new(name),
            ns,
            html_point,
            text_point,
        });
    }

    /// Pops foreign elements until an HTML element or an integration point is current.
    fn break_out(&mut self) {
        while let Some(top) = self.foreign.last() {
            if top.ns == Ns::Html || top.html_point || top.text_point {
                break;
            }
            self.foreign.pop();
        }
    }

    pub(super) fn end_tag(&mut self, name: &str) {
        if self.in_frameset {
            if name == "frameset" {
                self.framesets = self.framesets.saturating_sub(1);
            }
            return;
        }
        if !self.foreign.is_empty() {
            if matches!(name, "br" | "p") && !self.html_context(name) {
                self.break_out();
                return;
            }
            let key = Name::new(name);
            if let Some(at) = self.foreign.iter().rposition(|open| open.name == key) {
                if name == "template" && self.foreign[at].ns == Ns::Html {
                    self.templates = self.templates.saturating_sub(1);
                }
                self.foreign.truncate(at);
                return;
            }
            // Not open in the foreign content: it may close an HTML element around it, and
            // the foreign content with it.
            if self.open_html_at(name).is_none() {
                return;
            }
            self.foreign.clear();
        }
        // These end tags open the body when they come before it; `</br>` is a `<br>`.
        if matches!(name, "body" | "html" | "br") && self.templates == 0 {
            self.in_body = true;
            self.frameset_ok &= name != "br";
        }
        if let Some(at) = self.open_html_at(name) {
            if name == "template" {
                self.templates = self.templates.saturating_sub(1);
            }
            self.html.truncate(at);
        }
    }
}

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
    name: String,
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
    html: Vec<String>,
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
const HEAD: [&str; 13] = [
    "html", "head", "base", "basefont", "bgsound", "link", "meta", "noframes", "noscript",
    "script", "style", "template", "title",
];

/// HTML start tags that end foreign content (the spec's list; `font` only with these
/// attributes).
const BREAKOUT: [&str; 44] = [
    "b",
    "big",
    "blockquote",
    "body",
    "br",
    "center",
    "code",
    "dd",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "hr",
    "i",
    "img",
    "li",
    "listing",
    "menu",
    "meta",
    "nobr",
    "ol",
    "p",
    "pre",
    "ruby",
    "s",
    "small",
    "span",
    "strong",
    "strike",
    "sub",
    "sup",
    "table",
    "tt",
    "u",
    "ul",
    "var",
];

/// HTML start tags after which a `<frameset>` is ignored.
const NOT_FRAMESET: [&str; 24] = [
    "applet", "area", "body", "br", "button", "dd", "dt", "embed", "hr", "iframe", "image", "img",
    "input", "keygen", "li", "listing", "marquee", "object", "pre", "select", "table", "textarea",
    "wbr", "xmp",
];

/// Start tags that close an open `<p>`.
const CLOSES_P: [&str; 36] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "listing",
    "form",
    "table",
    "hr",
];

/// At most this many open HTML elements are tracked (deeper nesting is not followed).
const MAX_OPEN: usize = 4096;

/// Elements without content: never open.
const VOID: [&str; 16] = [
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input",
    "keygen", "link", "meta", "source", "track",
];

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
                    || (top.name == "annotation-xml" && name == "svg")
            }
        }
    }

    /// A start tag: whether it becomes an element (links count only then), and the content
    /// model that follows it.
    pub(super) fn start_tag(&mut self, tag: &Tag<'_>) -> Insert {
        let name = tag.name;
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
            let breakout = BREAKOUT.contains(&name)
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
        if !HEAD.contains(&name) && name != "frameset" && self.templates == 0 {
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
            n if NOT_FRAMESET.contains(&n) => self.frameset_ok = false,
            _ => {}
        }
        match name {
            "svg" if !tag.self_closing => self.push_foreign(tag, Ns::Svg),
            "math" if !tag.self_closing => self.push_foreign(tag, Ns::MathMl),
            _ if !self.foreign.is_empty() && !VOID.contains(&name) => self.foreign.push(Open {
                name: name.to_owned(),
                ns: Ns::Html,
                html_point: false,
                text_point: false,
            }),
            _ if !self.foreign.is_empty() => {}
            _ => self.open_html(name),
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
        let floor = match name {
            "template" => 0,
            _ => self
                .html
                .iter()
                .rposition(|open| open == "template")
                .map_or(0, |t| t + 1),
        };
        self.html[floor..]
            .iter()
            .rposition(|open| open == name)
            .map(|at| floor + at)
    }

    /// An HTML element opens outside foreign content.
    fn open_html(&mut self, name: &str) {
        if CLOSES_P.contains(&name) {
            if let Some(at) = self.html.iter().rposition(|open| open == "p") {
                self.html.truncate(at);
            }
        }
        if !VOID.contains(&name)
            && !matches!(name, "html" | "head" | "body")
            && self.html.len() < MAX_OPEN
        {
            self.html.push(name.to_owned());
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
            name: name.to_owned(),
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
            if let Some(at) = self.foreign.iter().rposition(|open| open.name == name) {
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

//! The DOM extractor, kept only as the oracle the streaming extractor is checked against:
//! html5ever's tree builder with scripting off builds the page's tree (scraper's), and every
//! element, in tree order and template contents included, goes through the same link rules as
//! in a crawl (`link_extract::Links`). Also the baseline of the extraction benchmark.

use std::borrow::Cow;

use html5ever::tendril::TendrilSink;
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::ParseOpts;
use link_extract::{decode, Extracted, Links};
use url::Url;

/// The links of `body` as a browser with scripting off would have its elements.
pub fn extract(
    body: &[u8],
    content_type: Option<&str>,
    page: &Url,
    respect_nofollow: bool,
) -> Extracted {
    let text = decode(body, content_type);
    let opts = ParseOpts {
        tree_builder: TreeBuilderOpts {
            scripting_enabled: false,
            ..TreeBuilderOpts::default()
        },
        ..ParseOpts::default()
    };
    let html = html5ever::driver::parse_document(
        scraper::HtmlTreeSink::new(scraper::Html::new_document()),
        opts,
    )
    .one(text);
    let mut links = Links::new(respect_nofollow);
    for node in html.tree.root().descendants() {
        if let Some(el) = node.value().as_element() {
            links.element(el.name(), |name| el.attr(name).map(Cow::Borrowed));
        }
    }
    links.finish(page)
}

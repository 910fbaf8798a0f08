//! Crawl IDs: the protocol names a crawl in most requests; this service holds one, the
//! crawl it was started with, named `DEFAULT` (an empty ID means it too, as upstream).

use tonic::Status;

/// The crawl ID of the crawl the service was started with (and of a request naming none).
pub const DEFAULT_CRAWL: &str = "DEFAULT";

/// The crawl a request names: `DEFAULT` for an empty ID; any other is unknown (one crawl
/// per service for now).
pub(crate) fn crawl(id: &str) -> Result<&'static str, Status> {
    if id.is_empty() || id == DEFAULT_CRAWL {
        Ok(DEFAULT_CRAWL)
    } else {
        Err(Status::not_found(format!(
            "no crawl `{id}`: this service holds the crawl {DEFAULT_CRAWL} only"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_crawl_id_is_the_default_and_others_are_unknown() {
        assert_eq!(crawl("").unwrap(), DEFAULT_CRAWL);
        assert_eq!(crawl("DEFAULT").unwrap(), DEFAULT_CRAWL);
        assert_eq!(crawl("other").unwrap_err().code(), tonic::Code::NotFound);
    }
}

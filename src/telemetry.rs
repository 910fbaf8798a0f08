//! Logging: `tracing` to stderr, filtered by `RUST_LOG` (default `info`), plain or JSON.
//!
//! The filter sits behind a reload handle, so the url-frontier API's SetLogLevel can change a
//! module's level (or the default) while the process runs: [`Levels`] keeps `RUST_LOG`'s
//! directives and the levels set since, and rebuilds the filter from both.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Layer, Registry};

/// Sets up logging; the handle changes levels later (`None` when logging was set up
/// already, e.g. twice in one process).
pub fn init(format: engine::LogFormat) -> Option<Arc<Levels>> {
    let base = std::env::var("RUST_LOG")
        .ok()
        .filter(|d| EnvFilter::try_new(d).is_ok())
        .unwrap_or_else(|| "info".to_owned());
    let (filter, handle) = reload::Layer::new(EnvFilter::new(&base));
    let out = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let out = if format == engine::LogFormat::Json {
        out.json().boxed()
    } else {
        out.boxed()
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(out)
        .try_init()
        .ok()?;
    Some(Arc::new(Levels {
        base,
        handle,
        set: Mutex::default(),
    }))
}

/// The process's log levels, changeable while it runs.
pub struct Levels {
    /// `RUST_LOG`'s directives (or `info`).
    base: String,
    handle: reload::Handle<EnvFilter, Registry>,
    /// Levels set since start, by target ("" = the default).
    set: Mutex<BTreeMap<String, tracing::Level>>,
}

impl std::fmt::Debug for Levels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Levels").field("base", &self.base).finish()
    }
}

/// The directives of `base` with `set` applied: a level set for a target replaces `base`'s
/// directive for it, and one set for "" replaces its default level.
fn directives(base: &str, set: &BTreeMap<String, tracing::Level>) -> String {
    let mut out: Vec<String> = Vec::new();
    if let Some(level) = set.get("") {
        out.push(level.to_string().to_ascii_lowercase());
    }
    for d in base.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let target = d.split(['=', '[']).next().unwrap_or(d);
        let bare_level = !d.contains('=') && target.parse::<tracing::Level>().is_ok();
        let replaced = if bare_level {
            set.contains_key("")
        } else {
            set.contains_key(target)
        };
        if !replaced {
            out.push(d.to_owned());
        }
    }
    for (target, level) in set.iter().filter(|(t, _)| !t.is_empty()) {
        out.push(format!(
            "{target}={}",
            level.to_string().to_ascii_lowercase()
        ));
    }
    out.join(",")
}

/// Most targets given a level of their own while the process runs.
const MAX_TARGETS: usize = 256;

impl urlfrontier_service::LogLevels for Levels {
    fn set(&self, target: &str, level: tracing::Level) -> Result<(), String> {
        let mut set = self.set.lock().unwrap_or_else(|e| e.into_inner());
        if !set.contains_key(target) && set.len() >= MAX_TARGETS {
            return Err(format!(
                "{MAX_TARGETS} modules have levels of their own already; set one of them"
            ));
        }
        let before = set.insert(target.to_owned(), level);
        let undo = |set: &mut BTreeMap<String, tracing::Level>| match before {
            Some(l) => set.insert(target.to_owned(), l),
            None => set.remove(target),
        };
        let filter = match EnvFilter::try_new(directives(&self.base, &set)) {
            Ok(f) => f,
            Err(e) => {
                undo(&mut set);
                return Err(format!("`{target}={level}` is not a log directive: {e}"));
            }
        };
        self.handle.reload(filter).map_err(|e| {
            undo(&mut set);
            format!("the log filter could not be changed: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_set_replace_those_of_rust_log() {
        let mut set = BTreeMap::new();
        assert_eq!(directives("info,engine=debug", &set), "info,engine=debug");
        set.insert("engine".to_owned(), tracing::Level::WARN);
        set.insert("redis_frontier".to_owned(), tracing::Level::TRACE);
        assert_eq!(
            directives("info,engine=debug", &set),
            "info,engine=warn,redis_frontier=trace"
        );
        set.insert(String::new(), tracing::Level::ERROR);
        assert_eq!(
            directives("info,engine=debug", &set),
            "error,engine=warn,redis_frontier=trace"
        );
    }
}

//! Logging: `tracing` to stderr, filtered by `RUST_LOG` (default `info`), plain or JSON.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

pub fn init(format: engine::LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = if format == engine::LogFormat::Json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

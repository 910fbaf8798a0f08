//! Failures that carry their exit code, and the one place that prints them.

use std::fmt;
use std::process::ExitCode;

/// `crawler health`: the crawl is not healthy (what a container HEALTHCHECK expects).
pub const UNHEALTHY: u8 = 1;
/// Bad usage (EX_USAGE).
pub const USAGE: u8 = 64;
/// Input data is malformed (EX_DATAERR).
pub const DATA: u8 = 65;
/// An input file cannot be opened (EX_NOINPUT).
pub const NO_INPUT: u8 = 66;
/// `crawl`: not one seed could be fetched (EX_UNAVAILABLE).
pub const UNAVAILABLE: u8 = 69;
/// Output could not be written (EX_IOERR).
pub const IO: u8 = 74;

/// An error message and the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl fmt::Display) -> Self {
        Self {
            code,
            message: message.to_string(),
        }
    }
}

/// Prints a failure as one line on stderr and turns it into the process exit code.
pub fn report(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("crawler: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

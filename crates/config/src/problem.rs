//! What a configuration's problems are reported as: each names its key, where the value came
//! from (default, file and line, variable, flag) and what is wrong; all of them in one error.

use std::fmt;

/// Where a setting came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The built-in defaults.
    Default,
    /// A file, with the line of the key when known.
    File { path: String, line: Option<usize> },
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File {
                path,
                line: Some(l),
            } => write!(f, "{path}:{l}"),
            Origin::File { path, line: None } => f.write_str(path),
            Origin::Env(v) => write!(f, "environment {v}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One problem with a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `section.key`.
    pub key: String,
    /// Where the value came from.
    pub origin: Origin,
    /// What is wrong.
    pub message: String,
}

/// Every problem found, in one error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError(pub Vec<Problem>);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} configuration problem(s):", self.0.len())?;
        for p in &self.0 {
            writeln!(f, "  {} ({}): {}", p.key, p.origin, p.message)?;
        }
        Ok(())
    }
}

//! Every key of `crawler.toml`: its type and range, read from the shipped file itself. Each
//! key there has its comment, a `#:` line giving its type and range, and its default — the
//! one place a setting is defined. The loader checks the merged layers against this schema;
//! a test checks the choices' names against their enums and the keys against the structs.
//!
//! The `#:` forms: `boolean`, `string`, `list of strings`, `table of strings`,
//! `integer MIN..=MAX` (or `integer MIN..` for no upper bound), `number MIN..=MAX`,
//! `"a" | "b"` (one of these strings), and `integer 0..=MAX or "WORD"`.

use std::sync::LazyLock;

use toml::Value;

use super::DEFAULT_TOML;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Bool,
    UInt {
        min: u64,
        max: u64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Str,
    Choice(&'static [&'static str]),
    StrList,
    StrMap,
    /// A count in `0..=max`, or the word standing for a default taken from another key.
    CountOr {
        word: &'static str,
        max: u64,
    },
}

/// The sections of `crawler.toml`, in the file's order.
pub(super) static SECTIONS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut sections: Vec<&'static str> = Vec::new();
    for (section, _, _) in SCHEMA.iter() {
        if sections.last() != Some(section) {
            sections.push(section);
        }
    }
    sections
});

/// The schema: every key, its type and its range (see the module header).
pub(super) static SCHEMA: LazyLock<Vec<(&'static str, &'static str, Kind)>> =
    LazyLock::new(|| read(DEFAULT_TOML).expect("the shipped crawler.toml types every key"));

/// Every `(section, key, kind)` of a `crawler.toml` text whose keys each have a `#:` line.
pub(super) fn read(text: &'static str) -> Result<Vec<(&'static str, &'static str, Kind)>, String> {
    let mut out = Vec::new();
    let mut section = None;
    let mut pending: Option<Kind> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(t) = line.strip_prefix("#:") {
            pending = Some(parse_kind(t).map_err(|e| format!("line {}: {e}", n + 1))?);
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(name);
            pending = None;
        } else if let Some((key, _)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
            let Some(section) = section else {
                return Err(format!("line {}: a key outside any section", n + 1));
            };
            let key = key.trim();
            let kind = pending.take().ok_or_else(|| {
                format!("line {}: `{section}.{key}` has no `#:` type line", n + 1)
            })?;
            out.push((section, key, kind));
        }
    }
    Ok(out)
}

/// One `#:` line's type (see the module header).
fn parse_kind(t: &'static str) -> Result<Kind, String> {
    let t = t.trim();
    Ok(match t {
        "boolean" => Kind::Bool,
        "string" => Kind::Str,
        "list of strings" => Kind::StrList,
        "table of strings" => Kind::StrMap,
        _ if t.starts_with('"') => {
            let names: Result<Vec<&'static str>, String> = t
                .split('|')
                .map(|c| {
                    c.trim()
                        .strip_prefix('"')
                        .and_then(|c| c.strip_suffix('"'))
                        .ok_or_else(|| format!("`{c}` is not a quoted name"))
                })
                .collect();
            // Built once for the program's life, as a `static` table would be.
            Kind::Choice(Box::leak(names?.into_boxed_slice()))
        }
        _ => {
            if let Some(range) = t.strip_prefix("integer ") {
                let (range, word) = match range.split_once(" or ") {
                    Some((r, w)) => (r, Some(w)),
                    None => (range, None),
                };
                let (min, max) = int_range(range)?;
                match word {
                    None => Kind::UInt { min, max },
                    Some(w) if min == 0 => Kind::CountOr {
                        word: w
                            .trim()
                            .strip_prefix('"')
                            .and_then(|w| w.strip_suffix('"'))
                            .ok_or_else(|| format!("`{w}` is not a quoted word"))?,
                        max,
                    },
                    Some(_) => return Err("an integer-or-word starts at 0".into()),
                }
            } else if let Some(range) = t.strip_prefix("number ") {
                let (min, max) = range
                    .split_once("..=")
                    .ok_or_else(|| format!("`{range}` is not MIN..=MAX"))?;
                let num = |x: &str| x.trim().parse::<f64>().map_err(|e| format!("`{x}`: {e}"));
                Kind::Float {
                    min: num(min)?,
                    max: num(max)?,
                }
            } else {
                return Err(format!("unknown type `{t}`"));
            }
        }
    })
}

/// `MIN..=MAX` or `MIN..` (no upper bound); `_` may group digits.
fn int_range(r: &str) -> Result<(u64, u64), String> {
    let num = |x: &str| {
        x.trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|e| format!("`{x}`: {e}"))
    };
    match r.trim().split_once("..=") {
        Some((min, max)) => Ok((num(min)?, num(max)?)),
        None => match r.trim().strip_suffix("..") {
            Some(min) => Ok((num(min)?, u64::MAX)),
            None => Err(format!("`{r}` is not MIN..=MAX or MIN..")),
        },
    }
}

pub(super) fn kind_of(section: &str, key: &str) -> Option<Kind> {
    SCHEMA
        .iter()
        .find(|(s, k, _)| *s == section && *k == key)
        .map(|(_, _, kind)| *kind)
}

pub(super) fn check(kind: Kind, v: &Value) -> Result<(), String> {
    let type_name = v.type_str();
    match (kind, v) {
        (Kind::Bool, Value::Boolean(_)) | (Kind::Str, Value::String(_)) => Ok(()),
        (Kind::UInt { min, max }, Value::Integer(i)) => {
            if *i < 0 || (*i as u64) < min || (*i as u64) > max {
                Err(format!("{i} is out of range {min}..={max}"))
            } else {
                Ok(())
            }
        }
        (Kind::Float { min, max }, Value::Float(x)) => {
            if !(min..=max).contains(x) {
                Err(format!("{x} is out of range {min}..={max}"))
            } else {
                Ok(())
            }
        }
        (Kind::Choice(choices), Value::String(s)) => {
            if choices.contains(&s.as_str()) {
                Ok(())
            } else {
                Err(format!("`{s}` is not one of {}", choices.join(", ")))
            }
        }
        (Kind::StrList, Value::Array(a)) => match a.iter().find(|x| !x.is_str()) {
            Some(x) => Err(format!(
                "list items must be strings, found {}",
                x.type_str()
            )),
            None => Ok(()),
        },
        (Kind::StrMap, Value::Table(t)) => match t.iter().find(|(_, x)| !x.is_str()) {
            Some((k, x)) => Err(format!(
                "value of `{k}` must be a string, found {}",
                x.type_str()
            )),
            None => Ok(()),
        },
        (Kind::CountOr { max, .. }, Value::Integer(i)) => {
            if *i < 0 || (*i as u64) > max {
                Err(format!("{i} is out of range 0..={max}"))
            } else {
                Ok(())
            }
        }
        (Kind::CountOr { word, .. }, Value::String(s)) if s == word => Ok(()),
        (kind, _) => Err(format!("expected {}, found {type_name}", kind_name(kind))),
    }
}

pub(super) fn kind_name(kind: Kind) -> String {
    match kind {
        Kind::Bool => "a boolean".into(),
        Kind::UInt { .. } => "a non-negative integer".into(),
        Kind::Float { .. } => "a number".into(),
        Kind::Str | Kind::Choice(_) => "a string".into(),
        Kind::StrList => "a list of strings".into(),
        Kind::StrMap => "a table of strings".into(),
        Kind::CountOr { word, .. } => format!("a non-negative integer or \"{word}\""),
    }
}

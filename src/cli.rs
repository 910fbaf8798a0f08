//! The command line, declared with clap's derive API.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A concurrent web crawler built around a lock-free, Guava-compatible Bloom filter.
#[derive(Debug, Parser)]
#[command(name = "crawler", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build, query and inspect Bloom filter files in Guava's `BloomFilter.writeTo` format.
    #[command(subcommand)]
    Bloom(BloomCommand),
}

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Exit codes: 0 ok, 64 bad usage, 65 bad filter or key data, \
                        66 input file cannot be opened, 74 output cannot be written."
)]
pub enum BloomCommand {
    /// Build a filter from keys (one UTF-8 key per line), hashed like Guava's
    /// `Funnels.stringFunnel(UTF_8)`, and write it in Guava's format.
    Build(BuildArgs),
    /// Print one line per key: `1` if the filter might contain it, `0` if it certainly does not.
    Query(QueryArgs),
    /// Print the filter's shape and fill: bit size, hash count, bit count, estimated
    /// element count and expected false-positive probability.
    Info(InfoArgs),
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// Number of keys the filter is sized for (Guava's `expectedInsertions`).
    #[arg(long, value_name = "N")]
    pub expected: u64,
    /// Target false-positive probability at `--expected` keys, in (0, 1).
    #[arg(long, value_name = "P")]
    pub fpp: f64,
    /// Where to write the filter (replaced atomically).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// File of keys, one per line; standard input when absent.
    #[arg(long, value_name = "KEYS")]
    pub input: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// A filter file in Guava's format (written by this tool or by Java's `writeTo`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// File of keys, one per line; standard input when absent.
    #[arg(long, value_name = "KEYS")]
    pub input: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A filter file in Guava's format.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

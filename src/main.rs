//! The `crawler` binary: parse the command line, run the command, map failure to an exit code.
//!
//! Exit codes follow sysexits(3): 0 success, 64 bad usage, 65 bad input data (e.g. a file that
//! is not a Guava Bloom filter), 66 an input file that cannot be opened, 74 an I/O error
//! while writing output.

mod bloom_cmd;
mod cli;
mod crawl_cmd;
mod exit;
mod limits;
mod serve_cmd;
mod telemetry;

use std::process::ExitCode;

use clap::Parser;

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(exit::USAGE)
            } else {
                ExitCode::SUCCESS // --help, --version
            };
        }
    };
    exit::report(match cli.command {
        cli::Command::Bloom(cmd) => bloom_cmd::run(cmd),
        cli::Command::Crawl(args) => crawl_cmd::crawl(args),
        cli::Command::Serve(args) => serve_cmd::serve(args),
        cli::Command::Demo(args) => serve_cmd::demo(args),
        cli::Command::Config(cmd) => crawl_cmd::config(cmd),
        cli::Command::Health(args) => crawl_cmd::health(args),
        cli::Command::Forget(args) => crawl_cmd::forget(args),
    })
}

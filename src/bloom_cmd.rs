//! `crawler bloom build | query | info | export`: Bloom filter files that Java services share with us.
//!
//! Keys are read one per line (a trailing `\r` is dropped, so CRLF files work) and hashed as
//! Guava's `Funnels.stringFunnel(UTF_8)` hashes a `String`, so a Java service can
//! `BloomFilter.readFrom(in, Funnels.stringFunnel(UTF_8))` what `build` wrote and get the same
//! answers as `query`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bloom::{BloomFilter, StringFunnel};

use crate::cli::{BloomCommand, BuildArgs, ExportArgs, InfoArgs, QueryArgs};
use crate::exit::{Failure, DATA, IO, NO_INPUT, UNAVAILABLE, USAGE};

type Filter = BloomFilter<str, StringFunnel>;

pub fn run(cmd: BloomCommand) -> Result<(), Failure> {
    match cmd {
        BloomCommand::Build(args) => build(args),
        BloomCommand::Query(args) => query(args),
        BloomCommand::Info(args) => info(args),
        BloomCommand::Export(args) => export(args),
    }
}

/// `bloom export`: the shared visited set of a crawl in Redis, as a Guava file — one per
/// partition for a crawl of several (`OUT.0` … `OUT.N-1`), with `OUT.json` saying how a
/// reader finds a URL's file, or with `--merged` one file of every partition's bits while
/// their fill allows (`--max-fpp`).
fn export(args: ExportArgs) -> Result<(), Failure> {
    use redis_frontier::RedisFrontierError as E;
    let runtime = crate::crawl_cmd::runtime()?;
    let files = runtime
        .block_on(redis_frontier::export_partitions(
            &args.redis,
            &args.crawl_id,
        ))
        .map_err(|e| {
            let code = match &e {
                E::Redis(_) => UNAVAILABLE,
                E::NoCrawl(_) => NO_INPUT,
                _ => USAGE,
            };
            Failure::new(code, format!("bloom export from Redis: {e}"))
        })?;
    let write = |path: &Path, bytes: &[u8]| {
        write_atomically(path, |out| out.write_all(bytes))
            .map_err(|e| Failure::new(IO, format!("cannot write {}: {e}", path.display())))
    };
    if let [one] = &files[..] {
        return write(&args.out, one);
    }
    if args.merged {
        let (merged, fpp) = redis_frontier::merge_partitions(&files)
            .map_err(|e| Failure::new(DATA, format!("bloom export --merged: {e}")))?;
        if args.max_fpp.is_nan() || fpp > args.max_fpp {
            return Err(Failure::new(
                DATA,
                format!(
                    "bloom export --merged: the {} partitions' bits together would answer \
                     \"maybe\" for {:.2}% of URLs never seen (above --max-fpp {}); export one \
                     file per partition (without --merged)",
                    files.len(),
                    fpp * 100.0,
                    args.max_fpp
                ),
            ));
        }
        return write(&args.out, &merged);
    }
    let name = |suffix: String| {
        let mut p = args.out.clone().into_os_string();
        p.push(suffix);
        PathBuf::from(p)
    };
    let mut names = Vec::with_capacity(files.len());
    for (p, bytes) in files.iter().enumerate() {
        let path = name(format!(".{p}"));
        write(&path, bytes)?;
        names.push(
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
    }
    let manifest = serde_json::json!({
        "crawl_id": args.crawl_id,
        "partitions": files.len(),
        "partition_of": "Long.remainderUnsigned(Hashing.murmur3_128().hashString(queueKey, UTF_8).asLong(), partitions)",
        "queue_key": "the canonical URL's authority without user info (host, or host:port for a port not the scheme's default), unless a client named a queue key",
        "files": names,
    });
    write(&name(".json".into()), manifest.to_string().as_bytes())
}

fn build(args: BuildArgs) -> Result<(), Failure> {
    let filter = Filter::new(StringFunnel, args.expected, args.fpp).map_err(|e| {
        Failure::new(
            USAGE,
            format!(
                "cannot size a filter for --expected {} --fpp {}: {e}",
                args.expected, args.fpp
            ),
        )
    })?;
    let mut new = Vec::with_capacity(BATCH_KEYS);
    for_each_batch(args.input.as_deref(), |keys| {
        new.clear();
        if args.per_key {
            new.extend(keys.iter().map(|k| filter.put(k)));
        } else {
            filter.put_batch(keys.iter().copied(), &mut new);
        }
        Ok(())
    })?;
    write_atomically(&args.out, |out| filter.write_to(out))
        .map_err(|e| Failure::new(IO, format!("cannot write {}: {e}", args.out.display())))
}

fn query(args: QueryArgs) -> Result<(), Failure> {
    let filter = load(&args.file)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut found = Vec::with_capacity(BATCH_KEYS);
    let written = for_each_batch(args.input.as_deref(), |keys| {
        found.clear();
        if args.per_key {
            found.extend(keys.iter().map(|k| filter.might_contain(k)));
        } else {
            filter.might_contain_batch(keys.iter().copied(), &mut found);
        }
        for &hit in &found {
            out.write_all(if hit { b"1\n" } else { b"0\n" })
                .map_err(output_failure)?;
        }
        Ok(())
    });
    written?;
    out.flush().map_err(output_failure)
}

fn info(args: InfoArgs) -> Result<(), Failure> {
    let filter = load(&args.file)?;
    let text = format!(
        "strategy: {}\nbit_size: {}\nhash_functions: {}\nbit_count: {}\napproximate_element_count: {}\nexpected_fpp: {}\nfile_bytes: {}\n",
        filter.strategy().name(),
        filter.bit_size(),
        filter.num_hash_functions(),
        filter.bit_count(),
        filter.approximate_element_count(),
        filter.expected_fpp(),
        filter.raw().serialized_len(),
    );
    io::stdout()
        .write_all(text.as_bytes())
        .map_err(output_failure)
}

/// A closed stdout (e.g. `| head`) ends the command quietly; other write errors are reported.
fn output_failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Failure::new(IO, format!("cannot write output: {e}"))
}

fn open(path: &Path) -> Result<File, Failure> {
    File::open(path)
        .map_err(|e| Failure::new(NO_INPUT, format!("cannot open {}: {e}", path.display())))
}

fn load(path: &Path) -> Result<Filter, Failure> {
    let file = open(path)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let filter = Filter::read_from(&mut reader, StringFunnel).map_err(|e| {
        Failure::new(
            DATA,
            format!("{} is not a Guava Bloom filter: {e}", path.display()),
        )
    })?;
    // A file is one filter; anything after it means it is not what the user thinks it is.
    let mut rest = [0u8; 1];
    match reader.read(&mut rest) {
        Ok(0) => Ok(filter),
        Ok(_) => Err(Failure::new(
            DATA,
            format!(
                "{} is not a Guava Bloom filter: unexpected bytes after the filter",
                path.display()
            ),
        )),
        Err(e) => Err(Failure::new(
            DATA,
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

/// Keys handed to the filter at a time: its batch operations overlap the memory accesses of
/// many keys (1.05–2.3× the throughput on a filter larger than the caches; BENCHMARKS.md §1).
const BATCH_KEYS: usize = 1024;

/// Calls `f` with the keys of `input` (stdin when `None`), in order, up to [`BATCH_KEYS`] at
/// a time. A read error or a line that is not UTF-8 ends the run with an error after the keys
/// before it have been handed over.
fn for_each_batch(
    input: Option<&Path>,
    mut f: impl FnMut(&[&str]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let (reader, name): (Box<dyn BufRead>, String) = match input {
        Some(path) => (
            Box::new(BufReader::with_capacity(1 << 16, open(path)?)),
            path.display().to_string(),
        ),
        None => (Box::new(io::stdin().lock()), "standard input".to_owned()),
    };
    let mut reader = reader;
    let mut line = Vec::with_capacity(256);
    let mut number = 0u64;
    // The batch: its keys back to back in `text`, each ending where `ends` says.
    let mut text = String::new();
    let mut ends = Vec::with_capacity(BATCH_KEYS);
    let mut flush = |text: &mut String, ends: &mut Vec<usize>| {
        let mut start = 0;
        let keys: Vec<&str> = ends
            .iter()
            .map(|&end| {
                let key = &text[start..end];
                start = end;
                key
            })
            .collect();
        let result = if keys.is_empty() { Ok(()) } else { f(&keys) };
        text.clear();
        ends.clear();
        result
    };
    loop {
        line.clear();
        let n = match reader.read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(e) => {
                flush(&mut text, &mut ends)?;
                return Err(Failure::new(DATA, format!("cannot read {name}: {e}")));
            }
        };
        if n == 0 {
            return flush(&mut text, &mut ends);
        }
        number += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        match std::str::from_utf8(&line) {
            Ok(key) => text.push_str(key),
            Err(e) => {
                flush(&mut text, &mut ends)?;
                return Err(Failure::new(
                    DATA,
                    format!("{name}: line {number} is not valid UTF-8 ({e})"),
                ));
            }
        }
        ends.push(text.len());
        if ends.len() == BATCH_KEYS {
            flush(&mut text, &mut ends)?;
        }
    }
}

/// Writes to a temporary file beside `path` and renames it into place, so a reader never
/// sees a half-written filter.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut tmp = PathBuf::from(path);
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp{}", std::process::id()));
    tmp.set_file_name(name);
    let result = (|| {
        let mut out = BufWriter::new(File::create(&tmp)?);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

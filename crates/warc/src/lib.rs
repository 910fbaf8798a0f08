//! WARC 1.1 (ISO 28500) writing for the crawler's archive output.
//!
//! Design choices:
//! - **One gzip member per record.** A reader can seek to a record's offset and inflate just
//!   it (what CDX indexes and replay tools do), and a file cut after a crash is whole up to
//!   its last complete member.
//! - **Files rotate by size**, `<prefix>-<UTC timestamp>-<serial>.warc.gz`, each beginning
//!   with a `warcinfo` record naming the software and the settings that matter.
//! - **The writer is synchronous and owns its file**: the engine runs it off the async
//!   reactor; `sync` makes what was written durable (at each checkpoint).

mod member;
pub mod read;
mod record;
pub mod revisit;
mod time;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::{Compress, Compression};
use sha1::Digest;

pub use record::{sha1, sha1_label, Kind, Record, RecordId};
pub use time::Utc;

/// What can go wrong writing WARC files.
#[derive(Debug, thiserror::Error)]
pub enum WarcError {
    #[error("WARC file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The rest of a record's block after [`Record::block`] (see [`WarcWriter::write_with`]).
#[derive(Debug)]
pub enum Rest<'a> {
    /// In memory.
    Bytes(&'a [u8]),
    /// In a file, from its start to its end.
    File(&'a mut File),
}

/// Where a record landed: its file (name, in the writer's directory) and the byte offset of
/// its gzip member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub file: String,
    pub offset: u64,
}

/// How a writer names and fills its files.
#[derive(Debug, Clone)]
pub struct WarcConfig {
    /// Directory of the files (created if missing).
    pub dir: PathBuf,
    /// File name prefix.
    pub prefix: String,
    /// A file that reaches this many bytes is closed and the next record starts a new one.
    pub max_file_bytes: u64,
    /// The `warcinfo` record's fields (`software`, `operator`, settings), one per line.
    pub info: Vec<(String, String)>,
    /// gzip level of each record's member (1 fastest … 9 smallest).
    pub level: u32,
}

#[derive(Debug)]
struct Open {
    name: String,
    path: PathBuf,
    out: BufWriter<File>,
    len: u64,
}

/// Writes records into rotating `.warc.gz` files.
#[derive(Debug)]
pub struct WarcWriter {
    cfg: WarcConfig,
    /// The deflate state every member is written with (reset for each).
    deflate: Compress,
    /// Its output buffer.
    buf: Vec<u8>,
    serial: u32,
    open: Option<Open>,
    /// Where the next record goes when no file is open: the end of the last file closed, or,
    /// before this writer's first file, a name that sorts after every earlier writer's files
    /// and before every one of this writer's (see [`WarcWriter::position`]).
    end: Position,
}

impl WarcWriter {
    /// A writer into `cfg.dir` (created if missing; the first file is opened with the first
    /// record).
    pub fn new(cfg: WarcConfig) -> Result<Self, WarcError> {
        std::fs::create_dir_all(&cfg.dir).map_err(|source| WarcError::Io {
            path: cfg.dir.clone(),
            source,
        })?;
        Ok(Self {
            deflate: Compress::new(Compression::new(cfg.level.clamp(1, 9)), false),
            buf: Vec::new(),
            end: Position {
                file: format!("{}-{}", cfg.prefix, Utc::now().compact()),
                offset: 0,
            },
            cfg,
            serial: 0,
            open: None,
        })
    }

    /// Appends `record` as one gzip member; returns where it is.
    pub fn write(&mut self, record: &Record<'_>) -> Result<Position, WarcError> {
        self.write_parts(record, None)
    }

    /// Appends `record` whose block goes on past `record.block` with `rest` (an HTTP message's
    /// payload after its head, in memory or spooled to a file because it was large: a file is
    /// read once for the digests, then again into the record). `record.payload_at` counts
    /// from the start of `record.block`.
    pub fn write_with(
        &mut self,
        record: &Record<'_>,
        rest: Rest<'_>,
    ) -> Result<Position, WarcError> {
        self.write_parts(record, Some(rest))
    }

    fn write_parts(
        &mut self,
        record: &Record<'_>,
        rest: Option<Rest<'_>>,
    ) -> Result<Position, WarcError> {
        self.ready()?;
        self.append_with(record, rest)
    }

    /// Hands what is buffered to the file (the page cache): it survives the process being
    /// killed, not yet a power loss.
    pub fn flush(&mut self) -> Result<(), WarcError> {
        if let Some(f) = &mut self.open {
            f.out.flush().map_err(|source| WarcError::Io {
                path: f.path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// Flushes and fsyncs the current file: everything written so far survives a crash.
    pub fn sync(&mut self) -> Result<(), WarcError> {
        if let Some(f) = &mut self.open {
            let path = &f.path;
            let io = |source| WarcError::Io {
                path: path.clone(),
                source,
            };
            f.out.flush().map_err(io)?;
            f.out.get_ref().sync_data().map_err(io)?;
        }
        Ok(())
    }

    /// Syncs and closes the current file (the next record opens a new one).
    pub fn close(&mut self) -> Result<(), WarcError> {
        self.sync()?;
        if let Some(f) = self.open.take() {
            self.end = Position {
                file: f.name,
                offset: f.len,
            };
        }
        Ok(())
    }

    /// Where everything written so far ends: the current file and its length. Files are
    /// named so that their names sort in the order they were written, so "after this
    /// position" means the rest of this file and every file whose name sorts after it.
    /// Before the first record, a name (not a file) that sorts after every earlier
    /// writer's files.
    pub fn position(&self) -> Position {
        match &self.open {
            Some(f) => Position {
                file: f.name.clone(),
                offset: f.len,
            },
            None => self.end.clone(),
        }
    }

    /// Appends one gzip member as it is (a whole record read back from an earlier file);
    /// returns where it now is.
    pub fn write_member(&mut self, member: &[u8]) -> Result<Position, WarcError> {
        self.ready()?;
        let Some(f) = &mut self.open else {
            return Err(no_file());
        };
        f.out.write_all(member).map_err(|source| WarcError::Io {
            path: f.path.clone(),
            source,
        })?;
        let at = Position {
            file: f.name.clone(),
            offset: f.len,
        };
        f.len += member.len() as u64;
        Ok(at)
    }

    /// The directory the files are in.
    pub fn dir(&self) -> &Path {
        &self.cfg.dir
    }

    /// A file open with room: the full one closed, the next one begun.
    fn ready(&mut self) -> Result<(), WarcError> {
        if self
            .open
            .as_ref()
            .is_some_and(|f| f.len >= self.cfg.max_file_bytes)
        {
            self.close()?;
        }
        if self.open.is_none() {
            self.start_file()?;
        }
        Ok(())
    }

    fn start_file(&mut self) -> Result<(), WarcError> {
        self.serial += 1;
        let name = format!(
            "{}-{}-{:05}.warc.gz",
            self.cfg.prefix,
            Utc::now().compact(),
            self.serial
        );
        let path = self.cfg.dir.join(&name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|source| WarcError::Io {
                path: path.clone(),
                source,
            })?;
        self.open = Some(Open {
            name: name.clone(),
            path,
            out: BufWriter::with_capacity(256 * 1024, file),
            len: 0,
        });
        let mut block = String::new();
        for (k, v) in &self.cfg.info {
            block.push_str(&format!("{k}: {v}\r\n"));
        }
        let mut info = Record::new(
            Kind::Warcinfo,
            Utc::now().rfc3339(),
            "application/warc-fields",
            block.as_bytes(),
        );
        info.fields.push(("WARC-Filename", name));
        self.append_with(&info, None)?;
        Ok(())
    }

    fn append_with(
        &mut self,
        record: &Record<'_>,
        mut rest: Option<Rest<'_>>,
    ) -> Result<Position, WarcError> {
        let Some(f) = &mut self.open else {
            return Err(no_file());
        };
        let io = |source| WarcError::Io {
            path: f.path.clone(),
            source,
        };
        let block = record.block;
        let at = record.payload_at.map(|at| at.min(block.len()));
        let mut block_sha = record::hasher();
        block_sha.update(block);
        let mut payload_sha = at.map(|at| {
            let mut h = record::hasher();
            h.update(&block[at..]);
            h
        });
        let mut len = block.len() as u64;
        let mut hash = |piece: &[u8]| {
            block_sha.update(piece);
            if let Some(p) = &mut payload_sha {
                p.update(piece);
            }
        };
        match &mut rest {
            Some(Rest::Bytes(bytes)) => {
                hash(bytes);
                len += bytes.len() as u64;
            }
            Some(Rest::File(file)) => len += each_piece(file, hash).map_err(io)?,
            None => {}
        }
        let head = record.head(
            len,
            &record::digest(block_sha),
            payload_sha.map(record::digest).as_deref(),
        );
        let at = Position {
            file: f.name.clone(),
            offset: f.len,
        };
        // Compressed straight into the file's buffer: a large spooled payload is never held.
        let size = head.len() as u64 + len + record::END.len() as u64;
        let mut member = member::Member::start(
            &mut self.deflate,
            &mut self.buf,
            &mut f.out,
            usize::try_from(size).unwrap_or(usize::MAX),
        )
        .map_err(io)?;
        member.write(head.as_bytes()).map_err(io)?;
        member.write(block).map_err(io)?;
        match rest {
            Some(Rest::Bytes(bytes)) => member.write(bytes).map_err(io)?,
            Some(Rest::File(file)) => {
                let mut failed = None;
                each_piece(file, |piece| {
                    if failed.is_none() {
                        failed = member.write(piece).err();
                    }
                })
                .map_err(io)?;
                if let Some(e) = failed {
                    return Err(io(e));
                }
            }
            None => {}
        }
        member.write(record::END).map_err(io)?;
        f.len += member.finish().map_err(io)?;
        Ok(at)
    }
}

/// Reads `file` from its start to its end, handing each piece to `f`; returns its length.
fn each_piece(file: &mut File, mut f: impl FnMut(&[u8])) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        f(&buf[..n]);
        total += n as u64;
    }
}

/// `append` is only called with a file open; an error rather than a panic if not.
fn no_file() -> WarcError {
    WarcError::Io {
        path: PathBuf::new(),
        source: std::io::Error::other("no WARC file open"),
    }
}

impl Drop for WarcWriter {
    fn drop(&mut self) {
        if let Some(f) = &mut self.open {
            let _ = f.out.flush();
        }
    }
}

#[cfg(test)]
mod tests;

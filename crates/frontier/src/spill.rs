//! The disk part of the queue: append-only segment files holding chunks of entries.
//!
//! Each host's overflow is written as whole chunks (a run of that host's entries in order)
//! and remembered as a 16-byte [`ChunkRef`], so a host's disk backlog is a list of chunk
//! references and memory per spilled URL is a fraction of a byte. Segments roll at
//! [`SEGMENT_BYTES`]; a segment file is deleted as soon as every chunk in it has been read
//! back. Within one run the spill needs no checksums or fsync: it is scratch space, and crash
//! durability is the state store's job.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::entry::Entry;

/// Largest segment file before a new one is started.
pub const SEGMENT_BYTES: u64 = 256 << 20;

/// Where one chunk lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkRef {
    segment: u32,
    offset: u32,
    bytes: u32,
    /// Entries in the chunk.
    pub(crate) count: u32,
}

#[derive(Debug)]
struct Segment {
    file: File,
    live_chunks: u64,
}

/// Append-only chunk storage in a directory.
#[derive(Debug)]
pub(crate) struct Spill {
    dir: PathBuf,
    /// Keeps an owned temporary directory alive (and removes it on drop).
    _temp: Option<tempfile::TempDir>,
    segments: HashMap<u32, Segment>,
    current: u32,
    writer: Option<BufWriter<File>>,
    written: u64,
    /// Whether `writer` holds bytes not yet handed to the OS.
    dirty: bool,
    bytes_on_disk: u64,
    buf: Vec<u8>,
}

impl Spill {
    /// Spills into `dir` (created if missing), or a fresh temporary directory.
    pub(crate) fn new(dir: Option<&Path>) -> io::Result<Self> {
        let (dir, temp) = match dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                (d.to_path_buf(), None)
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("frontier-spill-")
                    .tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        Ok(Self {
            dir,
            _temp: temp,
            segments: HashMap::new(),
            current: 0,
            writer: None,
            written: 0,
            dirty: false,
            bytes_on_disk: 0,
            buf: Vec::new(),
        })
    }

    fn path(&self, segment: u32) -> PathBuf {
        self.dir.join(format!("spill-{segment:08}.seg"))
    }

    /// Appends `entries` as one chunk.
    pub(crate) fn write(&mut self, entries: &[Entry]) -> io::Result<ChunkRef> {
        self.buf.clear();
        for e in entries {
            e.encode(&mut self.buf);
        }
        let bytes = self.buf.len() as u64;
        if self.writer.is_none() || self.written + bytes > SEGMENT_BYTES {
            self.roll()?;
        }
        let writer = self.writer.as_mut().expect("rolled above");
        writer.write_all(&self.buf)?;
        self.dirty = true;
        let chunk = ChunkRef {
            segment: self.current,
            offset: self.written as u32,
            bytes: bytes as u32,
            count: entries.len() as u32,
        };
        self.written += bytes;
        self.bytes_on_disk += bytes;
        self.segments
            .get_mut(&self.current)
            .expect("current segment exists")
            .live_chunks += 1;
        Ok(chunk)
    }

    fn roll(&mut self) -> io::Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.flush()?;
            let old = self.current;
            if self.segments.get(&old).is_some_and(|s| s.live_chunks == 0) {
                self.remove(old);
            }
            self.current += 1;
        }
        let path = self.path(self.current);
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        self.segments.insert(
            self.current,
            Segment {
                file: file.try_clone()?,
                live_chunks: 0,
            },
        );
        self.writer = Some(BufWriter::with_capacity(1 << 16, file));
        self.written = 0;
        self.dirty = false;
        Ok(())
    }

    /// Reads a chunk back and releases it (its segment is deleted once nothing in it is live).
    pub(crate) fn take(&mut self, chunk: ChunkRef) -> io::Result<Vec<Entry>> {
        let entries = self.read(chunk)?;
        self.discard(chunk);
        Ok(entries)
    }

    /// Reads a chunk back, keeping it.
    pub(crate) fn read(&mut self, chunk: ChunkRef) -> io::Result<Vec<Entry>> {
        if chunk.segment == self.current && self.dirty {
            if let Some(w) = self.writer.as_mut() {
                w.flush()?;
            }
            self.dirty = false;
        }
        let segment = self
            .segments
            .get_mut(&chunk.segment)
            .ok_or_else(|| io::Error::other("spill chunk refers to a deleted segment"))?;
        if segment.live_chunks == 0 {
            return Err(io::Error::other("spill chunk was already taken"));
        }
        let mut bytes = vec![0u8; chunk.bytes as usize];
        segment
            .file
            .read_exact_at(&mut bytes, u64::from(chunk.offset))?;
        Entry::decode_all(&bytes, chunk.count as usize)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "corrupt spill chunk"))
    }

    /// Releases a chunk without reading it (its URLs are dropped); its segment is deleted
    /// once nothing in it is live.
    pub(crate) fn discard(&mut self, chunk: ChunkRef) {
        let Some(segment) = self.segments.get_mut(&chunk.segment) else {
            return;
        };
        if segment.live_chunks == 0 {
            return;
        }
        segment.live_chunks -= 1;
        self.bytes_on_disk -= u64::from(chunk.bytes);
        if segment.live_chunks == 0 && chunk.segment != self.current {
            self.remove(chunk.segment);
        }
    }

    fn remove(&mut self, segment: u32) {
        self.segments.remove(&segment);
        let _ = std::fs::remove_file(self.path(segment));
    }

    /// Bytes of live chunks on disk.
    pub(crate) fn bytes_on_disk(&self) -> u64 {
        self.bytes_on_disk
    }

    /// Segment files currently open.
    #[cfg(test)]
    pub(crate) fn segment_count(&self) -> usize {
        self.segments.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u32) -> Entry {
        Entry::new(
            format!("http://h.test/{i}"),
            i,
            Some(format!("http://h.test/p{i}")),
        )
    }

    #[test]
    fn chunks_round_trip_in_any_order_and_segments_go_away() {
        let mut spill = Spill::new(None).unwrap();
        let a = spill.write(&[entry(1), entry(2)]).unwrap();
        let b = spill.write(&[entry(3)]).unwrap();
        assert_eq!(spill.take(b).unwrap(), vec![entry(3)]);
        assert_eq!(spill.take(a).unwrap(), vec![entry(1), entry(2)]);
        assert_eq!(spill.bytes_on_disk(), 0);
        assert!(spill.take(a).is_err(), "a chunk is taken once");
    }

    #[test]
    fn rolls_segments_and_deletes_consumed_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::new(Some(dir.path())).unwrap();
        let big = Entry::new(format!("http://h.test/{}", "x".repeat(1000)), 0, None);
        let per_chunk = 1000;
        let chunk: Vec<Entry> = (0..per_chunk).map(|_| big.clone()).collect();
        let mut refs = Vec::new();
        while refs.len() < 300 {
            refs.push(spill.write(&chunk).unwrap());
        }
        assert!(spill.segment_count() >= 2);
        for r in refs {
            assert_eq!(spill.take(r).unwrap().len(), per_chunk);
        }
        assert_eq!(spill.segment_count(), 1, "only the current segment remains");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

//! One gzip member (RFC 1952) written with a deflate state the writer keeps and resets,
//! rather than a new encoder per record: a fresh deflate state allocates and zeroes about
//! 200 KB of tables, which for crawl-sized records (a few KB) cost more than compressing
//! them. Even a reset clears a 128 KB hash table, so a record shorter than [`STORE_BELOW`]
//! (a request record, mostly a UUID and digests that do not compress) is written as one
//! stored deflate block instead, with no deflate state at all (measured in BENCHMARKS.md §4,
//! "WARC on").

use std::io::{self, Write};

use flate2::{Compress, Crc, FlushCompress, Status};

/// Records shorter than this are stored, not compressed.
pub(crate) const STORE_BELOW: usize = 1024;

/// gzip's fixed header: magic, deflate, no flags, no time, no extra flags, OS unknown.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Writes one member into `out`, counting the bytes it wrote.
pub(crate) struct Member<'a, W: Write> {
    /// `None`: one stored block of the length given to `start`.
    deflate: Option<&'a mut Compress>,
    /// The stored block's bytes still to come.
    stored_left: usize,
    buf: &'a mut Vec<u8>,
    crc: Crc,
    out: &'a mut W,
    /// Bytes written to `out` so far.
    pub(crate) written: u64,
}

impl<'a, W: Write> Member<'a, W> {
    /// Starts a member of `len` bytes (writes its header); `deflate` is reset for it, unless
    /// the member is short enough to be stored (then exactly `len` bytes must follow).
    pub(crate) fn start(
        deflate: &'a mut Compress,
        buf: &'a mut Vec<u8>,
        out: &'a mut W,
        len: usize,
    ) -> io::Result<Self> {
        out.write_all(&HEADER)?;
        let mut written = HEADER.len() as u64;
        let deflate = if len < STORE_BELOW {
            // RFC 1951 §3.2.4: final, stored; LEN and its complement.
            let n = len as u16;
            let mut head = [1, 0, 0, 0, 0];
            head[1..3].copy_from_slice(&n.to_le_bytes());
            head[3..].copy_from_slice(&(!n).to_le_bytes());
            out.write_all(&head)?;
            written += head.len() as u64;
            None
        } else {
            deflate.reset();
            if buf.len() < 64 * 1024 {
                buf.resize(64 * 1024, 0);
            }
            Some(deflate)
        };
        Ok(Self {
            stored_left: if deflate.is_none() { len } else { 0 },
            deflate,
            buf,
            crc: Crc::new(),
            out,
            written,
        })
    }

    /// Compresses `data` into the member.
    pub(crate) fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        self.crc.update(data);
        if self.deflate.is_none() {
            self.stored_left = self
                .stored_left
                .checked_sub(data.len())
                .ok_or_else(|| io::Error::other("a stored member longer than announced"))?;
            self.out.write_all(data)?;
            self.written += data.len() as u64;
            return Ok(());
        }
        while !data.is_empty() {
            let before = self.total_in();
            self.step(data, FlushCompress::None)?;
            data = &data[(self.total_in() - before) as usize..];
        }
        Ok(())
    }

    /// Ends the member (the rest of the deflate stream and the trailer).
    pub(crate) fn finish(mut self) -> io::Result<u64> {
        if self.deflate.is_none() {
            if self.stored_left != 0 {
                return Err(io::Error::other("a stored member shorter than announced"));
            }
        } else {
            while self.step(&[], FlushCompress::Finish)? != Status::StreamEnd {}
        }
        let mut trailer = [0u8; 8];
        trailer[..4].copy_from_slice(&self.crc.sum().to_le_bytes());
        trailer[4..].copy_from_slice(&self.crc.amount().to_le_bytes());
        self.out.write_all(&trailer)?;
        Ok(self.written + 8)
    }

    fn total_in(&self) -> u64 {
        self.deflate.as_ref().map_or(0, |d| d.total_in())
    }

    fn step(&mut self, data: &[u8], flush: FlushCompress) -> io::Result<Status> {
        let Some(deflate) = self.deflate.as_deref_mut() else {
            return Ok(Status::StreamEnd);
        };
        let before = deflate.total_out();
        let status = deflate
            .compress(data, self.buf, flush)
            .map_err(io::Error::other)?;
        let made = (deflate.total_out() - before) as usize;
        self.out.write_all(&self.buf[..made])?;
        self.written += made as u64;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn stored_and_compressed_members_read_back_as_written() {
        let mut deflate = Compress::new(flate2::Compression::fast(), false);
        let mut buf = Vec::new();
        for size in [0, 1, STORE_BELOW - 1, STORE_BELOW, 70_000, 200_000] {
            let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = Vec::new();
            let mut m = Member::start(&mut deflate, &mut buf, &mut out, size).unwrap();
            for piece in data.chunks(3000) {
                m.write(piece).unwrap();
            }
            let written = m.finish().unwrap();
            assert_eq!(written, out.len() as u64, "{size}");
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(out.as_slice())
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "{size}");
            if size < STORE_BELOW {
                assert_eq!(out.len(), 10 + 5 + size + 8, "stored: {size}");
                let mut sink = Vec::new();
                let mut m = Member::start(&mut deflate, &mut buf, &mut sink, size).unwrap();
                m.write(&data).unwrap();
                assert!(m.write(b"x").is_err(), "longer than announced");
            }
        }
    }
}

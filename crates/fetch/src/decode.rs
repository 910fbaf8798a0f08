//! Content decoding (`Content-Encoding: gzip`, `deflate`, `br`) done here rather than by the
//! HTTP client, so that the bytes *as received* stay available for the WARC record while the
//! decoded bytes go to the link extractor and the body cap.
//!
//! The decoder is driven a bounded step at a time: each call produces at most the output the
//! caller asks for and leaves the rest of its input for the next call, so a gzip bomb never
//! inflates past the cap, and never by more than one step, whatever one network chunk holds.
//! Multi-member gzip is read as one stream (RFC 1952 §2.2); bytes after the last member that
//! do not start another are ignored, as browsers do. HTTP's `deflate` is zlib-wrapped by the
//! RFC, but servers also send raw deflate: the first two bytes tell which.

use brotli_decompressor::{BrotliDecompressStream, BrotliResult, BrotliState, StandardAlloc};
use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Output produced per step at most (the caller's limit may be lower).
const STEP: usize = 64 * 1024;

/// A gzip header longer than this (a hostile `FNAME` or `FEXTRA`) is an error.
const MAX_GZIP_HEADER: usize = 64 * 1024;

/// Turns a body's bytes as received into its content.
pub struct Decoder {
    codec: Codec,
    /// Some input came (an empty body is a whole one, whatever its `Content-Encoding`: a
    /// 304, a redirect, a HEAD-like answer).
    fed: bool,
}

enum Codec {
    Identity,
    Gzip(Box<Gzip>),
    /// `None` until the first two bytes tell zlib from raw deflate; whether the stream ended
    /// (what follows it is ignored).
    Deflate(Option<Decompress>, Vec<u8>, bool),
    Brotli(
        Box<BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>>,
        bool,
    ),
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.codec {
            Codec::Identity => "Decoder(identity)",
            Codec::Gzip(_) => "Decoder(gzip)",
            Codec::Deflate(..) => "Decoder(deflate)",
            Codec::Brotli(..) => "Decoder(br)",
        })
    }
}

/// What `Accept-Encoding` offers: the encodings [`Decoder`] reads.
pub const ACCEPT_ENCODING: &str = "gzip, deflate, br";

impl Decoder {
    /// The decoder for a response's `Content-Encoding`. An encoding not offered (or a list of
    /// several) passes the bytes through unchanged, as an HTTP client does.
    pub fn new(content_encoding: Option<&str>) -> Self {
        let name = content_encoding.map(|e| e.trim().to_ascii_lowercase());
        let codec = match name.as_deref() {
            Some("gzip" | "x-gzip") => Codec::Gzip(Box::default()),
            Some("deflate") => Codec::Deflate(None, Vec::new(), false),
            Some("br") => Codec::Brotli(
                Box::new(BrotliState::new(
                    StandardAlloc::default(),
                    StandardAlloc::default(),
                    StandardAlloc::default(),
                )),
                false,
            ),
            _ => Codec::Identity,
        };
        Self { codec, fed: false }
    }

    /// The body is not content-encoded: decoded bytes are the bytes on the wire.
    pub fn is_identity(&self) -> bool {
        matches!(self.codec, Codec::Identity)
    }

    /// Decodes from the front of `input` (advancing it), appending at most `limit` bytes to
    /// `out`. Returns once the input is used up or `limit` bytes were produced. When it
    /// produced `limit` bytes, more may be pending even with the input used up: call again
    /// (with what is left, or nothing) until it produces less than `limit`.
    pub fn decode(
        &mut self,
        input: &mut &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<(), String> {
        self.fed |= !input.is_empty();
        match &mut self.codec {
            Codec::Identity => {
                let n = limit.min(input.len());
                out.extend_from_slice(&input[..n]);
                *input = &input[n..];
                Ok(())
            }
            Codec::Gzip(gz) => gz.decode(input, out, limit),
            Codec::Deflate(_, _, true) => {
                // What follows the stream is not content.
                *input = &[];
                Ok(())
            }
            Codec::Deflate(inflate, start, ended) => {
                let mut limit = limit;
                if inflate.is_none() {
                    let take = (2 - start.len()).min(input.len());
                    start.extend_from_slice(&input[..take]);
                    *input = &input[take..];
                    if start.len() < 2 {
                        return Ok(());
                    }
                    let (cmf, flg) = (start[0], start[1]);
                    let zlib = cmf & 0x0f == 8 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0;
                    let mut d = Decompress::new(zlib);
                    let head = std::mem::take(start);
                    let before = out.len();
                    *ended = inflate_into(&mut d, &mut head.as_slice(), out, limit, |_| {})
                        .map_err(|e| format!("deflate: {e}"))?;
                    limit -= out.len() - before;
                    *inflate = Some(d);
                }
                let Some(d) = inflate.as_mut() else {
                    return Ok(());
                };
                if !*ended {
                    *ended = inflate_into(d, input, out, limit, |_| {})
                        .map_err(|e| format!("deflate: {e}"))?;
                }
                if *ended {
                    *input = &[];
                }
                Ok(())
            }
            Codec::Brotli(state, done) => brotli(state, done, input, out, limit),
        }
    }

    /// Whether the encoded stream ended where the body did; an error names what is missing.
    pub fn finish(&self) -> Result<(), String> {
        if !self.fed {
            return Ok(());
        }
        match &self.codec {
            Codec::Identity => Ok(()),
            Codec::Gzip(gz) if gz.complete() => Ok(()),
            Codec::Gzip(_) => Err("gzip: the stream ends before its last member does".into()),
            Codec::Deflate(_, _, true) => Ok(()),
            Codec::Deflate(..) => Err("deflate: the stream ends before its end".into()),
            Codec::Brotli(_, true) => Ok(()),
            Codec::Brotli(_, false) => Err("br: the stream ends before its end".into()),
        }
    }
}

/// Inflates from `input` into `out` (at most `limit` bytes), feeding what it produced to
/// `seen`; returns whether the deflate stream ended.
fn inflate_into(
    d: &mut Decompress,
    input: &mut &[u8],
    out: &mut Vec<u8>,
    limit: usize,
    mut seen: impl FnMut(&[u8]),
) -> Result<bool, flate2::DecompressError> {
    let mut produced = 0;
    loop {
        let room = (limit - produced).min(STEP);
        if room == 0 {
            return Ok(false);
        }
        let start = out.len();
        out.resize(start + room, 0);
        let (in_before, out_before) = (d.total_in(), d.total_out());
        let status = d.decompress(input, &mut out[start..], FlushDecompress::None);
        let used = (d.total_in() - in_before) as usize;
        let made = (d.total_out() - out_before) as usize;
        out.truncate(start + made);
        seen(&out[start..]);
        *input = &input[used..];
        produced += made;
        match status? {
            Status::StreamEnd => return Ok(true),
            // No progress: it needs more input than there is.
            _ if used == 0 && made == 0 => return Ok(false),
            _ => {}
        }
    }
}

fn brotli(
    state: &mut BrotliState<StandardAlloc, StandardAlloc, StandardAlloc>,
    done: &mut bool,
    input: &mut &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), String> {
    let mut produced = 0;
    while !*done {
        let room = (limit - produced).min(STEP);
        if room == 0 {
            break;
        }
        let start = out.len();
        out.resize(start + room, 0);
        let (mut available_in, mut input_offset) = (input.len(), 0);
        let (mut available_out, mut output_offset, mut total) = (room, 0, 0);
        let result = BrotliDecompressStream(
            &mut available_in,
            &mut input_offset,
            input,
            &mut available_out,
            &mut output_offset,
            &mut out[start..],
            &mut total,
            state,
        );
        out.truncate(start + output_offset);
        *input = &input[input_offset..];
        produced += output_offset;
        match result {
            BrotliResult::ResultSuccess => *done = true,
            BrotliResult::NeedsMoreOutput => {}
            BrotliResult::NeedsMoreInput => break,
            BrotliResult::ResultFailure => return Err("br: corrupt stream".into()),
        }
    }
    if *done {
        // What follows the stream is not content.
        *input = &[];
    }
    Ok(())
}

/// A gzip stream: header, deflate data, trailer (CRC-32 and length), maybe more members.
struct Gzip {
    stage: Stage,
    /// Header or trailer bytes gathered so far.
    held: Vec<u8>,
    inflate: Decompress,
    crc: Crc,
    /// A member ended; what follows is another one or nothing.
    ended_one: bool,
}

impl Default for Gzip {
    fn default() -> Self {
        Self {
            stage: Stage::Header,
            held: Vec::new(),
            inflate: Decompress::new(false),
            crc: Crc::new(),
            ended_one: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Header,
    Body,
    Trailer,
    /// Bytes after the last member that do not start another: ignored.
    Ignore,
}

impl Gzip {
    fn complete(&self) -> bool {
        self.stage == Stage::Ignore
            || (self.stage == Stage::Header && self.held.is_empty() && self.ended_one)
    }

    fn decode(&mut self, input: &mut &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
        let mut produced = 0;
        loop {
            match self.stage {
                // Inflated bytes may be pending with no input left: the body stage runs on.
                Stage::Body => {}
                _ if input.is_empty() => return Ok(()),
                _ => {}
            }
            match self.stage {
                Stage::Ignore => *input = &[],
                Stage::Header => {
                    if self.ended_one && self.held.is_empty() && input[0] != 0x1f {
                        self.stage = Stage::Ignore;
                        continue;
                    }
                    let before = self.held.len();
                    let take = input.len().min(MAX_GZIP_HEADER + 1 - before);
                    self.held.extend_from_slice(&input[..take]);
                    match gzip_header_len(&self.held)? {
                        Some(n) => {
                            *input = &input[n - before..];
                            self.held.clear();
                            self.inflate.reset(false);
                            self.crc.reset();
                            self.stage = Stage::Body;
                        }
                        None if self.held.len() > MAX_GZIP_HEADER => {
                            return Err("gzip: header longer than 64 KiB".into())
                        }
                        None => *input = &input[take..],
                    }
                }
                Stage::Body => {
                    let room = limit - produced;
                    if room == 0 {
                        return Ok(());
                    }
                    let start = out.len();
                    let crc = &mut self.crc;
                    let ended =
                        inflate_into(&mut self.inflate, input, out, room, |b| crc.update(b))
                            .map_err(|e| format!("gzip: {e}"))?;
                    let made = out.len() - start;
                    produced += made;
                    if ended {
                        self.stage = Stage::Trailer;
                    } else if made < room {
                        // Room to spare: every byte the input holds is out; more needs input.
                        return Ok(());
                    }
                }
                Stage::Trailer => {
                    let take = (8 - self.held.len()).min(input.len());
                    self.held.extend_from_slice(&input[..take]);
                    *input = &input[take..];
                    if self.held.len() == 8 {
                        let crc = u32::from_le_bytes(self.held[..4].try_into().expect("4 bytes"));
                        let len = u32::from_le_bytes(self.held[4..].try_into().expect("4 bytes"));
                        if crc != self.crc.sum() || len != self.crc.amount() {
                            return Err("gzip: CRC or length mismatch in a member's trailer".into());
                        }
                        self.held.clear();
                        self.ended_one = true;
                        self.stage = Stage::Header;
                    }
                }
            }
        }
    }
}

/// The length of the gzip header at the start of `b` (RFC 1952 §2.3), `None` while
/// incomplete.
fn gzip_header_len(b: &[u8]) -> Result<Option<usize>, String> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if b.len() >= 2 && (b[0], b[1]) != (0x1f, 0x8b) {
        return Err("gzip: not a gzip stream".into());
    }
    if b.len() < 10 {
        return Ok(None);
    }
    if b[2] != 8 {
        return Err(format!("gzip: unknown compression method {}", b[2]));
    }
    let flags = b[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(len) = b.get(at..at + 2) else {
            return Ok(None);
        };
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            match b
                .get(at..)
                .and_then(|rest| rest.iter().position(|&c| c == 0))
            {
                Some(nul) => at += nul + 1,
                None => return Ok(None),
            }
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    Ok((b.len() >= at).then_some(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Decodes `wire` fed in pieces of `piece` bytes, asking `step` bytes at a time.
    fn run(encoding: &str, wire: &[u8], piece: usize, step: usize) -> Result<Vec<u8>, String> {
        let mut d = Decoder::new(Some(encoding));
        let mut out = Vec::new();
        for chunk in wire.chunks(piece.max(1)) {
            let mut input = chunk;
            loop {
                let before = (input.len(), out.len());
                d.decode(&mut input, &mut out, step)?;
                let made = out.len() - before.1;
                if made < step && input.is_empty() {
                    break;
                }
                assert!((input.len(), out.len()) != before, "no progress");
            }
        }
        d.finish()?;
        Ok(out)
    }

    fn text() -> Vec<u8> {
        (0..3_000u32)
            .flat_map(|i| format!("<a href=\"/p/{i}\">{i}</a>\n").into_bytes())
            .collect()
    }

    #[test]
    fn every_encoding_decodes_in_any_pieces() {
        let data = text();
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&data).unwrap();
        let zlib = zlib.finish().unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&data).unwrap();
        let raw = raw.finish().unwrap();
        let mut br = Vec::new();
        {
            let mut w = brotli_compress(&mut br);
            w.write_all(&data).unwrap();
        }
        for (name, wire) in [
            ("gzip", gzip(&data)),
            ("deflate", zlib),
            ("deflate", raw),
            ("br", br),
        ] {
            for (piece, step) in [(1, 7), (3, 1 << 20), (1000, 4096), (1 << 20, 1 << 20)] {
                assert!(
                    run(name, &wire, piece, step).unwrap() == data,
                    "{name} {piece} {step}"
                );
            }
        }
        assert_eq!(run("identity", b"abc", 1, 1).unwrap(), b"abc");
        for name in ["gzip", "deflate", "br"] {
            assert_eq!(
                run(name, b"", 1, 1).unwrap(),
                b"",
                "an empty {name} body is whole"
            );
        }
        assert_eq!(
            run("zstd", b"abc", 2, 1).unwrap(),
            b"abc",
            "not offered: passed through"
        );
    }

    fn brotli_compress(out: &mut Vec<u8>) -> impl Write + '_ {
        // The test site's encoder (a dev-dependency) writes what servers send.
        brotli::CompressorWriter::new(out, 4096, 5, 22)
    }

    #[test]
    fn gzip_members_headers_and_damage() {
        let mut two = gzip(b"first ");
        two.extend(gzip(b"second"));
        assert_eq!(run("gzip", &two, 5, 3).unwrap(), b"first second");
        // Trailing zeros after the last member are ignored.
        let mut padded = gzip(b"x");
        padded.extend([0u8; 10]);
        assert_eq!(run("gzip", &padded, 4, 4).unwrap(), b"x");
        // A name and a comment in the header.
        let mut named = vec![0x1f, 0x8b, 8, 8 | 16, 0, 0, 0, 0, 0, 3];
        named.extend(b"page.html\0a comment\0");
        named.extend(&gzip(b"named")[10..]);
        assert_eq!(run("gzip", &named, 2, 2).unwrap(), b"named");
        // Cut short, corrupt, not gzip, a header that never ends.
        let whole = gzip(&text());
        assert!(run("gzip", &whole[..whole.len() / 2], 100, 100).is_err());
        let mut bad = whole.clone();
        let n = bad.len();
        bad[n - 6] ^= 0xff;
        assert!(run("gzip", &bad, 100, 100).unwrap_err().contains("CRC"));
        assert!(run("gzip", b"<html>not gzip</html>", 100, 100).is_err());
        let mut endless = vec![0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3];
        endless.extend(std::iter::repeat_n(b'a', 100_000));
        assert!(run("gzip", &endless, 4096, 100)
            .unwrap_err()
            .contains("64 KiB"));
    }

    /// Found by the `decode` fuzz target: bytes after a deflate stream's end were left
    /// unconsumed, so a caller waiting for progress would stall.
    #[test]
    fn what_follows_a_deflate_stream_is_ignored() {
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(b"<a href=/x>").unwrap();
        let mut wire = raw.finish().unwrap();
        wire.extend(b"jjj");
        for (piece, step) in [(2, 1), (1, 1), (100, 100)] {
            assert_eq!(run("deflate", &wire, piece, step).unwrap(), b"<a href=/x>");
        }
        let whole = wire.len() - 3;
        assert!(
            run("deflate", &wire[..whole - 2], 4, 4).is_err(),
            "cut short"
        );
    }

    #[test]
    fn a_bomb_inflates_one_step_at_a_time() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; 50 << 20]).unwrap();
        let wire = e.finish().unwrap();
        assert!(wire.len() < 100 << 10, "{} bytes on the wire", wire.len());
        let mut d = Decoder::new(Some("gzip"));
        let mut input = wire.as_slice();
        let mut out = Vec::new();
        d.decode(&mut input, &mut out, 1000).unwrap();
        assert_eq!(out.len(), 1000, "stops at the limit");
        assert!(!input.is_empty(), "the rest waits");
    }
}

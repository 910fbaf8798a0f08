//! The thread behind [`Output`](super::Output). With `output.warc` it writes everything: a
//! batch's WARC records, then its lines, so a line never names a record not yet in a file.
//! Without WARC the callers write their own lines, and the thread writes what they buffered
//! now and then and syncs the file at the close.

use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::{self, error::TryRecvError};
use warc::WarcWriter;

use super::direct::FLUSH_EVERY;
use super::{warc_position, Item, Mark, Marks, Queued};
use crate::sync::lock;

/// Writes batches of whole lines with one `write` each, unbuffered: whatever has been written
/// when the process dies is a sequence of complete lines. A batch's WARC records are written
/// and flushed to the file before its lines, so every line's records are there too.
pub(super) fn write_lines(
    mut file: File,
    warc: Arc<Mutex<WarcWriter>>,
    mut rx: mpsc::Receiver<Queued>,
    marks: &Mutex<Marks>,
) -> io::Result<u64> {
    let mut lines = 0;
    let mut written = lock(marks).end.pages;
    let mut batch = Vec::with_capacity(1 << 16);
    let mut acks = Vec::new();
    let mut opened = Vec::new();
    let mut closed = false;
    while let Some(Some(first)) = rx.blocking_recv() {
        batch.clear();
        let mut archive = lock(&warc);
        let mut push = |item: Item, batch: &mut Vec<u8>| -> io::Result<()> {
            let (mut r, capture, id, ack) = match item {
                Item::Page(r, capture, id, ack) => (r, capture, id, ack),
                Item::Capture(mut c) => {
                    crate::archive::write(&mut archive, &mut c).map_err(io::Error::other)?;
                    return Ok(());
                }
            };
            let mark = Mark {
                pages: written + batch.len() as u64,
                warc: Some(warc_position(&archive)),
            };
            if let Some(mut c) = capture {
                let at = crate::archive::write(&mut archive, &mut c).map_err(io::Error::other)?;
                r.warc_file = Some(at.file);
                r.warc_offset = Some(at.offset);
            }
            serde_json::to_writer(&mut *batch, &r).expect("records serialize");
            batch.push(b'\n');
            acks.push(ack);
            opened.push((id, mark));
            lines += 1;
            Ok(())
        };
        push(first, &mut batch)?;
        while batch.len() < (1 << 16) {
            match rx.try_recv() {
                Ok(Some(item)) => push(item, &mut batch)?,
                Ok(None) => {
                    closed = true;
                    break;
                }
                Err(_) => break,
            }
        }
        archive.flush().map_err(io::Error::other)?;
        let warc_end = Some(warc_position(&archive));
        drop(archive);
        file.write_all(&batch)?;
        written += batch.len() as u64;
        {
            let mut m = lock(marks);
            for (id, mark) in opened.drain(..) {
                if id != 0 {
                    m.open.insert(id, mark);
                }
            }
            m.end = Mark {
                pages: written,
                warc: warc_end,
            };
        }
        for ack in acks.drain(..) {
            let _ = ack.send(());
        }
        if closed {
            break;
        }
    }
    lock(&warc).close().map_err(io::Error::other)?;
    file.sync_data()?;
    Ok(lines)
}

/// Without WARC: writes what the callers buffered every [`FLUSH_EVERY`] (`buffered`; else
/// each line is written as it comes and the thread only waits) until
/// [`Output::close`](super::Output::close) (or every handle gone), then writes the rest and
/// syncs the file. Returns the lines appended, or the error that stopped the appends.
pub(super) fn flush_until_closed(
    mut rx: mpsc::Receiver<Queued>,
    marks: &Mutex<Marks>,
    buffered: bool,
) -> io::Result<u64> {
    loop {
        let closing = if buffered {
            std::thread::sleep(FLUSH_EVERY);
            matches!(rx.try_recv(), Ok(None) | Err(TryRecvError::Disconnected))
        } else {
            // Only the close is ever sent.
            matches!(rx.blocking_recv(), Some(None) | None)
        };
        let mut m = lock(marks);
        if closing {
            let (file, lines) = m.direct.close()?;
            drop(m);
            if let Some(f) = file {
                f.sync_data()?;
            }
            return Ok(lines);
        }
        // A failed write is kept: the next append is refused and stops the crawl.
        let _ = m.direct.write_out();
    }
}

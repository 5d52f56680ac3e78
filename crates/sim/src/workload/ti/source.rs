//! Where a rank's lines come from: its own file, read in chunks and closed in between, or
//! lines already split out of a file shared by the ranks.
//!
//! A per-rank file is read from the offset the previous chunk ended at, so any number of
//! ranks can be replayed without holding a file open per rank. A chunk always ends after a
//! complete line (the buffer grows for a line longer than the chunk, up to 1 GiB); the chunk
//! is kept as one string and cut into lines on demand. Blank lines and `#` comments are
//! skipped; line numbers count every line of the file.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use super::fields::syntax;
use crate::workload::WorkloadError;

/// Where a rank's lines come from.
#[derive(Debug)]
pub(super) enum Source {
    /// A file of this rank alone, read in chunks from `offset`.
    File {
        /// The file.
        path: PathBuf,
        /// Where the next chunk starts.
        offset: u64,
        /// The file has been read to its end.
        eof: bool,
    },
    /// Lines already split out of a shared file.
    Lines,
}

/// The lines of one rank, numbered.
#[derive(Debug)]
pub(super) struct LineSource {
    source: Source,
    /// Lines split out of a shared file (and, for tests, given directly).
    lines: VecDeque<(u64, String)>,
    /// The last line taken out of `lines` (what [`LineSource::next_line`] lends).
    current: String,
    /// The last chunk read from a per-rank file, and how far it has been consumed.
    chunk_text: String,
    chunk_pos: usize,
    line_no: u64,
    /// Bytes read per refill.
    pub(super) chunk: usize,
}

/// Bytes read per refill: large for few ranks, small for many (buffered text stays below
/// about 64 MiB whatever the rank count, and 4 KiB per rank beyond 16,384 ranks).
pub(super) fn chunk_for(ranks: usize) -> usize {
    ((64usize << 20) / ranks.max(1)).clamp(4 << 10, 256 << 10)
}

impl LineSource {
    /// The lines of `source` (for [`Source::Lines`], `lines`), read in chunks sized for a
    /// trace of `ranks` ranks.
    pub(super) fn new(source: Source, lines: VecDeque<(u64, String)>, ranks: u32) -> LineSource {
        LineSource {
            source,
            lines,
            current: String::new(),
            chunk_text: String::new(),
            chunk_pos: 0,
            line_no: 0,
            chunk: chunk_for(ranks as usize),
        }
    }

    /// Reads the next chunk of this rank's file.
    fn refill(&mut self) -> Result<(), WorkloadError> {
        let Source::File { path, offset, eof } = &mut self.source else {
            return Ok(());
        };
        if *eof {
            return Ok(());
        }
        let io = |e: std::io::Error| WorkloadError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let mut f = std::fs::File::open(&*path).map_err(io)?;
        f.seek(SeekFrom::Start(*offset)).map_err(io)?;
        // Read at least one whole line: grow the buffer for very long lines (alltoallv at
        // many ranks).
        let mut chunk = self.chunk;
        let mut buf: Vec<u8> = Vec::new();
        let complete = loop {
            let had = buf.len();
            buf.resize(chunk, 0);
            let mut n = had;
            while n < chunk {
                let k = f.read(&mut buf[n..]).map_err(io)?;
                if k == 0 {
                    break;
                }
                n += k;
            }
            buf.truncate(n);
            if n < chunk {
                *eof = true;
                break n;
            }
            if let Some(p) = buf.iter().rposition(|&b| b == b'\n') {
                break p + 1;
            }
            if chunk >= 1 << 30 {
                return Err(syntax(
                    &path.display().to_string(),
                    self.line_no + 1,
                    "line longer than 1 GiB",
                ));
            }
            chunk *= 2;
        };
        *offset += complete as u64;
        buf.truncate(complete);
        self.chunk_text = match String::from_utf8(buf) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        self.chunk_pos = 0;
        Ok(())
    }

    /// The next non-empty, non-comment line and its number; the line is lent from the
    /// chunk read (no copy per line).
    pub(super) fn next_line(&mut self) -> Result<Option<(u64, &str)>, WorkloadError> {
        if let Some((no, line)) = self.lines.pop_front() {
            self.current = line;
            return Ok(Some((no, &self.current)));
        }
        loop {
            if self.chunk_pos >= self.chunk_text.len() {
                let more = matches!(self.source, Source::File { eof: false, .. });
                if !more {
                    return Ok(None);
                }
                self.refill()?;
                if self.chunk_text.is_empty() {
                    return Ok(None);
                }
            }
            let start = self.chunk_pos;
            let rest = &self.chunk_text[start..];
            let end = rest.find('\n').unwrap_or(rest.len());
            self.chunk_pos += (end + 1).min(rest.len());
            self.line_no += 1;
            let t = rest[..end].trim();
            if !t.is_empty() && !t.starts_with('#') {
                let from = start + (t.as_ptr() as usize - rest.as_ptr() as usize);
                return Ok(Some((self.line_no, &self.chunk_text[from..from + t.len()])));
            }
        }
    }
}

//! A rank's TI file as a line buffer with holes.
//!
//! A receive is written once its completion is known (a wildcard receive then gets the
//! source and tag it matched; a cancelled one is left out), but the lines after it are
//! already known. [`Output`] keeps the receive's place as a hole in a queue: lines behind
//! the oldest hole wait in memory, and are written, in order, as soon as the holes before
//! them are filled. So that memory stays bounded when a receive never completes, once more
//! than [`MAX_HELD_LINES`] entries wait, a hole whose line is already known (a receive
//! with a known source and tag) is written with that line, as posted.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

use mpiscope_files::{AtomicFile, Staged};

use crate::ExportError;

/// Output lines held back (behind a receive whose completion is not seen yet) before
/// receives with a known source and tag are written as posted.
const MAX_HELD_LINES: usize = 1 << 20;

/// One place in a rank's output.
enum Entry {
    /// A line ready to write.
    Line(String),
    /// A receive whose line is known once it completes; `fallback` is the line to write if
    /// too much output piles up behind it (receives with a known source and tag only).
    Hole { fallback: Option<String> },
    /// Nothing to write.
    Gone,
}

/// A rank's output file, with room for lines written later than the lines after them.
pub(super) struct Output {
    w: AtomicFile,
    path: PathBuf,
    /// The rank and a blank, which start every line.
    prefix: String,
    queue: VecDeque<Entry>,
    /// Position of `queue[0]` in the sequence of entries.
    base: u64,
    written: u64,
    /// Entries held before receives with a fallback are written as posted.
    max_held: usize,
}

impl Output {
    /// The output of `rank`, written to `w` (errors name `path`).
    pub(super) fn new(w: AtomicFile, path: PathBuf, rank: u32) -> Output {
        Output {
            w,
            path,
            prefix: format!("{rank} "),
            queue: VecDeque::new(),
            base: 0,
            written: 0,
            max_held: MAX_HELD_LINES,
        }
    }

    fn write(&mut self, text: &str) -> Result<(), ExportError> {
        let w = &mut self.w;
        w.write_all(self.prefix.as_bytes())
            .and_then(|()| w.write_all(text.as_bytes()))
            .and_then(|()| w.write_all(b"\n"))
            .map_err(|source| ExportError::Write {
                path: self.path.clone(),
                source,
            })?;
        self.written += 1;
        Ok(())
    }

    /// Adds a line after everything before it.
    pub(super) fn line(&mut self, text: String) -> Result<(), ExportError> {
        if self.queue.is_empty() {
            self.base += 1;
            return self.write(&text);
        }
        self.queue.push_back(Entry::Line(text));
        self.drain()
    }

    /// Reserves the place of a line written later; returns its position.
    pub(super) fn hole(&mut self, fallback: Option<String>) -> u64 {
        let at = self.base + self.queue.len() as u64;
        self.queue.push_back(Entry::Hole { fallback });
        at
    }

    /// Fills a reserved place (`None`: nothing is written there). Returns false when the
    /// place had already been written with its fallback.
    pub(super) fn fill(&mut self, at: u64, text: Option<String>) -> Result<bool, ExportError> {
        let Some(i) = at.checked_sub(self.base) else {
            return Ok(false);
        };
        let Some(e) = self.queue.get_mut(i as usize) else {
            return Ok(false);
        };
        if !matches!(e, Entry::Hole { .. }) {
            return Ok(false);
        }
        *e = text.map(Entry::Line).unwrap_or(Entry::Gone);
        self.drain()?;
        Ok(true)
    }

    fn drain(&mut self) -> Result<(), ExportError> {
        loop {
            let crowded = self.queue.len() > self.max_held;
            let text = match self.queue.front_mut() {
                Some(Entry::Line(s)) => Some(std::mem::take(s)),
                Some(Entry::Gone) => None,
                Some(Entry::Hole { fallback }) if crowded && fallback.is_some() => fallback.take(),
                _ => return Ok(()),
            };
            self.queue.pop_front();
            self.base += 1;
            if let Some(t) = text {
                self.write(&t)?;
            }
        }
    }

    /// Writes what is held and closes the file (complete, not yet in place); returns the
    /// number of lines written.
    pub(super) fn finish(mut self) -> Result<(u64, Staged), ExportError> {
        for e in self.queue.iter_mut() {
            if matches!(e, Entry::Hole { .. }) {
                *e = Entry::Gone;
            }
        }
        self.drain()?;
        Ok((self.written, self.w.close()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_lines_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.txt");
        let w = AtomicFile::create(&path).unwrap();
        let mut out = Output::new(w, path.clone(), 3);
        out.max_held = 2;
        let known = out.hole(Some("irecv 1 2 3 0".into()));
        let wildcard = out.hole(None);
        out.line("a".into()).unwrap();
        // Three entries held: the known receive is written as posted.
        out.line("b".into()).unwrap();
        assert!(!out.fill(known, None).unwrap(), "already written");
        assert!(out.fill(wildcard, Some("irecv 2 2 3 0".into())).unwrap());
        let (written, file) = out.finish().unwrap();
        assert_eq!(written, 4);
        file.commit().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "3 irecv 1 2 3 0\n3 irecv 2 2 3 0\n3 a\n3 b\n");
    }
}

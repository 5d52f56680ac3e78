//! The streaming reader of one rank file.
//!
//! [`RankReader`] reads one block at a time into a reused buffer, so memory stays constant
//! whatever the file size. Definitions, the info block and the trailer are absorbed as they
//! come; [`RankReader::next_event`] hands out events only. A file that ends inside a block, or
//! whose block fails its checksum, reads up to the last good block: iteration then ends and
//! [`RankReader::stopped`] says where and why.
//!
//! Calls a thread was still inside when its record was taken (open blocks: a signal,
//! `MPI_Abort`, a hang) are held back until the end of the file: a later record of the same
//! call, or the call's own event once it returned, replaces them, so a call is handed out
//! once, as [`Event::unfinished`] only if it never returned in the record. [`RankReader::ending`]
//! says how the record ends.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use crate::block::{
    block_crc, BlockHeader, BlockKind, BLOCK_HEADER_LEN, FILE_HEADER_LEN, FILE_MAGIC, VERSION_MAJOR,
};
use crate::clock::ClockMap;
use crate::decode::{self, EventDecoder};
use crate::defs::{self, CallDef, CallsiteDef, CommDef, Definition, ModuleDef, OpDef};
use crate::encode::BurstCpu;
use crate::event::Event;
use crate::info::{Note, RankInfo, Trailer};

/// Notes kept per rank file; later ones are counted, not kept.
const MAX_NOTES: usize = 10_000;

/// How a rank's record ends: what a user must know before trusting a report of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ending {
    /// The rank ended tracing itself (trailer present) and the file reads to its end.
    pub complete: bool,
    /// Why tracing ended, from the trailer (`finalize`, `exit`, `signal SIGTERM`,
    /// `MPI_Abort (error code 3)`, ...); `None` without a trailer.
    pub reason: Option<String>,
    /// Where and why reading stopped early (a cut or damaged file), if it did.
    pub cut: Option<String>,
    /// Events read.
    pub events: u64,
    /// Of which calls still in progress when the record ended.
    pub unfinished: u64,
    /// Time of the last thing recorded (an event's exit, a note), ns since the run's epoch.
    pub last_ns: u64,
    /// Events the recorder counted as lost (trailer), when known.
    pub lost: Option<u64>,
}

impl Ending {
    /// One line for a user: `complete (finalize)`, or what is missing and from when.
    pub fn describe(&self) -> String {
        let t = self.last_ns as f64 / 1e9;
        let lost = match self.lost {
            Some(0) | None => String::new(),
            Some(n) => format!(", {n} events lost"),
        };
        match (&self.reason, &self.cut) {
            (Some(r), None) if self.complete && (r == "finalize" || r == "exit") => {
                format!("complete ({r}{lost})")
            }
            (Some(r), None) if self.complete && r.starts_with("tracing stopped") => {
                format!("{r} at {t:.6} s{lost}; the record is whole up to then")
            }
            (Some(r), None) if self.complete => {
                format!("ended by {r} at {t:.6} s{lost}; the record is whole up to then")
            }
            (Some(r), _) => format!(
                "ended by {r}{lost}; {}",
                self.cut.as_deref().unwrap_or("the file is damaged after the trailer")
            ),
            (None, Some(c)) => format!(
                "no end record: the rank's record stops at {t:.6} s ({c}); events after that were lost"
            ),
            (None, None) => format!(
                "no end record: the rank's record stops at {t:.6} s (killed, or still running); events after the last block written were lost"
            ),
        }
    }
}

/// A problem reading a trace file, with where it happened.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system error (in the message, not a separate cause, so that it is printed
        /// once).
        error: std::io::Error,
    },
    /// The file is not an mpiscope rank file or has an unsupported version.
    #[error("{path}: {message}")]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file is damaged or cut at `offset`.
    #[error("{path}: offset {offset}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset of the block (or event) where reading stopped.
        offset: u64,
        /// What is wrong.
        message: String,
    },
}

impl ReadError {
    /// True when the file simply ends early (cut inside a block): the normal state of the
    /// file of a rank that was killed.
    pub fn is_truncation(&self) -> bool {
        matches!(self, ReadError::Corrupt { message, .. } if message.starts_with("file ends"))
    }
}

/// The definitions seen so far in a rank file.
#[derive(Debug, Default, Clone)]
pub struct Tables {
    /// Calls by id.
    pub calls: HashMap<u32, CallDef>,
    /// Modules by id.
    pub modules: HashMap<u32, ModuleDef>,
    /// Callsites by id.
    pub callsites: HashMap<u32, CallsiteDef>,
    /// Communicators by id.
    pub comms: HashMap<u32, CommDef>,
    /// Reduction operations by id.
    pub ops: HashMap<u32, OpDef>,
}

impl Tables {
    fn absorb(&mut self, d: Definition) {
        match d {
            Definition::Call(c) => {
                self.calls.insert(c.id, c);
            }
            Definition::Module(m) => {
                self.modules.insert(m.id, m);
            }
            Definition::Callsite(c) => {
                self.callsites.insert(c.id, c);
            }
            Definition::Comm(c) => {
                self.comms.insert(c.id, c);
            }
            Definition::Op(o) => {
                self.ops.insert(o.id, o);
            }
        }
    }

    /// Name of a call id (`?<id>` if undefined).
    pub fn call_name(&self, id: u32) -> std::borrow::Cow<'_, str> {
        match self.calls.get(&id) {
            Some(c) => std::borrow::Cow::Borrowed(c.name.as_str()),
            None => std::borrow::Cow::Owned(format!("?{id}")),
        }
    }
}

/// Streams the events of one rank file.
pub struct RankReader<R> {
    src: R,
    path: PathBuf,
    offset: u64,
    info: Option<RankInfo>,
    trailer: Option<Trailer>,
    tables: Tables,
    clock: ClockMap,
    payload: Vec<u8>,
    block_offset: u64,
    block_thread: u16,
    decoder: EventDecoder,
    /// The event [`RankReader::next_ref`] decodes into.
    current: Event,
    /// Whose lists to decode ([`RankReader::lists_only_for`]); `None`: every call's.
    list_filter: Option<ListFilter>,
    in_events: bool,
    stopped: Option<ReadError>,
    done: bool,
    blocks: u64,
    /// Calls still open when a record was taken, with their entry ticks, held until the end.
    open: Vec<(u64, Event)>,
    /// Decodes open blocks (their own codec state).
    open_decoder: EventDecoder,
    notes: Vec<Note>,
    notes_dropped: u64,
    unknown_definitions: u64,
    events_read: u64,
    unfinished_read: u64,
    last_ns: u64,
    /// The CPU block just read (its thread and base ticks), waiting for its events block.
    cpu_pending: Option<(u16, u64)>,
    /// Its entries: event index within the block, CPU time.
    cpu_entries: Vec<(u32, BurstCpu)>,
    /// The next entry to hand out, while the current events block has CPU entries.
    cpu_next: Option<usize>,
    /// Index of the next event within the current events block.
    block_index: u32,
}

impl RankReader<BufReader<File>> {
    /// Opens a rank file and reads up to its info block.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ReadError> {
        let path = path.as_ref();
        let f = crate::input::open_regular(path).map_err(|source| ReadError::Io {
            path: path.into(),
            error: source,
        })?;
        let r = RankReader::new(BufReader::with_capacity(1 << 16, f), path)?;
        // A file named for one rank must hold that rank's record.
        let named = path.file_name().and_then(|n| n.to_str()).and_then(|n| {
            n.strip_prefix("rank-")?
                .strip_suffix(".mpst")?
                .parse::<u32>()
                .ok()
        });
        if let (Some(want), Some(info)) = (named, r.info()) {
            if info.rank != want {
                return Err(ReadError::NotATrace {
                    path: path.into(),
                    message: format!(
                        "holds the record of rank {} (its info block says so), not of rank {want}",
                        info.rank
                    ),
                });
            }
        }
        Ok(r)
    }
}

impl<R: Read> RankReader<R> {
    /// A reader over any byte source; `path` names it in errors.
    pub fn new(mut src: R, path: impl Into<PathBuf>) -> Result<Self, ReadError> {
        let path = path.into();
        let mut hdr = [0u8; FILE_HEADER_LEN];
        if let Err(e) = src.read_exact(&mut hdr) {
            return Err(if e.kind() == ErrorKind::UnexpectedEof {
                ReadError::NotATrace {
                    path,
                    message: "file is shorter than a trace header".into(),
                }
            } else {
                ReadError::Io { path, error: e }
            });
        }
        if hdr[..8] != FILE_MAGIC {
            return Err(ReadError::NotATrace {
                path,
                message: "not an mpiscope trace (bad magic)".into(),
            });
        }
        let major = u16::from_le_bytes([hdr[8], hdr[9]]);
        if major != VERSION_MAJOR {
            return Err(ReadError::NotATrace {
                path,
                message: format!("trace format version {major} is not supported (this reader reads {VERSION_MAJOR})"),
            });
        }
        let mut r = RankReader {
            src,
            path,
            offset: FILE_HEADER_LEN as u64,
            info: None,
            trailer: None,
            tables: Tables::default(),
            clock: ClockMap::identity(),
            payload: Vec::new(),
            block_offset: 0,
            block_thread: 0,
            decoder: EventDecoder::new(0, 0),
            current: Event::default(),
            list_filter: None,
            in_events: false,
            stopped: None,
            done: false,
            blocks: 0,
            open: Vec::new(),
            open_decoder: EventDecoder::new(0, 0),
            notes: Vec::new(),
            notes_dropped: 0,
            unknown_definitions: 0,
            events_read: 0,
            unfinished_read: 0,
            last_ns: 0,
            cpu_pending: None,
            cpu_entries: Vec::new(),
            cpu_next: None,
            block_index: 0,
        };
        // The info block comes first; read blocks until it is seen or events start.
        while r.info.is_none() && !r.done && !r.in_events {
            r.next_block();
        }
        Ok(r)
    }

    /// The rank's description, if its info block was read.
    pub fn info(&self) -> Option<&RankInfo> {
        self.info.as_ref()
    }

    /// The closing summary, once the end of the file has been reached (absent if the rank
    /// did not end tracing normally).
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Definitions read so far.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// Why reading stopped before the end of the file, if it did.
    pub fn stopped(&self) -> Option<&ReadError> {
        self.stopped.as_ref()
    }

    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Blocks read so far.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Notes read so far (signals the program handled, hangs noticed, tracing stopped), in
    /// file order, with their times in ns since the run's epoch.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// Definitions skipped because their tag is newer than this reader (a later minor
    /// version): the rest of their block is skipped, as the format prescribes.
    pub fn unknown_definitions(&self) -> u64 {
        self.unknown_definitions
    }

    /// How the record ends. Meaningful once the reader is at the end ([`RankReader::drain`]
    /// or after the last event).
    pub fn ending(&self) -> Ending {
        let complete = self.trailer.is_some() && self.stopped.is_none();
        Ending {
            complete,
            reason: self.trailer.as_ref().map(|t| t.reason.clone()),
            cut: self.stopped.as_ref().map(|e| e.to_string()),
            events: self.events_read,
            unfinished: self.unfinished_read,
            last_ns: self.last_ns,
            lost: self.trailer.as_ref().map(|t| t.lost),
        }
    }

    /// Reads the rest of the file, discarding events, so that tables and trailer are complete.
    pub fn drain(&mut self) {
        while self.next_event().is_some() {}
    }

    fn corrupt(&mut self, offset: u64, message: impl Into<String>) {
        self.stopped = Some(ReadError::Corrupt {
            path: self.path.clone(),
            offset,
            message: message.into(),
        });
        self.done = true;
        self.in_events = false;
    }

    /// Reads exactly `buf.len()` bytes; returns how many were read before EOF.
    fn fill(src: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match src.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// Appends up to `len` bytes to `buf` (empty), growing it as data arrives; returns how
    /// many were read before EOF.
    fn fill_vec(src: &mut R, buf: &mut Vec<u8>, len: usize) -> std::io::Result<usize> {
        const STEP: usize = 1 << 20;
        while buf.len() < len {
            let have = buf.len();
            let want = (len - have).min(STEP.max(have));
            buf.resize(have + want, 0);
            let n = Self::fill(src, &mut buf[have..])?;
            buf.truncate(have + n);
            if n < want {
                break;
            }
        }
        Ok(buf.len())
    }

    /// Reads the next block; event blocks are left ready for decoding.
    fn next_block(&mut self) {
        let at = self.offset;
        let Some((hb, hdr)) = self.read_header(at) else {
            return;
        };
        let len = hdr.payload_len as usize;
        if !self.read_payload(at, len) {
            return;
        }
        if block_crc(&hb, &self.payload) != hdr.crc {
            return self.corrupt(at, "block checksum mismatch");
        }
        self.offset += (BLOCK_HEADER_LEN + len) as u64;
        self.blocks += 1;
        self.absorb_block(at, &hdr);
    }

    /// Reads the header of the block at `at`; `None` at the end of the record, or when it
    /// stops there (damaged or unreadable).
    fn read_header(&mut self, at: u64) -> Option<([u8; BLOCK_HEADER_LEN], BlockHeader)> {
        let mut hb = [0u8; BLOCK_HEADER_LEN];
        match Self::fill(&mut self.src, &mut hb) {
            Ok(0) => {
                self.done = true;
                return None;
            }
            Ok(n) if n < BLOCK_HEADER_LEN => {
                if hb[..n].iter().all(|&b| b == 0) {
                    // Preallocated, never-written tail.
                    self.done = true;
                } else {
                    self.corrupt(
                        at,
                        format!(
                            "file ends inside a block header ({n} of {BLOCK_HEADER_LEN} bytes)"
                        ),
                    );
                }
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.stopped = Some(ReadError::Io {
                    path: self.path.clone(),
                    error: e,
                });
                self.done = true;
                return None;
            }
        }
        if hb.iter().all(|&b| b == 0) {
            self.done = true;
            return None;
        }
        let hdr = match BlockHeader::parse(&hb) {
            Ok(h) => h,
            Err(m) => {
                self.corrupt(at, m);
                return None;
            }
        };
        Some((hb, hdr))
    }

    /// Reads the `len` payload bytes of the block at `at` into `self.payload`; false when
    /// the record stops there.
    fn read_payload(&mut self, at: u64, len: usize) -> bool {
        // Grow the buffer with the data actually read, never to a length the header merely
        // claims (a damaged length must not allocate a gigabyte).
        self.payload.clear();
        match Self::fill_vec(&mut self.src, &mut self.payload, len) {
            Ok(n) if n == len => {}
            Ok(n) => {
                self.corrupt(
                    at,
                    format!("file ends inside a block ({n} of {len} payload bytes)"),
                );
                return false;
            }
            Err(e) => {
                self.stopped = Some(ReadError::Io {
                    path: self.path.clone(),
                    error: e,
                });
                self.done = true;
                return false;
            }
        }
        true
    }

    /// Takes in the block at `at` whose payload is in `self.payload`.
    fn absorb_block(&mut self, at: u64, hdr: &BlockHeader) {
        // A CPU block belongs to the events block right after it (same thread, same base).
        let cpu = self.cpu_pending.take();
        match hdr.kind {
            BlockKind::Events => {
                self.clock.update(hdr.sync_ticks, hdr.sync_ns);
                self.decoder.restart(hdr.records, hdr.base_ticks);
                self.block_offset = at;
                self.block_thread = hdr.thread;
                self.in_events = true;
                self.block_index = 0;
                self.cpu_next = (cpu == Some((hdr.thread, hdr.base_ticks))).then_some(0);
            }
            BlockKind::Cpu => {
                match decode::decode_cpu(&self.payload, hdr.records, &mut self.cpu_entries) {
                    Ok(()) => self.cpu_pending = Some((hdr.thread, hdr.base_ticks)),
                    Err(m) => self.corrupt(at, m),
                }
            }
            BlockKind::Definitions => {
                let mut pos = 0;
                let payload = std::mem::take(&mut self.payload);
                while pos < payload.len() {
                    if !defs::is_known_tag(payload[pos]) {
                        // A definition of a later minor version: its length is unknown, so
                        // the rest of this block is skipped (later blocks are read).
                        self.unknown_definitions += 1;
                        break;
                    }
                    match defs::decode(&payload, &mut pos) {
                        Ok(d) => self.tables.absorb(d),
                        Err(m) => {
                            self.payload = payload;
                            return self.corrupt(at + (BLOCK_HEADER_LEN + pos) as u64, m);
                        }
                    }
                }
                self.payload = payload;
            }
            BlockKind::Info => match serde_json::from_slice::<RankInfo>(&self.payload) {
                Ok(info) => {
                    self.clock = ClockMap::new(&info.clock, info.epoch_ns);
                    self.info = Some(info);
                }
                Err(e) => self.corrupt(at, format!("bad info block: {e}")),
            },
            BlockKind::Open => {
                if let Err(m) = self.absorb_open(
                    hdr.thread,
                    hdr.records,
                    hdr.base_ticks,
                    hdr.sync_ticks,
                    hdr.sync_ns,
                ) {
                    let at = at + (BLOCK_HEADER_LEN + self.open_decoder.position()) as u64;
                    self.corrupt(at, m);
                }
            }
            BlockKind::Note => match serde_json::from_slice::<Note>(&self.payload) {
                Ok(mut n) => {
                    self.clock.update(hdr.sync_ticks, hdr.sync_ns);
                    n.time_ns = self.clock.to_ns(n.ticks);
                    self.last_ns = self.last_ns.max(n.time_ns);
                    if self.notes.len() < MAX_NOTES {
                        self.notes.push(n);
                    } else {
                        self.notes_dropped += 1;
                    }
                }
                Err(e) => self.corrupt(at, format!("bad note block: {e}")),
            },
            BlockKind::Unknown => {}
            BlockKind::Trailer => match serde_json::from_slice::<Trailer>(&self.payload) {
                Ok(t) => {
                    self.clock.update(t.sync_ticks, t.sync_ns);
                    self.trailer = Some(t);
                }
                Err(e) => self.corrupt(at, format!("bad trailer block: {e}")),
            },
        }
    }

    /// Reads an open block: calls in progress. A later record of the same call (same thread,
    /// call and entry) replaces an earlier one.
    fn absorb_open(
        &mut self,
        thread: u16,
        records: u32,
        base: u64,
        sync_ticks: u64,
        sync_ns: u64,
    ) -> Result<(), &'static str> {
        self.clock.update(sync_ticks, sync_ns);
        self.open_decoder.restart(records, base);
        loop {
            let mut ev = Event::default();
            match self
                .open_decoder
                .next_into(&self.payload, &mut ev, |_| true)
            {
                None => return Ok(()),
                Some(Err(m)) => return Err(m),
                Some(Ok(())) => {}
            }
            let ticks = ev.t_enter;
            ev.thread = thread;
            ev.t_enter = self.clock.to_ns(ev.t_enter);
            ev.t_exit = self.clock.to_ns(ev.t_exit);
            ev.unfinished = true;
            self.open
                .retain(|(t, o)| !(o.thread == thread && o.call == ev.call && *t == ticks));
            if self.open.len() < 4096 {
                self.open.push((ticks, ev));
            }
        }
    }

    /// Decodes the lists (vector arguments) of the functions called `names` only: the others'
    /// are skipped over, faster, and their events come with no lists. For passes that read
    /// the fixed arguments only.
    pub fn lists_only_for(&mut self, names: &[&str]) {
        self.list_filter = Some(ListFilter {
            names: names.iter().map(|n| n.to_string()).collect(),
            by_call: Vec::new(),
        });
    }

    /// The next event, or `None` at the end (check [`RankReader::stopped`]).
    pub fn next_event(&mut self) -> Option<Event> {
        self.next_ref().cloned()
    }

    /// The next event, decoded in place into a buffer the reader keeps (no copy, no
    /// allocation once its lists have grown): the fast way through a trace. `None` at the end
    /// (check [`RankReader::stopped`]).
    pub fn next_ref(&mut self) -> Option<&Event> {
        self.advance().then_some(&self.current)
    }

    /// As [`RankReader::next_ref`], with the definitions read so far (names, communicators,
    /// callsites), which the event's ids refer to.
    pub fn next_with_tables(&mut self) -> Option<(&Event, &Tables)> {
        self.advance().then_some((&self.current, &self.tables))
    }

    /// Decodes the next event into `self.current`; false at the end.
    fn advance(&mut self) -> bool {
        loop {
            if self.in_events {
                let (filter, tables) = (&mut self.list_filter, &self.tables);
                let lists = |call: u32| filter.as_mut().is_none_or(|f| f.wants(call, tables));
                match self
                    .decoder
                    .next_into(&self.payload, &mut self.current, lists)
                {
                    Some(Ok(())) => {
                        let ev = &mut self.current;
                        ev.thread = self.block_thread;
                        if !self.open.is_empty() {
                            let (th, call, ticks) = (ev.thread, ev.call, ev.t_enter);
                            // The call returned after a record saw it in progress.
                            self.open.retain(|(t, o)| {
                                !(o.thread == th && o.call == call && *t == ticks)
                            });
                        }
                        ev.t_enter = self.clock.to_ns(ev.t_enter);
                        ev.t_exit = self.clock.to_ns(ev.t_exit);
                        ev.unfinished = false;
                        ev.cpu_ns = None;
                        if let Some(k) = self.cpu_next {
                            if let Some(&(i, c)) = self.cpu_entries.get(k) {
                                if i == self.block_index {
                                    // The reference reading came `lead` before the burst
                                    // began, in calls and short bursts that used between
                                    // none and all of it: half is taken off.
                                    let lead = self.clock.span_ns(c.lead_ticks);
                                    ev.cpu_ns = Some(c.ns.saturating_sub(lead / 2));
                                    self.cpu_next = Some(k + 1);
                                }
                            }
                        }
                        self.block_index += 1;
                        self.events_read += 1;
                        self.last_ns = self.last_ns.max(ev.t_exit);
                        return true;
                    }
                    Some(Err(m)) => {
                        let at =
                            self.block_offset + (BLOCK_HEADER_LEN + self.decoder.position()) as u64;
                        self.corrupt(at, m);
                        return false;
                    }
                    None => self.in_events = false,
                }
            }
            if self.done {
                // Calls that never returned in the record come last (each is the last call
                // of its thread).
                if self.open.is_empty() {
                    return false;
                }
                let (_, ev) = self.open.remove(0);
                self.current = ev;
                self.events_read += 1;
                self.unfinished_read += 1;
                self.last_ns = self.last_ns.max(self.current.t_exit);
                return true;
            }
            self.next_block();
        }
    }
}

impl<R: Read> Iterator for RankReader<R> {
    type Item = Event;
    fn next(&mut self) -> Option<Event> {
        self.next_event()
    }
}

/// The functions whose lists a reader decodes, and the answer per call id once known.
struct ListFilter {
    names: Vec<String>,
    /// Per call id below 2^16: 0 unknown, 1 decode, 2 skip.
    by_call: Vec<u8>,
}

impl ListFilter {
    #[inline]
    fn wants(&mut self, call: u32, tables: &Tables) -> bool {
        let i = call as usize;
        if let Some(&k) = self.by_call.get(i).filter(|&&k| k != 0) {
            return k == 1;
        }
        let Some(def) = tables.calls.get(&call) else {
            // Not defined (yet): decode, and ask again next time.
            return true;
        };
        let yes = self.names.contains(&def.name);
        if i < 1 << 16 {
            if self.by_call.len() <= i {
                self.by_call.resize(i + 1, 0);
            }
            self.by_call[i] = if yes { 1 } else { 2 };
        }
        yes
    }
}

/// How a rank file ends, found by walking its block headers (payloads are skipped, except
/// the info block and the trailer): fast enough to run before any pass over a run, so that
/// every command can announce partial input. Event blocks' checksums are not verified here;
/// a full read ([`RankReader`]) may stop earlier on a damaged block.
pub fn skim_ending(path: &Path) -> Result<Ending, ReadError> {
    use std::io::{Seek, SeekFrom};
    let f = crate::input::open_regular(path).map_err(|source| ReadError::Io {
        path: path.into(),
        error: source,
    })?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut src = BufReader::with_capacity(1 << 12, f);
    let mut hdr = [0u8; FILE_HEADER_LEN];
    if src.read_exact(&mut hdr).is_err() || hdr[..8] != FILE_MAGIC {
        return Err(ReadError::NotATrace {
            path: path.into(),
            message: "not an mpiscope trace".into(),
        });
    }
    let mut at = FILE_HEADER_LEN as u64;
    let mut clock = ClockMap::identity();
    let (mut events, mut unfinished, mut last_ticks) = (0u64, 0u64, None::<u64>);
    let mut trailer: Option<Trailer> = None;
    let mut cut = None;
    loop {
        let mut hb = [0u8; BLOCK_HEADER_LEN];
        let n = RankReader::<BufReader<File>>::fill(&mut src, &mut hb).unwrap_or(0);
        if n == 0 || hb.iter().all(|&b| b == 0) {
            break;
        }
        if n < BLOCK_HEADER_LEN {
            cut = Some(format!(
                "{}: offset {at}: file ends inside a block header",
                path.display()
            ));
            break;
        }
        let h = match BlockHeader::parse(&hb) {
            Ok(h) => h,
            Err(m) => {
                cut = Some(format!("{}: offset {at}: {m}", path.display()));
                break;
            }
        };
        let len = u64::from(h.payload_len);
        if at + BLOCK_HEADER_LEN as u64 + len > size {
            cut = Some(format!(
                "{}: offset {at}: file ends inside a block",
                path.display()
            ));
            break;
        }
        match h.kind {
            BlockKind::Info | BlockKind::Trailer => {
                let mut payload = Vec::new();
                RankReader::<BufReader<File>>::fill_vec(&mut src, &mut payload, len as usize)
                    .map_err(|source| ReadError::Io {
                        path: path.into(),
                        error: source,
                    })?;
                if block_crc(&hb, &payload) != h.crc {
                    cut = Some(format!(
                        "{}: offset {at}: block checksum mismatch",
                        path.display()
                    ));
                    break;
                }
                if h.kind == BlockKind::Info {
                    if let Ok(info) = serde_json::from_slice::<RankInfo>(&payload) {
                        clock = ClockMap::new(&info.clock, info.epoch_ns);
                    }
                } else if let Ok(t) = serde_json::from_slice::<Trailer>(&payload) {
                    trailer = Some(t);
                }
            }
            _ => {
                src.seek(SeekFrom::Current(len as i64))
                    .map_err(|source| ReadError::Io {
                        path: path.into(),
                        error: source,
                    })?;
            }
        }
        match h.kind {
            BlockKind::Events => events += u64::from(h.records),
            BlockKind::Open => unfinished += u64::from(h.records),
            _ => {}
        }
        if h.kind != BlockKind::Info {
            clock.update(h.sync_ticks, h.sync_ns);
            last_ticks = Some(last_ticks.map_or(h.sync_ticks, |t| t.max(h.sync_ticks)));
        }
        at += BLOCK_HEADER_LEN as u64 + len;
    }
    Ok(Ending {
        complete: trailer.is_some() && cut.is_none(),
        reason: trailer.as_ref().map(|t| t.reason.clone()),
        cut,
        events,
        unfinished,
        last_ns: last_ticks.map_or(0, |t| clock.to_ns(t)),
        lost: trailer.as_ref().map(|t| t.lost),
    })
}

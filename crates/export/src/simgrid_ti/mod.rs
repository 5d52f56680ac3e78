//! SimGrid time-independent (TI) traces, for `smpirun -replay` of SimGrid 3.32.
//!
//! [`export_simgrid_ti`] writes one text file per rank, `rank-N.txt`, and an index,
//! `index.txt`, that lists them in rank order. Replay with
//!
//! ```text
//! smpirun -np N -platform platform.xml -hostfile hosts -replay OUT/index.txt
//! ```
//!
//! SimGrid opens the listed files relative to the directory `smpirun` runs in, not to the
//! index, so the index holds absolute paths: it keeps working from any directory, but not
//! after the output directory is moved (rewrite the index then).
//!
//! # The format
//!
//! Each line is `<rank> <action> <arguments...>`, with the rank first because SimGrid
//! checks that every line of a rank's file belongs to that rank. The action forms below are
//! the ones the 3.32 replayer parses (`src/smpi/internals/smpi_replay.cpp`), written the
//! way SimGrid's own `-trace-ti` tracer writes them (`src/instr/instr_private.hpp`,
//! `src/smpi/bindings/smpi_pmpi_*.cpp`), except that the trailing blank SimGrid leaves after
//! some collectives is not written (the replayer trims lines). Every line ends with a
//! newline: the 3.32 reader drops a last line that has none.
//!
//! | action | arguments |
//! |---|---|
//! | `init`, `finalize` | none (an `init` without argument makes `MPI_BYTE` the default datatype) |
//! | `compute` | flops |
//! | `send`, `isend` | destination, tag, count, datatype |
//! | `recv`, `irecv` | source, tag, count, datatype |
//! | `sendRecv` | send count, destination, receive count, source, send datatype, receive datatype (tags are 0) |
//! | `wait` | source, destination, tag of the request to complete |
//! | `waitall` | number of requests (ignored by the replayer: it completes every pending request) |
//! | `barrier` | none |
//! | `bcast` | count, root, datatype |
//! | `reduce` | count, flops of the operation, root, datatype |
//! | `allreduce`, `scan`, `exscan` | count, flops of the operation, datatype |
//! | `alltoall`, `allgather` | send count, receive count, send datatype, receive datatype |
//! | `gather`, `scatter` | send count, receive count, root, send datatype, receive datatype |
//! | `gatherv` | send count, one receive count per rank, root, send datatype, receive datatype |
//! | `allgatherv` | send count, one receive count per rank, send datatype, receive datatype |
//! | `scatterv` | one send count per rank, receive count, root, send datatype, receive datatype |
//! | `alltoallv` | send total, send counts, receive total, receive counts, send datatype, receive datatype |
//! | `reducescatter` | one receive count per rank, flops of the operation, datatype |
//!
//! Ranks (peers, roots, `wait` endpoints) are `MPI_COMM_WORLD` ranks. Counts are element
//! counts of the datatype that follows, written as SimGrid's datatype ids
//! (`Datatype::encode`): the exporter picks the predefined type with the traced datatype's
//! size (1 byte: `MPI_BYTE` 6, 2: `MPI_SHORT` 3, 4: `MPI_INT` 1, 8: `MPI_DOUBLE` 0, 16:
//! `MPI_C_DOUBLE_COMPLEX` 26); any other size is written as a byte count of `MPI_BYTE`, so
//! the simulated message sizes are always the traced ones. The flops of reduction
//! operations are written as 0, as SimGrid's own tracer does.
//!
//! # What maps to what
//!
//! * Compute: the time on the main thread between two MPI calls (from the run's epoch, or
//!   from `MPI_Init`'s return, to the first call) becomes `compute`, at
//!   [`TiOptions::host_speed_flops`]. Consecutive bursts are merged; a merged burst shorter
//!   than [`TiOptions::min_compute_ns`] is dropped.
//! * Blocking point-to-point: `MPI_Send`/`Ssend`/`Bsend`/`Rsend` → `send`; `MPI_Recv` and
//!   `MPI_Mrecv` → `recv`. A wildcard source or tag is replaced by the source and tag the
//!   receive actually matched (from its status), so the replay matches messages as the run
//!   did; when the status is not recorded, SimGrid's own `MPI_ANY_SOURCE`/`MPI_ANY_TAG`
//!   values (-555, -444) are written.
//! * `MPI_Sendrecv`/`Sendrecv_replace` → `sendRecv` when both tags are 0 (the replayer uses
//!   tag 0), else `isend` + `recv` + `wait`; a half with `MPI_PROC_NULL` leaves the other
//!   half as a plain `send` or `recv`.
//! * Non-blocking point-to-point: `MPI_Isend` (and the `s`/`b`/`r` variants) → `isend`,
//!   `MPI_Irecv`/`Imrecv` → `irecv`. Persistent requests (`MPI_Send_init`, ...) become
//!   `isend`/`irecv` at each `MPI_Start`/`Startall` (the `*_init` calls themselves are local
//!   work, added to compute). `MPI_Isendrecv` becomes `isend` + `irecv`. Receives are written
//!   once their completion is known, so that a wildcard receive can be given its matched
//!   source and tag, and a cancelled receive can be left out (the trace does not say whether
//!   a cancel succeeded: a cancelled receive is taken as cancelled). The lines that follow a
//!   pending receive wait in memory meanwhile; past about a million of them, receives with a
//!   known source and tag are written as posted.
//! * Completions: SimGrid finds the request a `wait` completes by (source, destination,
//!   tag). Each request completed by `MPI_Wait`, `Waitany`, `Waitsome`, `Waitall` or a
//!   successful `MPI_Test*`/`MPI_Request_get_status` (flag 1, or completion data recorded,
//!   which only a success records) becomes a `wait`, except that a
//!   `MPI_Waitall`/`Testall` that completes exactly the requests still pending in the replay
//!   becomes one `waitall` (the 3.32 `waitall` completes every pending request, whatever its
//!   argument). A successful test becomes `wait`, not `test`: the program went on knowing
//!   the request complete.
//! * Collectives on `MPI_COMM_WORLD`, or on a communicator holding every process (a
//!   duplicate, possibly reordered: per-rank counts are put back in world order), map to the
//!   action of the same name; `MPI_Reduce_scatter_block` → `reducescatter` with equal
//!   counts; `MPI_Alltoallw` → `alltoallv` in bytes. Non-blocking collectives are replayed as
//!   the blocking collective where they start (MPI requires every rank to start collectives
//!   in the same order, so the replay stays consistent), their completion replays nothing;
//!   persistent collectives likewise at each start.
//!
//! # What is left out
//!
//! Each of these is counted, per function, in [`TiSummary::skipped`].
//!
//! * Calls with no TI action (`MPI_Comm_rank`, `MPI_Wtime`, datatype, communicator, RMA,
//!   file and neighborhood calls, ...): their duration is added to the surrounding compute
//!   burst, which approximates local work and keeps the replayed time close to the traced
//!   one for operations the replay cannot simulate. So are collectives on communicators
//!   smaller than the world (SimGrid 3.32 replays collectives on `MPI_COMM_WORLD` only; its
//!   `comm_split`/`comm_dup` actions do nothing) and point-to-point calls whose peer is not
//!   known as a world rank.
//! * Calls that only wait or poll (failed tests, `MPI_Probe`, `Iprobe`, `Mprobe`, and
//!   completions that complete nothing the replay simulates) are dropped with their
//!   duration: that time is waiting, which the replay simulates at the matching `wait`,
//!   `recv` or collective. The 3.32 `test` action would also add SimGrid's `smpi/test`
//!   delay (1e-4 s) per call. Time before `MPI_Init` is not replayed.
//! * Calls involving only `MPI_PROC_NULL` are dropped.
//! * Only thread 0 (the thread that initialized MPI) is replayed: events of other threads
//!   are ignored. Calls after `MPI_Finalize` are ignored.
//!
//! Point-to-point messages on communicators other than `MPI_COMM_WORLD` are replayed on the
//! world communicator with their tag moved by a per-communicator offset (a multiple of
//! 1,000,000 derived from the communicator's identity, which every member shares), so that
//! messages of two communicators between the same processes cannot match each other.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};

use mpiscope_files::{AtomicFile, Staged};

use crate::outputs::{TI_INDEX, TI_RANK};
use std::rc::Rc;

use mpiscope_trace::{
    CommDef, CommKind, Event, ListKind, ReadError, RunDir, Slot, Tables, PEER_ANY, PEER_NULL,
    TAG_ANY,
};

use crate::ExportError;

/// Options of the TI export.
#[derive(Debug, Clone, PartialEq)]
pub struct TiOptions {
    /// Flops per second used to turn compute bursts (nanoseconds) into flop counts. Replay
    /// on hosts of this speed to get the traced compute times back. Default 1e9.
    pub host_speed_flops: f64,
    /// Compute bursts shorter than this (in nanoseconds, after merging consecutive bursts)
    /// are dropped. Default 0 (keep all).
    pub min_compute_ns: u64,
    /// Replace existing files of other kinds at the output paths (`--force`); files that
    /// look like TI traces and indexes are replaced anyway.
    pub force: bool,
}

impl Default for TiOptions {
    fn default() -> Self {
        TiOptions {
            host_speed_flops: 1e9,
            min_compute_ns: 0,
            force: false,
        }
    }
}

/// What an export wrote and what it left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TiSummary {
    /// Ranks exported (one file each).
    pub ranks: u32,
    /// TI lines written, over all ranks (`init`, `compute` and `finalize` included).
    pub actions: u64,
    /// Human-readable notes: calls with no TI action that were added to compute or dropped,
    /// with counts per function, and problems met in particular ranks.
    pub skipped: Vec<String>,
}

/// Converts the run in `run` into SimGrid TI traces in `out_dir` (created if needed):
/// `rank-N.txt` for each rank and `index.txt` listing them by absolute path.
///
/// A rank file that ends early (killed rank) or is damaged is exported up to the last good
/// block and noted in [`TiSummary::skipped`]: the replay of such a trace may deadlock.
pub fn export_simgrid_ti(
    run: &RunDir,
    out_dir: &Path,
    opts: &TiOptions,
) -> Result<TiSummary, ExportError> {
    if !(opts.host_speed_flops.is_finite() && opts.host_speed_flops > 0.0) {
        return Err(ExportError::InvalidOption {
            path: out_dir.to_path_buf(),
            message: format!(
                "host_speed_flops must be a positive number of flops per second (got {})",
                opts.host_speed_flops
            ),
        });
    }
    let ranks = run.ranks();
    if ranks == 0 {
        return Err(ExportError::NoRanks {
            path: run.path.clone(),
        });
    }
    // Everything that would be replaced is judged before anything is written.
    let index_path = out_dir.join("index.txt");
    mpiscope_files::check_output(&index_path, &TI_INDEX, opts.force)?;
    for rank in 0..ranks {
        let p = out_dir.join(format!("rank-{rank}.txt"));
        mpiscope_files::check_output(&p, &TI_RANK, opts.force)?;
    }
    std::fs::create_dir_all(out_dir).map_err(|source| ExportError::Write {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let out_abs = std::fs::canonicalize(out_dir).map_err(|source| ExportError::Write {
        path: out_dir.to_path_buf(),
        source,
    })?;

    let mut notes: Notes = BTreeMap::new();
    let mut rank_notes = Vec::new();
    let mut dropped_bursts = (0u64, 0u64);
    let mut actions = 0u64;
    let mut files = Vec::with_capacity(ranks as usize);
    let mut staged: Vec<Staged> = Vec::with_capacity(ranks as usize);
    for rank in 0..ranks {
        let Some((_, in_path)) = run.rank_files.iter().find(|(r, _)| *r == rank) else {
            return Err(ExportError::MissingRank {
                path: run.path.clone(),
                rank,
                ranks,
            });
        };
        let mut reader = run.open_rank(rank)?;
        if let Some(info) = reader.info() {
            if info.rank != rank || info.size != ranks {
                return Err(ExportError::RankMismatch {
                    path: in_path.clone(),
                    rank,
                    ranks,
                    found_rank: info.rank,
                    found_size: info.size,
                });
            }
        }
        let out_path = out_abs.join(format!("rank-{rank}.txt"));
        let file = AtomicFile::create_output(&out_path, &TI_RANK, opts.force)?;
        let out = Output::new(file, out_path.clone(), rank);
        let mut conv = Converter::new(rank, ranks, opts, out)?;
        while let Some(ev) = reader.next_event() {
            conv.event(&ev, reader.tables())?;
        }
        match reader.stopped() {
            Some(ReadError::Io { path, error }) => {
                let error = std::io::Error::new(error.kind(), error.to_string());
                return Err(ExportError::Read(ReadError::Io {
                    path: path.clone(),
                    error,
                }));
            }
            Some(e) => rank_notes.push(format!(
                "rank {rank}: {e}; the events after this point are missing, so the replay may deadlock"
            )),
            None => {}
        }
        let done = conv.finish()?;
        actions += done.actions;
        dropped_bursts.0 += done.dropped_bursts.0;
        dropped_bursts.1 += done.dropped_bursts.1;
        for (name, reasons) in done.notes {
            let entry = notes.entry(name).or_default();
            for (reason, n) in reasons {
                *entry.entry(reason).or_default() += n;
            }
        }
        rank_notes.extend(done.rank_notes);
        files.push(out_path);
        staged.push(done.file);
    }
    // Every rank converted: the files take their places, then the index.
    for f in staged {
        f.commit()?;
    }

    let index_path = out_abs.join("index.txt");
    let mut index = String::new();
    for f in &files {
        let Some(s) = f.to_str() else {
            return Err(ExportError::Write {
                path: f.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "path is not valid UTF-8",
                ),
            });
        };
        index.push_str(s);
        index.push('\n');
    }
    mpiscope_files::write_output(&index_path, &TI_INDEX, opts.force, index.as_bytes())?;

    let mut skipped: Vec<String> = notes
        .into_iter()
        .flat_map(|(name, reasons)| {
            reasons.into_iter().map(move |(r, n)| {
                format!(
                    "{name}: {n} call{}: {}",
                    if n == 1 { "" } else { "s" },
                    r.text()
                )
            })
        })
        .collect();
    if dropped_bursts.0 > 0 {
        skipped.push(format!(
            "compute bursts shorter than {} ns: {} dropped ({} ns in all)",
            opts.min_compute_ns, dropped_bursts.0, dropped_bursts.1
        ));
    }
    skipped.extend(rank_notes);
    Ok(TiSummary {
        ranks,
        actions,
        skipped,
    })
}

/// Counts of calls not replayed as such, by function name and reason.
type Notes = BTreeMap<String, BTreeMap<Reason, u64>>;

/// Why a call was not replayed as such; the key of a [`TiSummary::skipped`] note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reason {
    NoAction,
    Waiting,
    Probe,
    NullPeer,
    UnknownPeer,
    UnknownRoot,
    MissingArgs,
    SubComm,
    SelfComm,
    UnknownComm,
    AsBlocking,
    UnresolvedWildcard,
    Cancelled,
    CancelledTooLate,
    FreedActive,
    PendingAtEnd,
    UnknownRequest,
    AfterFinalize,
    OtherThread,
    Unrecorded,
    Unfinished,
}

impl Reason {
    fn text(self) -> &'static str {
        match self {
            Reason::NoAction => "no TI action; duration added to compute",
            Reason::Waiting => "completed nothing; dropped with its duration (waiting time)",
            Reason::Probe => "probe; dropped with its duration (the replay simulates the wait at the receive)",
            Reason::NullPeer => "to or from MPI_PROC_NULL only; dropped",
            Reason::UnknownPeer => "peer is not a known world rank; not replayed, duration added to compute",
            Reason::UnknownRoot => "root is not a known world rank; not replayed, duration added to compute",
            Reason::MissingArgs => "counts or datatype sizes not recorded; not replayed, duration added to compute",
            Reason::SubComm => {
                "collective on a communicator smaller than MPI_COMM_WORLD (no TI form in SimGrid 3.32); duration added to compute"
            }
            Reason::SelfComm => "collective on a single-process communicator; duration added to compute",
            Reason::UnknownComm => "communicator not defined in the trace; not replayed, duration added to compute",
            Reason::AsBlocking => "non-blocking or persistent collective, replayed as the blocking collective where it starts",
            Reason::UnresolvedWildcard => "wildcard receive whose matched source or tag is not recorded; dropped",
            Reason::Cancelled => "cancelled receive; left out of the replay",
            Reason::CancelledTooLate => "cancelled request already written to the replay (the replay may wait for it)",
            Reason::FreedActive => "request freed before completion; it completes at the end of the replay",
            Reason::PendingAtEnd => "receive never completed in the trace; dropped",
            Reason::UnknownRequest => "request not created in the trace; ignored",
            Reason::AfterFinalize => "after MPI_Finalize; ignored",
            Reason::OtherThread => "on a thread other than the main thread; ignored (multithreaded trace)",
            Reason::Unrecorded => "not recorded (sampling or time window); missing from the replay, which may deadlock",
            Reason::Unfinished => "still in progress when the rank's record ended (it never returned); left out, the rank ends before it",
        }
    }
}

/// SimGrid 3.32's `MPI_ANY_SOURCE`.
const SG_ANY_SOURCE: i64 = -555;
/// SimGrid 3.32's `MPI_ANY_TAG`.
const SG_ANY_TAG: i64 = -444;
/// SimGrid's datatype id of `MPI_BYTE`.
const DT_BYTE: &str = "6";
/// Output lines held back (behind a receive whose completion is not seen yet) before
/// receives with a known source and tag are written as posted.
const MAX_HELD_LINES: usize = 1 << 20;
/// Tags of communicators other than the world are moved by a multiple of this.
const TAG_STRIDE: i64 = 1_000_000;

/// SimGrid's id of a predefined datatype of `size` bytes.
fn dt_for_size(size: i64) -> Option<&'static str> {
    match size {
        1 => Some(DT_BYTE),
        2 => Some("3"),
        4 => Some("1"),
        8 => Some("0"),
        16 => Some("26"),
        _ => None,
    }
}

/// Size in bytes of a datatype id from [`dt_for_size`].
fn dt_size(dt: &str) -> i64 {
    match dt {
        "3" => 2,
        "1" => 4,
        "0" => 8,
        "26" => 16,
        _ => 1,
    }
}

/// A buffer as TI writes it: a count of elements of a SimGrid datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Buf {
    count: i64,
    dt: &'static str,
}

impl Buf {
    /// `count` elements of `size` bytes (size unknown: the count is taken as bytes).
    fn new(count: i64, size: Option<i64>) -> Option<Buf> {
        if count < 0 {
            return None;
        }
        match size {
            None => Some(Buf { count, dt: DT_BYTE }),
            Some(s) if s < 0 => None,
            Some(s) => Some(match dt_for_size(s) {
                Some(dt) => Buf { count, dt },
                None => Buf {
                    count: count.checked_mul(s)?,
                    dt: DT_BYTE,
                },
            }),
        }
    }

    fn bytes(self) -> i64 {
        self.count.saturating_mul(dt_size(self.dt))
    }
}

/// The send buffer of an event (`Count`, `DtypeSize`).
fn send_buf(ev: &Event) -> Option<Buf> {
    Buf::new(ev.args.get(Slot::Count)?, ev.args.get(Slot::DtypeSize))
}

/// The receive buffer of an event (`RecvCount`, `RecvDtypeSize`).
fn recv_buf(ev: &Event) -> Option<Buf> {
    Buf::new(
        ev.args.get(Slot::RecvCount)?,
        ev.args.get(Slot::RecvDtypeSize),
    )
}

/// Per-rank counts of one datatype, as counts of a SimGrid datatype.
fn counts_buf(counts: Vec<i64>, size: Option<i64>) -> Result<(Vec<i64>, &'static str), Reason> {
    if counts.iter().any(|&c| c < 0) {
        return Err(Reason::MissingArgs);
    }
    match size {
        None => Ok((counts, DT_BYTE)),
        Some(s) => match dt_for_size(s) {
            Some(dt) => Ok((counts, dt)),
            None if s >= 0 => {
                let bytes: Option<Vec<i64>> = counts.iter().map(|&c| c.checked_mul(s)).collect();
                Ok((bytes.ok_or(Reason::MissingArgs)?, DT_BYTE))
            }
            None => Err(Reason::MissingArgs),
        },
    }
}

fn join(v: &[i64]) -> String {
    let mut s = String::new();
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&x.to_string());
    }
    s
}

/// Flops as TI writes them: integers when whole, else up to three decimals.
fn fmt_flops(x: f64) -> String {
    let r = (x * 1000.0).round() / 1000.0;
    if r.fract() == 0.0 && r.abs() < 9e15 {
        return (r as i64).to_string();
    }
    let s = format!("{r:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

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
struct Output {
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
    fn new(w: AtomicFile, path: PathBuf, rank: u32) -> Output {
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

    fn line(&mut self, text: String) -> Result<(), ExportError> {
        if self.queue.is_empty() {
            self.base += 1;
            return self.write(&text);
        }
        self.queue.push_back(Entry::Line(text));
        self.drain()
    }

    /// Reserves the place of a line written later; returns its position.
    fn hole(&mut self, fallback: Option<String>) -> u64 {
        let at = self.base + self.queue.len() as u64;
        self.queue.push_back(Entry::Hole { fallback });
        at
    }

    /// Fills a reserved place (`None`: nothing is written there). Returns false when the
    /// place had already been written with its fallback.
    fn fill(&mut self, at: u64, text: Option<String>) -> Result<bool, ExportError> {
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

    /// Writes what is held and closes the file (complete, not yet in place).
    fn finish(mut self) -> Result<(u64, Staged), ExportError> {
        for e in self.queue.iter_mut() {
            if matches!(e, Entry::Hole { .. }) {
                *e = Entry::Gone;
            }
        }
        self.drain()?;
        Ok((self.written, self.w.close()?))
    }
}

/// What starting a request replays.
#[derive(Debug, Clone)]
enum Start {
    Send {
        dst: i64,
        tag: i64,
        buf: Buf,
    },
    Recv {
        src: i64,
        tag: i64,
        tag_offset: i64,
        buf: Buf,
    },
    Lines(Vec<String>),
    Nothing,
}

/// One operation of an active request that sits in SimGrid's request store.
#[derive(Debug, Clone)]
enum Part {
    Send {
        dst: i64,
        tag: i64,
    },
    /// A receive: `src`/`tag` may be wildcards until the completion says what matched.
    Recv {
        src: i64,
        tag: i64,
        tag_offset: i64,
        buf: Buf,
        at: u64,
    },
}

/// A request known to the converter.
#[derive(Debug, Default)]
struct Req {
    /// What each start replays (persistent requests).
    persistent: Option<Start>,
    /// Operations in flight since the last start.
    active: Option<Vec<Part>>,
}

/// A completed request, as read from a completion call.
#[derive(Debug, Clone, Copy)]
struct Done {
    id: i64,
    source: Option<i64>,
    tag: Option<i64>,
}

/// How a call was handled.
enum Outcome {
    /// Handled (actions written, or nothing to replay); its time is not compute.
    Handled,
    /// Not replayed: its duration is added to the compute burst.
    Fold(Option<Reason>),
    /// Not replayed, duration dropped.
    Discard(Option<Reason>),
}

/// What one rank's conversion produced, besides its file.
struct RankDone {
    actions: u64,
    /// The rank's file, complete.
    file: Staged,
    notes: Notes,
    rank_notes: Vec<String>,
    dropped_bursts: (u64, u64),
}

/// Converts one rank's events into TI lines.
struct Converter {
    rank: u32,
    world: u32,
    flops_per_ns: f64,
    min_compute_ns: u64,
    out: Output,
    /// End of the last event of the main thread (ns since the epoch).
    cursor: u64,
    /// Compute time not yet written.
    pending_ns: u64,
    reqs: HashMap<i64, Req>,
    /// Operations written to SimGrid's request store and not yet completed there.
    outstanding: usize,
    finalized: bool,
    notes: Notes,
    dropped_bursts: (u64, u64),
    /// Classification of each call id met.
    kinds: HashMap<u32, Rc<CallKind>>,
}

/// What a function is, from its name.
struct CallKind {
    family: String,
    nonblocking: bool,
    persistent: bool,
    collective: bool,
}

impl Converter {
    fn new(rank: u32, world: u32, opts: &TiOptions, out: Output) -> Result<Converter, ExportError> {
        let mut c = Converter {
            rank,
            world,
            flops_per_ns: opts.host_speed_flops / 1e9,
            min_compute_ns: opts.min_compute_ns,
            out,
            cursor: 0,
            pending_ns: 0,
            reqs: HashMap::new(),
            outstanding: 0,
            finalized: false,
            notes: BTreeMap::new(),
            dropped_bursts: (0, 0),
            kinds: HashMap::new(),
        };
        c.out.line("init".into())?;
        Ok(c)
    }

    fn note(&mut self, name: &str, reason: Reason, n: u64) {
        let reasons = match self.notes.get_mut(name) {
            Some(r) => r,
            None => self.notes.entry(name.to_owned()).or_default(),
        };
        *reasons.entry(reason).or_default() += n;
    }

    fn me(&self) -> i64 {
        i64::from(self.rank)
    }

    /// A world rank, if `v` is one.
    fn world_rank(&self, v: i64) -> Option<i64> {
        (0..i64::from(self.world)).contains(&v).then_some(v)
    }

    fn flush_compute(&mut self) -> Result<(), ExportError> {
        let ns = std::mem::take(&mut self.pending_ns);
        if ns == 0 {
            return Ok(());
        }
        let flops = fmt_flops(ns as f64 * self.flops_per_ns);
        if ns < self.min_compute_ns || flops == "0" {
            self.dropped_bursts.0 += 1;
            self.dropped_bursts.1 += ns;
            return Ok(());
        }
        self.out.line(format!("compute {flops}"))
    }

    /// Writes an action, after the compute burst that precedes it.
    fn action(&mut self, text: String) -> Result<(), ExportError> {
        self.flush_compute()?;
        self.out.line(text)
    }

    fn event(&mut self, ev: &Event, tables: &Tables) -> Result<(), ExportError> {
        let name = tables.call_name(ev.call);
        if ev.skipped > 0 {
            self.note(&name, Reason::Unrecorded, ev.skipped);
        }
        if ev.thread != 0 {
            self.note(&name, Reason::OtherThread, 1);
            return Ok(());
        }
        if ev.unfinished {
            self.note(&name, Reason::Unfinished, 1);
            return Ok(());
        }
        if self.finalized {
            self.note(&name, Reason::AfterFinalize, 1);
            return Ok(());
        }
        let kind = match self.kinds.get(&ev.call) {
            Some(k) => Rc::clone(k),
            None => {
                let k = Rc::new(CallKind {
                    family: mpiscope_mpispec::family(&name),
                    nonblocking: mpiscope_mpispec::is_nonblocking(&name),
                    persistent: mpiscope_mpispec::is_persistent(&name),
                    collective: mpiscope_mpispec::is_collective(&name),
                });
                self.kinds.insert(ev.call, Rc::clone(&k));
                k
            }
        };
        if kind.family == "init" || kind.family == "init_thread" {
            // What ran before MPI was initialized is not part of the replay.
            self.pending_ns = 0;
        } else {
            self.pending_ns += ev.t_enter.saturating_sub(self.cursor);
        }
        self.cursor = self.cursor.max(ev.t_exit);
        match self.dispatch(ev, tables, &name, &kind)? {
            Outcome::Handled => {}
            Outcome::Fold(reason) => {
                self.pending_ns += ev.duration();
                if let Some(r) = reason {
                    self.note(&name, r, 1);
                }
            }
            Outcome::Discard(reason) => {
                if let Some(r) = reason {
                    self.note(&name, r, 1);
                }
            }
        }
        Ok(())
    }

    fn dispatch(
        &mut self,
        ev: &Event,
        tables: &Tables,
        name: &str,
        kind: &CallKind,
    ) -> Result<Outcome, ExportError> {
        let (fam, nonblocking, persistent) =
            (kind.family.as_str(), kind.nonblocking, kind.persistent);
        let comm = comm_of(ev, tables);
        Ok(match fam {
            "init" | "init_thread" => Outcome::Discard(None),
            "finalize" => {
                self.action("finalize".into())?;
                self.finalized = true;
                Outcome::Handled
            }
            "send" | "ssend" | "bsend" | "rsend" => {
                let start = match self.send_start(ev, comm) {
                    Ok(s) => s,
                    Err(r) => return Ok(Outcome::Fold(Some(r))),
                };
                if persistent {
                    self.define_persistent(ev, start);
                    Outcome::Fold(None)
                } else if nonblocking {
                    self.start(ev.args.get(Slot::Request), &start)?;
                    Outcome::Handled
                } else {
                    match start {
                        Start::Send { dst, tag, buf } => {
                            self.action(format!("send {dst} {tag} {} {}", buf.count, buf.dt))?;
                            Outcome::Handled
                        }
                        _ => Outcome::Discard(Some(Reason::NullPeer)),
                    }
                }
            }
            "recv" | "mrecv" => {
                let start = match self.recv_start(ev, comm, fam == "mrecv") {
                    Ok(s) => s,
                    Err(r) => return Ok(Outcome::Fold(Some(r))),
                };
                if persistent {
                    self.define_persistent(ev, start);
                    Outcome::Fold(None)
                } else if nonblocking {
                    self.start(ev.args.get(Slot::Request), &start)?;
                    Outcome::Handled
                } else {
                    match start {
                        Start::Recv {
                            src,
                            tag,
                            tag_offset,
                            buf,
                        } => {
                            let src = self
                                .resolve_source(src, ev.args.get(Slot::StatusSource))
                                .unwrap_or(SG_ANY_SOURCE);
                            let tag = resolve_tag(tag, ev.args.get(Slot::StatusTag), tag_offset)
                                .unwrap_or(SG_ANY_TAG);
                            self.action(format!("recv {src} {tag} {} {}", buf.count, buf.dt))?;
                            Outcome::Handled
                        }
                        _ => Outcome::Discard(Some(Reason::NullPeer)),
                    }
                }
            }
            "sendrecv" | "sendrecv_replace" => self.sendrecv(ev, comm, nonblocking)?,
            "probe" | "mprobe" | "improbe" => Outcome::Discard(Some(Reason::Probe)),
            "wait" | "waitall" | "waitany" | "waitsome" | "test" | "testall" | "testany"
            | "testsome" | "request_get_status" => self.completion(ev, fam)?,
            "start" => match ev.args.get(Slot::Request) {
                Some(id) => self.start_persistent(id)?,
                None => Outcome::Discard(None),
            },
            "startall" => {
                let ids: Vec<i64> = ev
                    .list(ListKind::Requests)
                    .unwrap_or(&[])
                    .iter()
                    .copied()
                    .filter(|&i| i != 0)
                    .collect();
                let mut outcome = Outcome::Discard(None);
                for id in ids {
                    if let o @ Outcome::Handled = self.start_persistent(id)? {
                        outcome = o;
                    } else {
                        self.note(name, Reason::UnknownRequest, 1);
                    }
                }
                outcome
            }
            "cancel" => self.cancel(ev, name)?,
            "request_free" => self.request_free(ev, name)?,
            _ if kind.collective => {
                let lines = match comm {
                    None => Err(Reason::UnknownComm),
                    Some(c) => self.collective_lines(ev, fam, c),
                };
                let lines = match lines {
                    Ok(l) => l,
                    Err(r) => return Ok(Outcome::Fold(Some(r))),
                };
                if persistent {
                    self.define_persistent(ev, Start::Lines(lines));
                    self.note(name, Reason::AsBlocking, 1);
                    Outcome::Fold(None)
                } else {
                    for l in lines {
                        self.action(l)?;
                    }
                    if nonblocking {
                        self.note(name, Reason::AsBlocking, 1);
                    }
                    Outcome::Handled
                }
            }
            _ => Outcome::Fold(Some(Reason::NoAction)),
        })
    }

    /// The destination side of a send-like call.
    fn send_start(&self, ev: &Event, comm: Option<&CommDef>) -> Result<Start, Reason> {
        let peer = ev.args.get(Slot::Peer).ok_or(Reason::UnknownPeer)?;
        if peer == PEER_NULL {
            return Ok(Start::Nothing);
        }
        let dst = self.world_rank(peer).ok_or(Reason::UnknownPeer)?;
        let buf = send_buf(ev).ok_or(Reason::MissingArgs)?;
        let tag = map_tag(ev.args.get(Slot::Tag).unwrap_or(0), tag_offset(comm));
        Ok(Start::Send { dst, tag, buf })
    }

    /// The source side of a receive-like call (`matched`: `MPI_Mrecv`/`Imrecv`, whose source
    /// and tag are those of the matched message).
    fn recv_start(
        &self,
        ev: &Event,
        comm: Option<&CommDef>,
        matched: bool,
    ) -> Result<Start, Reason> {
        let (src, tag) = if matched {
            (PEER_ANY, TAG_ANY)
        } else {
            (
                ev.args.get(Slot::Peer).ok_or(Reason::UnknownPeer)?,
                ev.args.get(Slot::Tag).unwrap_or(0),
            )
        };
        if src == PEER_NULL {
            return Ok(Start::Nothing);
        }
        if src != PEER_ANY && self.world_rank(src).is_none() {
            return Err(Reason::UnknownPeer);
        }
        let buf = send_buf(ev).ok_or(Reason::MissingArgs)?;
        Ok(Start::Recv {
            src,
            tag,
            tag_offset: tag_offset(comm),
            buf,
        })
    }

    /// The source of a receive: the posted one, or the matched one for a wildcard.
    fn resolve_source(&self, posted: i64, status: Option<i64>) -> Option<i64> {
        if posted == PEER_ANY {
            status.and_then(|s| self.world_rank(s))
        } else {
            Some(posted)
        }
    }

    fn define_persistent(&mut self, ev: &Event, start: Start) {
        if let Some(id) = ev.args.get(Slot::Request) {
            self.reqs.insert(
                id,
                Req {
                    persistent: Some(start),
                    active: None,
                },
            );
        }
    }

    fn start_persistent(&mut self, id: i64) -> Result<Outcome, ExportError> {
        let Some(start) = self.reqs.get(&id).and_then(|r| r.persistent.clone()) else {
            return Ok(Outcome::Discard(Some(Reason::UnknownRequest)));
        };
        self.start(Some(id), &start)?;
        Ok(Outcome::Handled)
    }

    /// Replays the start of a request (`id`: its trace id, when recorded).
    fn start(&mut self, id: Option<i64>, start: &Start) -> Result<(), ExportError> {
        let parts = self.start_parts(id.is_some(), start)?;
        if let Some(id) = id {
            self.reqs.entry(id).or_default().active = Some(parts);
        }
        Ok(())
    }

    /// Writes the start of an operation; returns what its completion must replay
    /// (`tracked`: a completion may come; otherwise receives are written as posted).
    fn start_parts(&mut self, tracked: bool, start: &Start) -> Result<Vec<Part>, ExportError> {
        Ok(match start {
            Start::Send { dst, tag, buf } => {
                self.action(format!("isend {dst} {tag} {} {}", buf.count, buf.dt))?;
                self.outstanding += 1;
                vec![Part::Send {
                    dst: *dst,
                    tag: *tag,
                }]
            }
            Start::Recv {
                src,
                tag,
                tag_offset,
                buf,
            } => {
                let line = |s: i64, t: i64| format!("irecv {s} {t} {} {}", buf.count, buf.dt);
                self.flush_compute()?;
                self.outstanding += 1;
                if tracked {
                    let known = *src != PEER_ANY && *tag != TAG_ANY;
                    let fallback = known.then(|| line(*src, map_tag(*tag, *tag_offset)));
                    let at = self.out.hole(fallback);
                    vec![Part::Recv {
                        src: *src,
                        tag: *tag,
                        tag_offset: *tag_offset,
                        buf: *buf,
                        at,
                    }]
                } else {
                    let s = if *src == PEER_ANY {
                        SG_ANY_SOURCE
                    } else {
                        *src
                    };
                    let t = if *tag == TAG_ANY {
                        SG_ANY_TAG
                    } else {
                        map_tag(*tag, *tag_offset)
                    };
                    self.out.line(line(s, t))?;
                    Vec::new()
                }
            }
            Start::Lines(lines) => {
                for l in lines {
                    self.action(l.clone())?;
                }
                Vec::new()
            }
            Start::Nothing => Vec::new(),
        })
    }

    fn sendrecv(
        &mut self,
        ev: &Event,
        comm: Option<&CommDef>,
        nonblocking: bool,
    ) -> Result<Outcome, ExportError> {
        let replace = ev.args.get(Slot::RecvCount).is_none();
        let send = match self.send_start(ev, comm) {
            Ok(s) => s,
            Err(r) => return Ok(Outcome::Fold(Some(r))),
        };
        let Some(rpeer) = ev.args.get(Slot::RecvPeer) else {
            return Ok(Outcome::Fold(Some(Reason::UnknownPeer)));
        };
        let recv = if rpeer == PEER_NULL {
            Start::Nothing
        } else if rpeer != PEER_ANY && self.world_rank(rpeer).is_none() {
            return Ok(Outcome::Fold(Some(Reason::UnknownPeer)));
        } else {
            let buf = if replace { send_buf(ev) } else { recv_buf(ev) };
            let Some(buf) = buf else {
                return Ok(Outcome::Fold(Some(Reason::MissingArgs)));
            };
            let tag = ev.args.get(Slot::RecvTag).unwrap_or(0);
            Start::Recv {
                src: rpeer,
                tag,
                tag_offset: tag_offset(comm),
                buf,
            }
        };
        if nonblocking {
            // MPI_Isendrecv: both halves under one request.
            let id = ev.args.get(Slot::Request);
            let mut parts = self.start_parts(id.is_some(), &send)?;
            parts.extend(self.start_parts(id.is_some(), &recv)?);
            if let Some(id) = id {
                self.reqs.entry(id).or_default().active = Some(parts);
            }
            return Ok(Outcome::Handled);
        }
        let recv_half = match recv {
            Start::Recv {
                src,
                tag,
                tag_offset,
                buf,
            } => {
                let src = self
                    .resolve_source(src, ev.args.get(Slot::StatusSource))
                    .unwrap_or(SG_ANY_SOURCE);
                let tag = resolve_tag(tag, ev.args.get(Slot::StatusTag), tag_offset)
                    .unwrap_or(SG_ANY_TAG);
                Some((src, tag, buf))
            }
            _ => None,
        };
        match (send, recv_half) {
            (
                Start::Send {
                    dst,
                    tag: 0,
                    buf: sb,
                },
                Some((src, 0, rb)),
            ) if src >= 0 => {
                self.action(format!(
                    "sendRecv {} {dst} {} {src} {} {}",
                    sb.count, rb.count, sb.dt, rb.dt
                ))?;
            }
            (Start::Send { dst, tag, buf: sb }, Some((src, rtag, rb))) => {
                self.action(format!("isend {dst} {tag} {} {}", sb.count, sb.dt))?;
                self.action(format!("recv {src} {rtag} {} {}", rb.count, rb.dt))?;
                self.action(format!("wait {} {dst} {tag}", self.me()))?;
            }
            (Start::Send { dst, tag, buf }, None) => {
                self.action(format!("send {dst} {tag} {} {}", buf.count, buf.dt))?;
            }
            (_, Some((src, tag, buf))) => {
                self.action(format!("recv {src} {tag} {} {}", buf.count, buf.dt))?;
            }
            (_, None) => return Ok(Outcome::Discard(Some(Reason::NullPeer))),
        }
        Ok(Outcome::Handled)
    }

    fn completion(&mut self, ev: &Event, fam: &str) -> Result<Outcome, ExportError> {
        let single = || {
            ev.args.get(Slot::Request).map(|id| Done {
                id,
                source: ev.args.get(Slot::StatusSource),
                tag: ev.args.get(Slot::StatusTag),
            })
        };
        // A successful test: its flag, or the completion data only recorded on success.
        let flagged = ev.args.get(Slot::Flag) == Some(1);
        let done: Vec<Done> = match fam {
            "wait" | "waitany" | "testany" => single().into_iter().collect(),
            "test" | "request_get_status" => {
                let status = ev.args.get(Slot::StatusSource).is_some()
                    || ev.args.get(Slot::StatusBytes).is_some();
                if flagged || status {
                    single().into_iter().collect()
                } else {
                    Vec::new()
                }
            }
            _ => ev
                .list(ListKind::Completions)
                .unwrap_or(&[])
                .chunks_exact(4)
                .map(|c| Done {
                    id: c[0],
                    source: (c[1] != mpiscope_trace::NO_VALUE).then_some(c[1]),
                    tag: (c[2] != mpiscope_trace::NO_VALUE).then_some(c[2]),
                })
                .collect(),
        };
        if done.is_empty() {
            let polling = fam.starts_with("test") || fam == "request_get_status";
            return Ok(Outcome::Discard(polling.then_some(Reason::Waiting)));
        }
        let all = matches!(fam, "waitall" | "testall");
        let array_len = ev.args.get(Slot::ArrayLen);
        self.complete(&done, all.then_some(array_len))?;
        Ok(Outcome::Handled)
    }

    /// Replays the completion of requests; `waitall`: the call completes a whole array
    /// (with its length, when recorded).
    fn complete(&mut self, done: &[Done], waitall: Option<Option<i64>>) -> Result<(), ExportError> {
        let me = self.me();
        let mut waits: Vec<(i64, i64, i64)> = Vec::new();
        for d in done {
            let Some(req) = self.reqs.get_mut(&d.id) else {
                continue;
            };
            let parts = req.active.take().unwrap_or_default();
            if req.persistent.is_none() {
                self.reqs.remove(&d.id);
            }
            for p in parts {
                match p {
                    Part::Send { dst, tag } => waits.push((me, dst, tag)),
                    Part::Recv {
                        src,
                        tag,
                        tag_offset,
                        buf,
                        at,
                    } => {
                        let s = self.resolve_source(src, d.source);
                        let t = resolve_tag(tag, d.tag, tag_offset);
                        match (s, t) {
                            (Some(s), Some(t)) => {
                                self.out.fill(
                                    at,
                                    Some(format!("irecv {s} {t} {} {}", buf.count, buf.dt)),
                                )?;
                                waits.push((s, me, t));
                            }
                            _ => {
                                if self.out.fill(at, None)? {
                                    self.outstanding = self.outstanding.saturating_sub(1);
                                }
                                self.note("MPI_Irecv", Reason::UnresolvedWildcard, 1);
                            }
                        }
                    }
                }
            }
        }
        if waits.is_empty() {
            return Ok(());
        }
        if let Some(len) = waitall {
            if waits.len() == self.outstanding {
                self.outstanding = 0;
                let n = len.unwrap_or(waits.len() as i64);
                return self.action(format!("waitall {n}"));
            }
        }
        for (s, d, t) in waits {
            self.outstanding = self.outstanding.saturating_sub(1);
            self.action(format!("wait {s} {d} {t}"))?;
        }
        Ok(())
    }

    fn cancel(&mut self, ev: &Event, name: &str) -> Result<Outcome, ExportError> {
        let Some(id) = ev.args.get(Slot::Request) else {
            return Ok(Outcome::Discard(None));
        };
        let Some(parts) = self.reqs.get_mut(&id).and_then(|r| r.active.take()) else {
            return Ok(Outcome::Discard(None));
        };
        if self.reqs.get(&id).is_some_and(|r| r.persistent.is_none()) {
            self.reqs.remove(&id);
        }
        for p in parts {
            match p {
                Part::Recv { at, .. } if self.out.fill(at, None)? => {
                    self.outstanding = self.outstanding.saturating_sub(1);
                    self.note(name, Reason::Cancelled, 1);
                }
                _ => self.note(name, Reason::CancelledTooLate, 1),
            }
        }
        Ok(Outcome::Discard(None))
    }

    fn request_free(&mut self, ev: &Event, name: &str) -> Result<Outcome, ExportError> {
        let Some(id) = ev.args.get(Slot::Request) else {
            return Ok(Outcome::Discard(None));
        };
        let Some(req) = self.reqs.remove(&id) else {
            return Ok(Outcome::Discard(None));
        };
        let parts = req.active.unwrap_or_default();
        for p in parts {
            self.note(name, Reason::FreedActive, 1);
            if let Part::Recv {
                src,
                tag,
                tag_offset,
                buf,
                at,
            } = p
            {
                // Its completion will not be seen: written as posted when possible.
                if src != PEER_ANY && tag != TAG_ANY {
                    let line = format!(
                        "irecv {src} {} {} {}",
                        map_tag(tag, tag_offset),
                        buf.count,
                        buf.dt
                    );
                    self.out.fill(at, Some(line))?;
                } else if self.out.fill(at, None)? {
                    self.outstanding = self.outstanding.saturating_sub(1);
                }
            }
        }
        Ok(Outcome::Discard(None))
    }

    /// The TI lines of a collective call, or why it has none.
    fn collective_lines(
        &self,
        ev: &Event,
        fam: &str,
        comm: &CommDef,
    ) -> Result<Vec<String>, Reason> {
        let n = self.world as usize;
        let me = self.rank as usize;
        let perm: Option<&[u32]> = match comm.kind {
            CommKind::World => None,
            CommKind::Inter => return Err(Reason::SubComm),
            _ if comm.size <= 1 => return Err(Reason::SelfComm),
            _ if comm.size as usize == n && comm.ranks.len() == n => Some(&comm.ranks),
            _ => return Err(Reason::SubComm),
        };
        // Per-rank values of the communicator's rank order, in world rank order.
        let world_order = |kind: ListKind| -> Result<Vec<i64>, Reason> {
            let list = ev.list(kind).ok_or(Reason::MissingArgs)?;
            if list.len() != n {
                return Err(Reason::MissingArgs);
            }
            match perm {
                None => Ok(list.to_vec()),
                Some(p) => {
                    let mut v = vec![0; n];
                    for (&w, &x) in p.iter().zip(list) {
                        *v.get_mut(w as usize).ok_or(Reason::MissingArgs)? = x;
                    }
                    Ok(v)
                }
            }
        };
        let root = || -> Result<i64, Reason> {
            ev.args
                .get(Slot::Root)
                .and_then(|r| self.world_rank(r))
                .ok_or(Reason::UnknownRoot)
        };
        let sbuf = send_buf(ev);
        let rbuf = recv_buf(ev);
        let missing = Reason::MissingArgs;
        let line = match fam {
            "barrier" => "barrier".to_owned(),
            "bcast" => {
                let b = sbuf.ok_or(missing)?;
                format!("bcast {} {} {}", b.count, root()?, b.dt)
            }
            "reduce" => {
                let b = sbuf.or(rbuf).ok_or(missing)?;
                format!("reduce {} 0 {} {}", b.count, root()?, b.dt)
            }
            "allreduce" | "scan" | "exscan" => {
                let b = sbuf.or(rbuf).ok_or(missing)?;
                format!("{fam} {} 0 {}", b.count, b.dt)
            }
            "reduce_scatter" => {
                let (counts, dt) = counts_buf(
                    world_order(ListKind::RecvCounts)?,
                    ev.args.get(Slot::DtypeSize),
                )?;
                format!("reducescatter {} 0 {dt}", join(&counts))
            }
            "reduce_scatter_block" => {
                let b = rbuf.ok_or(missing)?;
                format!("reducescatter {} 0 {}", join(&vec![b.count; n]), b.dt)
            }
            "alltoall" | "allgather" => {
                let s = sbuf.or(rbuf).ok_or(missing)?;
                let r = rbuf.unwrap_or(s);
                format!("{fam} {} {} {} {}", s.count, r.count, s.dt, r.dt)
            }
            "gather" | "scatter" => {
                let s = sbuf.or(rbuf).ok_or(missing)?;
                let r = rbuf.unwrap_or(s);
                format!(
                    "{fam} {} {} {} {} {}",
                    s.count,
                    r.count,
                    root()?,
                    s.dt,
                    r.dt
                )
            }
            "gatherv" => {
                let root = root()?;
                let recv = if root as usize == me {
                    Some(counts_buf(
                        world_order(ListKind::RecvCounts)?,
                        ev.args.get(Slot::RecvDtypeSize),
                    )?)
                } else {
                    None
                };
                let s = match (sbuf, &recv) {
                    (Some(b), _) => b,
                    (None, Some((rc, dt))) => Buf {
                        count: *rc.get(me).ok_or(missing)?,
                        dt,
                    },
                    (None, None) => return Err(missing),
                };
                let (rc, rdt) = recv.unwrap_or_else(|| (vec![0; n], s.dt));
                format!("gatherv {} {} {root} {} {rdt}", s.count, join(&rc), s.dt)
            }
            "allgatherv" => {
                let (rc, rdt) = counts_buf(
                    world_order(ListKind::RecvCounts)?,
                    ev.args.get(Slot::RecvDtypeSize),
                )?;
                let s = match sbuf {
                    Some(b) => b,
                    None => Buf {
                        count: *rc.get(me).ok_or(missing)?,
                        dt: rdt,
                    },
                };
                if n < 2 {
                    // With one rank, 3.32 reads two datatypes as displacements: write bytes
                    // of the default datatype (MPI_BYTE) instead.
                    let rbytes: Vec<i64> =
                        rc.iter().map(|&c| c.saturating_mul(dt_size(rdt))).collect();
                    format!("allgatherv {} {}", s.bytes(), join(&rbytes))
                } else {
                    format!("allgatherv {} {} {} {rdt}", s.count, join(&rc), s.dt)
                }
            }
            "scatterv" => {
                let root = root()?;
                let send = if root as usize == me {
                    Some(counts_buf(
                        world_order(ListKind::SendCounts)?,
                        ev.args.get(Slot::DtypeSize),
                    )?)
                } else {
                    None
                };
                let r = match (rbuf, &send) {
                    (Some(b), _) => b,
                    (None, Some((sc, dt))) => Buf {
                        count: *sc.get(me).ok_or(missing)?,
                        dt,
                    },
                    (None, None) => return Err(missing),
                };
                let (sc, sdt) = send.unwrap_or_else(|| (vec![0; n], r.dt));
                format!("scatterv {} {} {root} {sdt} {}", join(&sc), r.count, r.dt)
            }
            "alltoallv" => {
                let (rc, rdt) = counts_buf(
                    world_order(ListKind::RecvCounts)?,
                    ev.args.get(Slot::RecvDtypeSize),
                )?;
                let (sc, sdt) = if ev.list(ListKind::SendCounts).is_some() {
                    counts_buf(
                        world_order(ListKind::SendCounts)?,
                        ev.args.get(Slot::DtypeSize),
                    )?
                } else {
                    (rc.clone(), rdt)
                };
                let (ss, rs): (i64, i64) = (sc.iter().sum(), rc.iter().sum());
                format!(
                    "alltoallv {ss} {} {rs} {} {sdt} {rdt}",
                    join(&sc),
                    join(&rc)
                )
            }
            "alltoallw" => {
                let bytes = |counts: ListKind, sizes: ListKind| -> Result<Vec<i64>, Reason> {
                    let c = world_order(counts)?;
                    let s = world_order(sizes)?;
                    c.iter()
                        .zip(&s)
                        .map(|(&c, &s)| {
                            if c < 0 || s < 0 {
                                None
                            } else {
                                c.checked_mul(s)
                            }
                        })
                        .collect::<Option<Vec<i64>>>()
                        .ok_or(Reason::MissingArgs)
                };
                let rc = bytes(ListKind::RecvCounts, ListKind::RecvTypeSizes)?;
                let sc = if ev.list(ListKind::SendCounts).is_some() {
                    bytes(ListKind::SendCounts, ListKind::SendTypeSizes)?
                } else {
                    rc.clone()
                };
                let (ss, rs): (i64, i64) = (sc.iter().sum(), rc.iter().sum());
                format!(
                    "alltoallv {ss} {} {rs} {} {DT_BYTE} {DT_BYTE}",
                    join(&sc),
                    join(&rc)
                )
            }
            _ => return Err(Reason::NoAction),
        };
        Ok(vec![line])
    }

    fn finish(mut self) -> Result<RankDone, ExportError> {
        let mut rank_notes = Vec::new();
        // Receives whose completion never came.
        let pending: Vec<u64> = self
            .reqs
            .values()
            .flat_map(|r| r.active.iter().flatten())
            .filter_map(|p| match p {
                Part::Recv { at, .. } => Some(*at),
                Part::Send { .. } => None,
            })
            .collect();
        for at in pending {
            if self.out.fill(at, None)? {
                self.note("MPI_Irecv", Reason::PendingAtEnd, 1);
            }
        }
        if !self.finalized {
            rank_notes.push(format!(
                "rank {}: the trace has no MPI_Finalize; a finalize action was added",
                self.rank
            ));
            self.action("finalize".into())?;
        }
        let (actions, file) = self.out.finish()?;
        Ok(RankDone {
            actions,
            file,
            notes: self.notes,
            rank_notes,
            dropped_bursts: self.dropped_bursts,
        })
    }
}

/// The communicator of an event, when recorded and defined.
fn comm_of<'t>(ev: &Event, tables: &'t Tables) -> Option<&'t CommDef> {
    let id = u32::try_from(ev.args.get(Slot::Comm)?).ok()?;
    tables.comms.get(&id)
}

/// The tag offset of point-to-point messages on `comm` (0 on the world communicator).
fn tag_offset(comm: Option<&CommDef>) -> i64 {
    match comm {
        Some(c) if c.kind != CommKind::World => (1 + (c.key % 1000) as i64) * TAG_STRIDE,
        _ => 0,
    }
}

/// A tag moved by a communicator's offset (wildcards and large tags are kept).
fn map_tag(tag: i64, offset: i64) -> i64 {
    if (0..TAG_STRIDE).contains(&tag) {
        tag + offset
    } else {
        tag
    }
}

/// The tag of a receive: the posted one, or the matched one for a wildcard.
fn resolve_tag(posted: i64, status: Option<i64>, offset: i64) -> Option<i64> {
    let t = if posted == TAG_ANY { status? } else { posted };
    Some(map_tag(t, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_text() {
        assert_eq!(fmt_flops(1234.0), "1234");
        assert_eq!(fmt_flops(0.5), "0.5");
        assert_eq!(fmt_flops(2.0 / 3.0), "0.667");
        assert_eq!(fmt_flops(0.0001), "0");
        assert_eq!(fmt_flops(1e12), "1000000000000");
    }

    #[test]
    fn datatypes_by_size() {
        let b = |c, s| Buf::new(c, s).map(|b| (b.count, b.dt));
        assert_eq!(b(10, Some(8)), Some((10, "0")));
        assert_eq!(b(10, Some(4)), Some((10, "1")));
        assert_eq!(b(10, Some(2)), Some((10, "3")));
        assert_eq!(b(10, Some(1)), Some((10, "6")));
        assert_eq!(b(10, Some(16)), Some((10, "26")));
        assert_eq!(b(10, Some(12)), Some((120, "6")));
        assert_eq!(b(10, None), Some((10, "6")));
        assert_eq!(b(-1, Some(8)), None);
        assert_eq!(b(i64::MAX, Some(3)), None);
    }

    #[test]
    fn tags_of_other_communicators_move() {
        assert_eq!(map_tag(7, 0), 7);
        assert_eq!(map_tag(7, 3 * TAG_STRIDE), 3_000_007);
        assert_eq!(map_tag(TAG_STRIDE + 1, 3 * TAG_STRIDE), TAG_STRIDE + 1);
        assert_eq!(resolve_tag(TAG_ANY, Some(4), TAG_STRIDE), Some(1_000_004));
        assert_eq!(resolve_tag(TAG_ANY, None, 0), None);
    }

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

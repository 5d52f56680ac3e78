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
//! * Collectives that move no data are left out, their duration added to compute: Open MPI
//!   and MPICH return from them at once, and SimGrid 3.32 aborts (SIGFPE, a corrupted heap)
//!   or deadlocks on many of them (`bcast 0 0 6` at 2, 3, 8 or 16 ranks, `allreduce 0` at
//!   2-5 ranks, `reduce 0` and `scatter 0` at 4 ranks and more, `gather 0` deadlocks at 4;
//!   `allgatherv` of zeros at 3 ranks). A collective moves no data when its significant
//!   buffer (which MPI's matching type signatures make the same on every rank) has zero
//!   bytes: bcast, reduce, allreduce, scan, exscan, alltoall, allgather, gather, scatter,
//!   reduce_scatter_block; or when every count of a list every rank holds is zero:
//!   allgatherv, reduce_scatter. Gatherv, scatterv, alltoallv and alltoallw keep their zero
//!   counts (one rank cannot tell that the others' are zero too; SimGrid replays them).
//!   Zero-byte point-to-point messages and zero computes are written as they are: SimGrid
//!   replays them.
//! * Collectives of a run of one process are left out the same way: they move nothing
//!   between processes (Open MPI and MPICH copy locally, if anything), and SimGrid 3.32
//!   aborts on some at one rank ("Actor pid=-1 is gone" in `bcast 100 0 6`, as mdrun's
//!   one-rank run broadcasts, and in `reduce` and `allgatherv` of some sizes).
//! * Only thread 0 (the thread that initialized MPI) is replayed: events of other threads
//!   are ignored. Calls after `MPI_Finalize` are ignored.
//!
//! Point-to-point messages on communicators other than `MPI_COMM_WORLD` are replayed on the
//! world communicator with their tag moved by a per-communicator offset (a multiple of
//! 1,000,000 derived from the communicator's identity, which every member shares), so that
//! messages of two communicators between the same processes cannot match each other.
//!
//! # Layout
//!
//! [`export_simgrid_ti`] checks every output path, converts the ranks one after the other
//! (each rank's file is staged, and all are put in place together once every rank is
//! converted), then writes the index. A rank is converted by a `Converter`
//! (`converter.rs`: its state and shared bookkeeping) event by event: `dispatch.rs` routes
//! each call by its function's family to `p2p.rs` (point-to-point starts), `completion.rs`
//! (waits, tests, cancels, frees) or `collective.rs`. Lines go through `output.rs`, a line
//! buffer with holes for receives written once they complete; `values.rs` writes buffers,
//! datatypes, flops and tags as TI does; `reason.rs` names why a call was left out.

mod collective;
mod completion;
mod converter;
mod dispatch;
mod output;
mod p2p;
mod reason;
mod values;

use std::path::{Path, PathBuf};

use mpiscope_files::{AtomicFile, Staged};
use mpiscope_trace::{ReadError, RunDir};

use crate::outputs::{TI_INDEX, TI_RANK};
use crate::ExportError;
use converter::{Converter, RankDone};
use output::Output;
use reason::Notes;

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

/// `--format simgrid-ti`.
pub const FORMAT: crate::Registration = crate::Registration {
    name: "simgrid-ti",
    description: "SimGrid time-independent traces: the directory OUT with OUT/index.txt, for \
                  `smpirun -replay`",
    export: |run, out, options| {
        let ti = TiOptions {
            host_speed_flops: options.host_speed_flops,
            min_compute_ns: options.min_compute_ns,
            force: options.force,
        };
        let s = export_simgrid_ti(run, out, &ti)?;
        Ok(crate::Written {
            message: format!(
                "wrote {} actions for {} ranks to {} (replay: smpirun -replay {}/index.txt ...)",
                s.actions,
                s.ranks,
                out.display(),
                out.display()
            ),
            notes: s.skipped,
            counts: vec![("ranks", u64::from(s.ranks)), ("actions", s.actions)],
        })
    },
};

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
    let out_abs = prepare(out_dir, ranks, opts)?;
    let mut totals = Totals::default();
    let mut files = Vec::with_capacity(ranks as usize);
    let mut staged: Vec<Staged> = Vec::with_capacity(ranks as usize);
    for rank in 0..ranks {
        let out_path = out_abs.join(format!("rank-{rank}.txt"));
        let (done, stop_note) = convert_rank(run, (rank, ranks), &out_path, opts)?;
        totals.rank_notes.extend(stop_note);
        staged.push(totals.add(done));
        files.push(out_path);
    }
    // Every rank converted: the files take their places, then the index.
    for f in staged {
        f.commit()?;
    }
    write_index(&out_abs.join("index.txt"), &files, opts)?;
    Ok(TiSummary {
        ranks,
        actions: totals.actions,
        skipped: totals.skipped(opts),
    })
}

/// Judges everything that would be replaced before anything is written, then creates
/// `out_dir`; returns its absolute path.
fn prepare(out_dir: &Path, ranks: u32, opts: &TiOptions) -> Result<PathBuf, ExportError> {
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
    std::fs::canonicalize(out_dir).map_err(|source| ExportError::Write {
        path: out_dir.to_path_buf(),
        source,
    })
}

/// Converts rank `rank` of the `ranks` of `run` into the (staged) file `out_path`; returns
/// what it produced and, when its trace file stops early, the note that says so.
fn convert_rank(
    run: &RunDir,
    (rank, ranks): (u32, u32),
    out_path: &Path,
    opts: &TiOptions,
) -> Result<(RankDone, Option<String>), ExportError> {
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
    let file = AtomicFile::create_output(out_path, &TI_RANK, opts.force)?;
    let out = Output::new(file, out_path.to_path_buf(), rank);
    let mut conv = Converter::new(
        (rank, ranks),
        opts.host_speed_flops,
        opts.min_compute_ns,
        out,
    )?;
    while let Some(ev) = reader.next_event() {
        conv.event(&ev, reader.tables())?;
    }
    let stop_note = match reader.stopped() {
        Some(ReadError::Io { path, error }) => {
            let error = std::io::Error::new(error.kind(), error.to_string());
            return Err(ExportError::Read(ReadError::Io {
                path: path.clone(),
                error,
            }));
        }
        Some(e) => Some(format!(
            "rank {rank}: {e}; the events after this point are missing, so the replay may deadlock"
        )),
        None => None,
    };
    Ok((conv.finish()?, stop_note))
}

/// Writes the index: the rank files' absolute paths, one a line, in rank order.
fn write_index(index_path: &Path, files: &[PathBuf], opts: &TiOptions) -> Result<(), ExportError> {
    let mut index = String::new();
    for f in files {
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
    mpiscope_files::write_output(index_path, &TI_INDEX, opts.force, index.as_bytes())?;
    Ok(())
}

/// What the ranks' conversions add up to.
#[derive(Default)]
struct Totals {
    /// Lines written.
    actions: u64,
    /// Calls not replayed as such, over all ranks.
    notes: Notes,
    /// Problems of particular ranks, in rank order.
    rank_notes: Vec<String>,
    /// Compute bursts dropped: how many, and their nanoseconds.
    dropped_bursts: (u64, u64),
}

impl Totals {
    /// Adds a rank's conversion; returns its staged file.
    fn add(&mut self, done: RankDone) -> Staged {
        self.actions += done.actions;
        self.dropped_bursts.0 += done.dropped_bursts.0;
        self.dropped_bursts.1 += done.dropped_bursts.1;
        for (name, reasons) in done.notes {
            let entry = self.notes.entry(name).or_default();
            for (reason, n) in reasons {
                *entry.entry(reason).or_default() += n;
            }
        }
        self.rank_notes.extend(done.rank_notes);
        done.file
    }

    /// The notes of [`TiSummary::skipped`]: per function and reason, then dropped bursts,
    /// then the ranks' own.
    fn skipped(self, opts: &TiOptions) -> Vec<String> {
        let mut skipped: Vec<String> = self
            .notes
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
        if self.dropped_bursts.0 > 0 {
            skipped.push(format!(
                "compute bursts shorter than {} ns: {} dropped ({} ns in all)",
                opts.min_compute_ns, self.dropped_bursts.0, self.dropped_bursts.1
            ));
        }
        skipped.extend(self.rank_notes);
        skipped
    }
}

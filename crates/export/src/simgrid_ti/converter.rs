//! The state of one rank's conversion: the [`Converter`], what it keeps about requests
//! ([`Start`], [`Part`], [`Req`]), and the bookkeeping every kind of call shares (compute
//! bursts, notes, world ranks).
//!
//! The methods that turn calls into lines live beside it, one file per concern:
//! `dispatch.rs` routes each event by its function's family to `p2p.rs` (point-to-point
//! starts, persistent requests, send-receives), `completion.rs` (waits, tests, cancels,
//! frees) and `collective.rs`; those three use only this module, the reasons and the value
//! helpers.
//!
//! Compute: the time on the main thread between two calls, plus the duration of calls that
//! are not replayed but folded into compute, accumulates in `pending_ns`; it is written as
//! one `compute` line just before the next action ([`Converter::action`]).

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use mpiscope_files::Staged;
use mpiscope_mpispec::Family;
use mpiscope_trace::{Event, Slot, PEER_ANY};

use super::output::Output;
use super::reason::{Notes, Reason};
use super::values::{fmt_flops, Buf};
use crate::ExportError;

/// What starting a request replays.
#[derive(Debug, Clone)]
pub(super) enum Start {
    /// An `isend` (or, blocking, a `send`).
    Send {
        /// World rank of the destination.
        dst: i64,
        /// Tag, moved by the communicator's offset.
        tag: i64,
        /// What is sent.
        buf: Buf,
    },
    /// An `irecv` (or, blocking, a `recv`).
    Recv {
        /// World rank of the source, or `PEER_ANY`.
        src: i64,
        /// Tag as posted (`TAG_ANY` possible), not yet moved.
        tag: i64,
        /// The communicator's tag offset.
        tag_offset: i64,
        /// What is received.
        buf: Buf,
    },
    /// The lines of a collective.
    Lines(Vec<String>),
    /// Nothing (a peer is `MPI_PROC_NULL`).
    Nothing,
}

/// One operation of an active request that sits in SimGrid's request store.
#[derive(Debug, Clone)]
pub(super) enum Part {
    /// A send: its `wait` names this rank, `dst` and `tag`.
    Send {
        /// World rank of the destination.
        dst: i64,
        /// Tag, moved by the communicator's offset.
        tag: i64,
    },
    /// A receive: `src`/`tag` may be wildcards until the completion says what matched.
    Recv {
        /// World rank of the source, or `PEER_ANY`.
        src: i64,
        /// Tag as posted.
        tag: i64,
        /// The communicator's tag offset.
        tag_offset: i64,
        /// What is received.
        buf: Buf,
        /// The place of its `irecv` line in the output.
        at: u64,
    },
}

/// A request known to the converter.
#[derive(Debug, Default)]
pub(super) struct Req {
    /// What each start replays (persistent requests).
    pub(super) persistent: Option<Start>,
    /// Operations in flight since the last start.
    pub(super) active: Option<Vec<Part>>,
}

/// How a call was handled.
pub(super) enum Outcome {
    /// Handled (actions written, or nothing to replay); its time is not compute.
    Handled,
    /// Not replayed: its duration is added to the compute burst.
    Fold(Option<Reason>),
    /// Not replayed, duration dropped.
    Discard(Option<Reason>),
}

/// What one rank's conversion produced, besides its file.
pub(super) struct RankDone {
    /// Lines written.
    pub(super) actions: u64,
    /// The rank's file, complete.
    pub(super) file: Staged,
    /// Calls not replayed as such.
    pub(super) notes: Notes,
    /// Problems of this rank as a whole.
    pub(super) rank_notes: Vec<String>,
    /// Compute bursts dropped: how many, and their nanoseconds.
    pub(super) dropped_bursts: (u64, u64),
}

/// What a function is, from its name.
pub(super) struct CallKind {
    /// Its family (`Family::of`): `Send` for `MPI_Isend`, ...
    pub(super) family: Family,
    /// A non-blocking call.
    pub(super) nonblocking: bool,
    /// A persistent request's creation.
    pub(super) persistent: bool,
    /// A collective.
    pub(super) collective: bool,
}

/// Converts one rank's events into TI lines.
pub(super) struct Converter {
    pub(super) rank: u32,
    pub(super) world: u32,
    flops_per_ns: f64,
    min_compute_ns: u64,
    pub(super) out: Output,
    /// End of the last event of the main thread (ns since the epoch).
    pub(super) cursor: u64,
    /// Compute time not yet written.
    pub(super) pending_ns: u64,
    pub(super) reqs: HashMap<i64, Req>,
    /// Operations written to SimGrid's request store and not yet completed there.
    pub(super) outstanding: usize,
    pub(super) finalized: bool,
    notes: Notes,
    dropped_bursts: (u64, u64),
    /// Classification of each call id met.
    pub(super) kinds: HashMap<u32, Rc<CallKind>>,
}

impl Converter {
    /// The converter of `rank` of `world` ranks, writing compute bursts at
    /// `host_speed_flops` and dropping those shorter than `min_compute_ns`; writes the
    /// `init` line.
    pub(super) fn new(
        (rank, world): (u32, u32),
        host_speed_flops: f64,
        min_compute_ns: u64,
        out: Output,
    ) -> Result<Converter, ExportError> {
        let mut c = Converter {
            rank,
            world,
            flops_per_ns: host_speed_flops / 1e9,
            min_compute_ns,
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

    /// Counts `n` calls of `name` not replayed as such, for `reason`.
    pub(super) fn note(&mut self, name: &str, reason: Reason, n: u64) {
        let reasons = match self.notes.get_mut(name) {
            Some(r) => r,
            None => self.notes.entry(name.to_owned()).or_default(),
        };
        *reasons.entry(reason).or_default() += n;
    }

    /// This rank, as TI lines write it.
    pub(super) fn me(&self) -> i64 {
        i64::from(self.rank)
    }

    /// A world rank, if `v` is one.
    pub(super) fn world_rank(&self, v: i64) -> Option<i64> {
        (0..i64::from(self.world)).contains(&v).then_some(v)
    }

    /// The source of a receive: the posted one, or the matched one for a wildcard.
    pub(super) fn resolve_source(&self, posted: i64, status: Option<i64>) -> Option<i64> {
        if posted == PEER_ANY {
            status.and_then(|s| self.world_rank(s))
        } else {
            Some(posted)
        }
    }

    /// Writes the pending compute burst (or drops it, when too short).
    pub(super) fn flush_compute(&mut self) -> Result<(), ExportError> {
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
    pub(super) fn action(&mut self, text: String) -> Result<(), ExportError> {
        self.flush_compute()?;
        self.out.line(text)
    }

    /// Remembers what each start of the persistent request `ev` creates replays.
    pub(super) fn define_persistent(&mut self, ev: &Event, start: Start) {
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

    /// Ends the rank: receives never completed are left out, a missing `finalize` is
    /// added, and the file is closed.
    pub(super) fn finish(mut self) -> Result<RankDone, ExportError> {
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

//! OTF2 archives (Score-P's format, read by Vampir, Scalasca, `otf2-print`), written with
//! Debian's libotf2 (`libopen-trace-format2-10`, OTF2 3.0), opened at run time (`ffi.rs`):
//! without it, this export alone fails, with a message that says what to install.
//!
//! One location group (process) per rank, one location per thread that made MPI calls, one
//! region per MPI function and call site (the calling source file and line when the call
//! site resolves, through `mpiscope_analyze::symbols`; its role Score-P's: point-to-point, barrier, one-to-all,
//! all-to-one, all-to-all collective, or function; paradigm MPI), one communicator per
//! communicator the trace defines (`comms.rs`). Each call is an `Enter` and a `Leave`;
//! around a blocking collective's work, `MpiCollectiveBegin` and `MpiCollectiveEnd` (its
//! operation, communicator, root, and the bytes `mpiscope_analyze::volume` credits it
//! with: `collective.rs`); each point-to-point message paired by
//! `mpiscope_analyze::messages` is an `MpiSend` or `MpiIsend` (with its request) inside
//! the send call and an `MpiRecv`, or an `MpiIrecv` after the `MpiIrecvRequest` of its
//! `Irecv`, inside the call that completed the receive (`events.rs`). Timestamps are the
//! trace's nanoseconds.
//! Ranks are written one after the other; each rank's event writers are closed before the
//! next rank is read, so memory does not grow with the trace.
//!
//! The archive is written in the order OTF2 requires (`write_archive`): the events of
//! every location first (which also numbers the regions, in order of first call, and counts
//! each location's events), then each location's local definitions (none: every id is
//! global), then the global definitions, whose string table is built first so that every
//! definition refers to strings already written (`defs.rs`). The C interface is declared
//! in `ffi.rs`; its handles are wrapped in `archive.rs` (`Archive`, `EvtWriter`,
//! `GlobalDefs`) so that the steps themselves are safe code.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use mpiscope_analyze::messages::RankWalk;
use mpiscope_analyze::symbols::{callsite_frames, Symbolizer};
use mpiscope_trace::{CommKind, Event, RankReader, RunDir, Slot, Tables};

use crate::ExportError;

mod archive;
mod collective;
mod comms;
mod defs;
mod events;
mod ffi;
mod seen;

use archive::{Archive, EvtWriter};
use comms::{Comms, RankComms};
use events::{Call, Collective, RequestKind, Requests};
use seen::{location, RegionKey, Seen};

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Otf2Summary {
    /// Ranks (location groups).
    pub ranks: u32,
    /// Locations (threads).
    pub locations: u32,
    /// Events (enters, leaves, message events).
    pub events: u64,
    /// `MpiSend` and `MpiIsend` events.
    pub sends: u64,
    /// `MpiRecv` and `MpiIrecv` events.
    pub receives: u64,
    /// `MpiCollectiveEnd` events (as many begins) and `NonBlockingCollectiveComplete`
    /// events (as many requests).
    pub collectives: u64,
    /// Communicators defined.
    pub comms: u32,
}

/// `--format otf2`.
pub const FORMAT: crate::Registration = crate::Registration {
    name: "otf2",
    description: "the OTF2 archive OUT/traces.otf2 (Vampir, Scalasca)",
    export: |run, out, options| {
        let s = export_otf2(run, out, options.force)?;
        Ok(crate::Written {
            message: format!(
                "wrote {} events ({} sends, {} receives, {} collectives) of {} ranks, {} locations, \
                 {} communicators to {}/traces.otf2",
                s.events,
                s.sends,
                s.receives,
                s.collectives,
                s.ranks,
                s.locations,
                s.comms,
                out.display()
            ),
            notes: Vec::new(),
            counts: vec![
                ("ranks", u64::from(s.ranks)),
                ("locations", u64::from(s.locations)),
                ("communicators", u64::from(s.comms)),
                ("events", s.events),
                ("sends", s.sends),
                ("receives", s.receives),
                ("collectives", s.collectives),
            ],
        })
    },
};

/// Writes `run` as the OTF2 archive `out/traces.otf2` (with `out/traces.def` and
/// `out/traces/`). The archive is written in a private directory inside `out` and moved
/// into place when complete; an earlier archive is replaced only when mpiscope wrote it
/// (its creator), or with `force` (see [`crate::outputs`]).
pub fn export_otf2(run: &RunDir, out: &Path, force: bool) -> Result<Otf2Summary, ExportError> {
    if run.rank_files.is_empty() {
        return Err(ExportError::NoRanks {
            path: run.path.clone(),
        });
    }
    crate::outputs::check(out, force)?;
    // Before anything is made in `out`: without libotf2 the export leaves no trace.
    let lib = ffi::otf2()?;
    let staging = crate::outputs::staging(out)?;
    let sum = write_archive(lib, run, staging.path(), out)?;
    crate::outputs::put_in_place(staging, out)?;
    Ok(sum)
}

/// Writes the archive `traces` into `dir`, in OTF2's order: the events, rank by rank, then
/// the (empty) local definitions of every location, then the global definitions. Errors
/// name `out`.
fn write_archive(
    lib: &'static ffi::Otf2,
    run: &RunDir,
    dir: &Path,
    out: &Path,
) -> Result<Otf2Summary, ExportError> {
    let a = Archive::open(lib, dir, out)?;
    let mut sum = Otf2Summary::default();
    let mut seen = Seen {
        regions: BTreeMap::new(),
        locations: BTreeMap::new(),
        hosts: Vec::new(),
        first: u64::MAX,
        last: 0,
        comms: Comms::new(),
    };
    let mut symbols = Symbolizer::new();
    for (rank, file) in &run.rank_files {
        write_rank_events(&a, *rank, file, &mut seen, &mut symbols, &mut sum)?;
        sum.ranks += 1;
    }
    close_local_definitions(&a, &seen)?;
    defs::write_global_definitions(&a, run, &seen)?;
    sum.comms = seen.comms.list.len() as u32;
    sum.locations = seen.locations.len() as u32;
    drop(a);
    Ok(sum)
}

/// Writes the events of `rank` (its trace `file`): each call's `Enter` and `Leave`, and
/// the message events between; one event writer per thread, closed at the end.
fn write_rank_events(
    a: &Archive,
    rank: u32,
    file: &Path,
    seen: &mut Seen,
    symbols: &mut Symbolizer,
    sum: &mut Otf2Summary,
) -> Result<(), ExportError> {
    let mut reader = mpiscope_trace::RankReader::open(file)?;
    seen.hosts
        .push(reader.info().map(|i| i.host.clone()).unwrap_or_default());
    let mut walk = RankWalk::new(rank);
    let mut writers: HashMap<u16, EvtWriter> = HashMap::new();
    let mut funcs: HashMap<u32, Function> = HashMap::new();
    let mut rank_comms = RankComms::default();
    // Region of each (call, call site) of this rank.
    let mut regions: HashMap<(u32, u32), u32> = HashMap::new();
    let mut requests = Requests::default();
    let mut items = Vec::new();
    while let Some(ev) = reader.next_event() {
        let f = funcs
            .entry(ev.call)
            .or_insert_with(|| Function::of(&reader.tables().call_name(ev.call)))
            .clone();
        let region = match regions.entry((ev.call, ev.callsite)) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let key = RegionKey {
                    function: f.name.clone(),
                    site: site(symbols, reader.tables(), ev.callsite),
                };
                let next = seen.regions.len() as u32;
                *e.insert(*seen.regions.entry(key).or_insert(next))
            }
        };
        let loc = location(rank, ev.thread);
        let w = match writers.entry(ev.thread) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(a.evt_writer(loc)?),
        };
        let exit = ev.t_exit.max(ev.t_enter);
        seen.first = seen.first.min(ev.t_enter);
        seen.last = seen.last.max(exit);
        items.clear();
        walk.items(&reader, &f.name, &ev, &mut items);
        let comm = ev
            .args
            .get(Slot::Comm)
            .and_then(|c| rank_comms.global(c as u32, &reader.tables().comms, &mut seen.comms));
        let collective =
            f.op.map(|op| collective_end(&reader, &f.name, op, &ev, rank, comm, &seen.comms));
        // As for the message walk, a request on an unknown communicator is not followed.
        let kind = match f.kind {
            RequestKind::PostsRecv
            | RequestKind::Persistent { .. }
            | RequestKind::StartsCollective
                if comm.is_none() =>
            {
                RequestKind::None
            }
            k => k,
        };
        let call = Call {
            enter: ev.t_enter,
            exit,
            region,
            ev: &ev,
            kind,
            collective: collective.filter(|_| kind != RequestKind::None || f.blocking_op),
        };
        let n = events::write_call(a, w, &call, &items, &seen.comms, &mut requests, sum)?;
        *seen.locations.entry(loc).or_insert(0) += n;
        sum.events += n;
    }
    for (_, w) in writers {
        a.close_evt_writer(w)?;
    }
    Ok(())
}

/// The source file and line of `callsite` (its innermost frame), when its module's debug
/// information says.
fn site(symbols: &mut Symbolizer, tables: &Tables, callsite: u32) -> Option<(String, u32)> {
    let (path, offset) = callsite_frames(tables, callsite).into_iter().next()?;
    if path.is_empty() {
        return None;
    }
    let loc = symbols.resolve(&path, offset)?;
    Some((loc.file?, loc.line?))
}

/// What the export needs to know of an MPI function, classified once per rank.
#[derive(Clone)]
struct Function {
    name: String,
    /// The collective operation of a collective, blocking or not.
    op: Option<u8>,
    /// A blocking collective (`op` is its `MpiCollectiveEnd`'s).
    blocking_op: bool,
    /// What its calls do to requests.
    kind: RequestKind,
}

impl Function {
    fn of(name: &str) -> Function {
        use mpiscope_mpispec::{Family, Group};
        let c = mpiscope_mpispec::classify(name);
        let p2p = c.group == Group::P2p;
        let f = c.family;
        let nonblocking_op = collective::nonblocking_op(name);
        let kind = if f.is_wait() || f.is_test() {
            RequestKind::Completes
        } else if matches!(f, Family::Start | Family::Startall) {
            RequestKind::Starts
        } else if nonblocking_op.is_some() {
            RequestKind::StartsCollective
        } else if p2p && c.persistent {
            RequestKind::Persistent {
                send: !matches!(f, Family::Recv | Family::Precv),
            }
        } else if p2p && c.nonblocking && matches!(f, Family::Recv | Family::Mrecv) {
            RequestKind::PostsRecv
        } else {
            RequestKind::None
        };
        let blocking_op = collective::op(name);
        Function {
            name: name.to_owned(),
            op: blocking_op.or(nonblocking_op),
            blocking_op: blocking_op.is_some(),
            kind,
        }
    }
}

/// The `MpiCollectiveEnd` of `ev`, a collective `op` of function `name` made by
/// world rank `rank` on communicator `comm` (global id; world when unknown): its root as a
/// rank of the communicator and the bytes the call moved (`mpiscope_analyze::volume`).
fn collective_end<R: std::io::Read>(
    reader: &RankReader<R>,
    name: &str,
    op: u8,
    ev: &Event,
    rank: u32,
    comm: Option<u32>,
    comms: &Comms,
) -> Collective {
    let def = ev
        .args
        .get(Slot::Comm)
        .and_then(|c| reader.tables().comms.get(&(c as u32)));
    let peers = def.map_or(1, |d| match d.kind {
        CommKind::Inter => d.remote.len() as u32,
        _ => d.size,
    });
    let v = mpiscope_analyze::volume::volume(name, ev, rank, peers);
    let comm = comm.unwrap_or(0);
    let root = match ev.args.get(Slot::Root) {
        // An intercommunicator's root side: MPI_ROOT at the root, MPI_PROC_NULL at the
        // others of its group.
        Some(mpiscope_trace::PEER_ROOT) => ffi::COLLECTIVE_ROOT_SELF,
        Some(mpiscope_trace::PEER_NULL) => ffi::COLLECTIVE_ROOT_THIS_GROUP,
        Some(r) if r >= 0 => comms
            .local_rank(comm, r as u32)
            .unwrap_or(ffi::UNDEFINED_U32),
        _ => ffi::UNDEFINED_U32,
    };
    Collective {
        op,
        comm,
        root,
        sent: v.sent,
        received: v.received,
    }
}

/// Closes the event files and writes every location's (empty) local definitions.
fn close_local_definitions(a: &Archive, seen: &Seen) -> Result<(), ExportError> {
    let lib = a.lib;
    // SAFETY: the archive is open; every def writer is closed right after it is made.
    unsafe {
        a.check(
            (lib.OTF2_Archive_CloseEvtFiles)(a.ptr),
            "closing event files",
        )?;
        a.check(
            (lib.OTF2_Archive_OpenDefFiles)(a.ptr),
            "opening definition files",
        )?;
        for &loc in seen.locations.keys() {
            let d = (lib.OTF2_Archive_GetDefWriter)(a.ptr, loc);
            if !d.is_null() {
                a.check(
                    (lib.OTF2_Archive_CloseDefWriter)(a.ptr, d),
                    "closing a definition writer",
                )?;
            }
        }
        a.check(
            (lib.OTF2_Archive_CloseDefFiles)(a.ptr),
            "closing definition files",
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_ids() {
        assert_eq!(location(3, 0), 3);
        assert_eq!(location(3, 1), (1 << 32) | 3);
        assert_eq!(seen::rank_thread(location(70_000, 2)), (70_000, 2));
    }
}

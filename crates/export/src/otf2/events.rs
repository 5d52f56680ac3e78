//! One call as OTF2 events: `Enter`; the point-to-point events of the messages it started
//! or completed (`MpiSend`/`MpiRecv` for blocking calls; `MpiIsend` and `MpiIrecvRequest`
//! when a call starts a request, a non-blocking send or receive or a `Start` of persistent
//! ones, then `MpiIsendComplete` and `MpiIrecv` in the `Wait` or `Test` that completes it,
//! with the trace's request id); `MpiCollectiveBegin` and `MpiCollectiveEnd` around a
//! blocking collective's work; `NonBlockingCollectiveRequest` in a non-blocking
//! collective and `NonBlockingCollectiveComplete` (its operation, communicator, root and
//! bytes) in the call that completes it; `Leave`.
//!
//! Peers and roots are written as ranks of the message's communicator (its global id; for
//! an intercommunicator, ranks of the remote group); when the trace does not say which
//! communicator, the event is written on `MPI_COMM_WORLD` with the world rank.

use std::collections::{HashMap, HashSet};

use mpiscope_analyze::messages::{Item, MessageKey};
use mpiscope_trace::{Event, ListKind, Slot};

use super::archive::{Archive, EvtWriter};
use super::comms::Comms;
use super::Otf2Summary;
use crate::ExportError;

/// A collective's `MpiCollectiveEnd` (or `NonBlockingCollectiveComplete`) fields.
#[derive(Debug, Clone, Copy)]
pub(super) struct Collective {
    pub(super) op: u8,
    pub(super) comm: u32,
    /// Rank of the root in `comm`, or OTF2's undefined.
    pub(super) root: u32,
    pub(super) sent: u64,
    pub(super) received: u64,
}

/// One call as OTF2 events: its region, times and what it does to requests.
pub(super) struct Call<'e> {
    pub(super) enter: u64,
    /// Not before `enter`.
    pub(super) exit: u64,
    pub(super) region: u32,
    pub(super) ev: &'e mpiscope_trace::Event,
    /// What the call does to requests.
    pub(super) kind: RequestKind,
    /// A blocking collective's end, or a non-blocking collective's completion.
    pub(super) collective: Option<Collective>,
}

/// What a call does to requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RequestKind {
    /// Nothing.
    None,
    /// Posts a receive (`Irecv`, `Imrecv`).
    PostsRecv,
    /// Makes a persistent point-to-point request, a send or a receive.
    Persistent { send: bool },
    /// Starts persistent requests (`Start`, `Startall`).
    Starts,
    /// Starts a non-blocking collective.
    StartsCollective,
    /// Completes requests (`Wait*`, `Test*`).
    Completes,
}

/// A rank's requests between the call that starts them and the one that completes them.
#[derive(Default)]
pub(super) struct Requests {
    sends: HashSet<i64>,
    recvs: HashSet<i64>,
    collectives: HashMap<i64, Collective>,
    /// Persistent point-to-point requests: is it a send?
    persistent: HashMap<i64, bool>,
}

/// The requests a completion call completed, in the order it lists them (a `Test` that
/// found its request unfinished records it with a zero flag).
fn completed(ev: &Event) -> Vec<i64> {
    let a = &ev.args;
    let mut done: Vec<i64> = a
        .get(Slot::Request)
        .filter(|_| a.get(Slot::Flag) != Some(0))
        .into_iter()
        .collect();
    if let Some(list) = ev.list(ListKind::Completions) {
        done.extend(list.chunks_exact(4).map(|c| c[0]));
    }
    done
}

/// Where a message's peer is written: (communicator, rank in it).
fn peer(comms: &Comms, key: &MessageKey, world: u32) -> (u32, u32) {
    match comms.by_key(key.comm) {
        Some(id) => match comms.local_rank(id, world) {
            Some(r) => (id, r),
            None => (0, world),
        },
        None => (0, world),
    }
}

/// Writes one call; returns the number of events written.
pub(super) fn write_call(
    a: &Archive,
    w: &EvtWriter,
    call: &Call,
    items: &[Item],
    comms: &Comms,
    requests: &mut Requests,
    sum: &mut Otf2Summary,
) -> Result<u64, ExportError> {
    let mut n = 2u64;
    let (lib, w) = (a.lib, w.0);
    let null = std::ptr::null_mut();
    let request = call.ev.args.get(Slot::Request);
    // Receives posted by this call.
    let posted: Vec<i64> = match call.kind {
        RequestKind::PostsRecv => request.into_iter().collect(),
        RequestKind::Starts => call
            .ev
            .requests()
            .into_iter()
            .filter(|id| requests.persistent.get(id) == Some(&false))
            .collect(),
        RequestKind::Persistent { send } => {
            requests.persistent.extend(request.map(|id| (id, send)));
            Vec::new()
        }
        _ => Vec::new(),
    };
    let done = match call.kind {
        RequestKind::Completes => completed(call.ev),
        _ => Vec::new(),
    };
    // SAFETY: `w` is a live writer of `a`; timestamps are non-decreasing within the call
    // (enter <= message events <= exit).
    unsafe {
        a.check(
            (lib.OTF2_EvtWriter_Enter)(w, null, call.enter, call.region),
            "enter",
        )?;
        let blocking_collective = call.collective.filter(|_| call.kind == RequestKind::None);
        if blocking_collective.is_some() {
            a.check(
                (lib.OTF2_EvtWriter_MpiCollectiveBegin)(w, null, call.enter),
                "collective begin",
            )?;
            n += 1;
        }
        if let (RequestKind::StartsCollective, Some(c), Some(id)) =
            (call.kind, call.collective, request)
        {
            a.check(
                (lib.OTF2_EvtWriter_NonBlockingCollectiveRequest)(w, null, call.enter, id as u64),
                "non-blocking collective request",
            )?;
            requests.collectives.insert(id, c);
            n += 1;
        }
        for id in posted {
            a.check(
                (lib.OTF2_EvtWriter_MpiIrecvRequest)(w, null, call.enter, id as u64),
                "receive request",
            )?;
            requests.recvs.insert(id);
            n += 1;
        }
        for it in items {
            n += message(a, w, call, it, comms, requests, sum)?;
        }
        for id in done {
            if requests.sends.remove(&id) {
                a.check(
                    (lib.OTF2_EvtWriter_MpiIsendComplete)(w, null, call.exit, id as u64),
                    "isend complete",
                )?;
                n += 1;
            } else if let Some(c) = requests.collectives.remove(&id) {
                a.check(
                    (lib.OTF2_EvtWriter_NonBlockingCollectiveComplete)(
                        w, null, call.exit, c.op, c.comm, c.root, c.sent, c.received, id as u64,
                    ),
                    "non-blocking collective complete",
                )?;
                sum.collectives += 1;
                n += 1;
            }
        }
        if let Some(c) = blocking_collective {
            a.check(
                (lib.OTF2_EvtWriter_MpiCollectiveEnd)(
                    w, null, call.exit, c.op, c.comm, c.root, c.sent, c.received,
                ),
                "collective end",
            )?;
            sum.collectives += 1;
            n += 1;
        }
        a.check(
            (lib.OTF2_EvtWriter_Leave)(w, null, call.exit, call.region),
            "leave",
        )?;
    }
    Ok(n)
}

/// Writes the point-to-point event of one message end of `call`; returns the number of
/// events written (0 or 1).
fn message(
    a: &Archive,
    w: *mut std::ffi::c_void,
    call: &Call,
    it: &Item,
    comms: &Comms,
    requests: &mut Requests,
    sum: &mut Otf2Summary,
) -> Result<u64, ExportError> {
    let (lib, null) = (a.lib, std::ptr::null_mut());
    // SAFETY: as in `write_call`, whose live writer `w` is.
    unsafe {
        match it {
            Item::Send {
                key,
                bytes,
                request,
                ..
            } => {
                let (comm, to) = peer(comms, key, key.to);
                let tag = key.tag as u32;
                match request {
                    Some(id) => {
                        a.check(
                            (lib.OTF2_EvtWriter_MpiIsend)(
                                w, null, call.enter, to, comm, tag, *bytes, *id as u64,
                            ),
                            "isend",
                        )?;
                        requests.sends.insert(*id);
                    }
                    None => a.check(
                        (lib.OTF2_EvtWriter_MpiSend)(w, null, call.enter, to, comm, tag, *bytes),
                        "send",
                    )?,
                }
                sum.sends += 1;
                Ok(1)
            }
            Item::Recv {
                key,
                bytes,
                request,
                ..
            } => {
                let (comm, from) = peer(comms, key, key.from);
                let tag = key.tag as u32;
                let code = match request.filter(|id| requests.recvs.remove(id)) {
                    Some(id) => (lib.OTF2_EvtWriter_MpiIrecv)(
                        w, null, call.exit, from, comm, tag, *bytes, id as u64,
                    ),
                    None => {
                        (lib.OTF2_EvtWriter_MpiRecv)(w, null, call.exit, from, comm, tag, *bytes)
                    }
                };
                a.check(code, "receive")?;
                sum.receives += 1;
                Ok(1)
            }
            Item::Call { .. } => Ok(0),
        }
    }
}

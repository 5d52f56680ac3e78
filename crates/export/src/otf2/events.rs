//! One call as OTF2 events: `Enter`; the point-to-point events of the messages it started
//! or completed (`MpiSend`/`MpiRecv` for blocking calls, `MpiIsend`/`MpiIrecvRequest` when
//! a non-blocking call starts a request and `MpiIsendComplete`/`MpiIrecv` in the `Wait` or
//! `Test` that completes it, with the trace's request id); `MpiCollectiveBegin` and
//! `MpiCollectiveEnd` around a blocking collective's work; `Leave`.
//!
//! Peers and roots are written as ranks of the message's communicator (its global id);
//! when the trace does not say which communicator, or the peer is not a member (an
//! intercommunicator's remote group), the event is written on `MPI_COMM_WORLD` with the
//! world rank.

use std::collections::HashSet;

use mpiscope_analyze::messages::{Item, MessageKey};
use mpiscope_trace::{Event, ListKind, Slot, NO_VALUE};

use super::archive::{Archive, EvtWriter};
use super::comms::Comms;
use super::Otf2Summary;
use crate::ExportError;

/// A blocking collective's `MpiCollectiveEnd` fields.
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
    /// The call starts a request (a non-blocking send or receive).
    pub(super) starts_request: bool,
    /// The call completes requests (`Wait*`, `Test*`).
    pub(super) completes: bool,
    pub(super) collective: Option<Collective>,
}

/// A rank's requests between the call that starts them and the one that completes them.
#[derive(Default)]
pub(super) struct Requests {
    sends: HashSet<i64>,
    recvs: HashSet<i64>,
}

/// The requests a completion call completed: (request, source, tag), in the order the
/// message walk reads them.
fn completed(ev: &Event) -> Vec<(i64, i64, i64)> {
    let a = &ev.args;
    let mut done = Vec::new();
    // A `Test` that found its request unfinished records it with a zero flag.
    if let Some(id) = a
        .get(Slot::Request)
        .filter(|_| a.get(Slot::Flag) != Some(0))
    {
        let s = a.get(Slot::StatusSource).unwrap_or(-1);
        let t = a.get(Slot::StatusTag).unwrap_or(NO_VALUE);
        done.push((id, s, t));
    }
    if let Some(list) = ev.list(ListKind::Completions) {
        for c in list.chunks_exact(4) {
            done.push((c[0], c[1], c[2]));
        }
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
    // Receives this call completed, with their requests (in the walk's order).
    let mut done_recvs = Vec::new();
    let mut done_sends = Vec::new();
    if call.completes {
        for (id, s, t) in completed(call.ev) {
            if requests.sends.remove(&id) {
                done_sends.push(id);
            } else if requests.recvs.remove(&id) && s >= 0 && s != NO_VALUE && t != NO_VALUE {
                done_recvs.push(id);
            }
        }
    }
    let mut done_recvs = done_recvs.into_iter();
    // SAFETY: `w` is a live writer of `a`; timestamps are non-decreasing within the call
    // (enter <= message events <= exit).
    unsafe {
        a.check(
            (lib.OTF2_EvtWriter_Enter)(w, null, call.enter, call.region),
            "enter",
        )?;
        if call.collective.is_some() {
            a.check(
                (lib.OTF2_EvtWriter_MpiCollectiveBegin)(w, null, call.enter),
                "collective begin",
            )?;
            n += 1;
        }
        if call.starts_request && !items.iter().any(|i| matches!(i, Item::Send { .. })) {
            if let Some(id) = request {
                a.check(
                    (lib.OTF2_EvtWriter_MpiIrecvRequest)(w, null, call.enter, id as u64),
                    "receive request",
                )?;
                requests.recvs.insert(id);
                n += 1;
            }
        }
        for it in items {
            match it {
                Item::Send { key, bytes, .. } => {
                    let (comm, to) = peer(comms, key, key.to);
                    let tag = key.tag as u32;
                    match request.filter(|_| call.starts_request) {
                        Some(id) => {
                            a.check(
                                (lib.OTF2_EvtWriter_MpiIsend)(
                                    w, null, call.enter, to, comm, tag, *bytes, id as u64,
                                ),
                                "isend",
                            )?;
                            requests.sends.insert(id);
                        }
                        None => a.check(
                            (lib.OTF2_EvtWriter_MpiSend)(
                                w, null, call.enter, to, comm, tag, *bytes,
                            ),
                            "send",
                        )?,
                    }
                    sum.sends += 1;
                    n += 1;
                }
                Item::Recv { key, bytes, .. } => {
                    let (comm, from) = peer(comms, key, key.from);
                    let tag = key.tag as u32;
                    let code = match call.completes.then(|| done_recvs.next()).flatten() {
                        Some(id) => (lib.OTF2_EvtWriter_MpiIrecv)(
                            w, null, call.exit, from, comm, tag, *bytes, id as u64,
                        ),
                        None => (lib.OTF2_EvtWriter_MpiRecv)(
                            w, null, call.exit, from, comm, tag, *bytes,
                        ),
                    };
                    a.check(code, "receive")?;
                    sum.receives += 1;
                    n += 1;
                }
                Item::Call { .. } => {}
            }
        }
        for id in done_sends {
            a.check(
                (lib.OTF2_EvtWriter_MpiIsendComplete)(w, null, call.exit, id as u64),
                "isend complete",
            )?;
            n += 1;
        }
        if let Some(c) = &call.collective {
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

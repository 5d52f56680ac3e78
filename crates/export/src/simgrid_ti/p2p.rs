//! Point-to-point starts: blocking sends and receives, non-blocking and persistent
//! requests (their starts), and send-receives.
//!
//! A call's peer side becomes a [`Start`]: written at once for a blocking call, at the
//! call for a non-blocking one, at each `MPI_Start` for a persistent one. A started
//! request's operations ([`Part`]s) wait in the converter's request table for their
//! completion (`completion.rs`). A tracked receive is written as a hole in the output,
//! filled when its completion says what it matched; an untracked one (no request id
//! recorded) is written as posted, with SimGrid's wildcards for wildcards.

use mpiscope_mpispec::Family;
use mpiscope_trace::{CommDef, Event, ListKind, Slot, PEER_ANY, PEER_NULL, TAG_ANY};

use super::converter::{CallKind, Converter, Outcome, Part, Start};
use super::reason::Reason;
use super::values::{
    map_tag, recv_buf, resolve_tag, send_buf, tag_offset, Buf, SG_ANY_SOURCE, SG_ANY_TAG,
};
use crate::ExportError;

impl Converter {
    /// A send-like call (`MPI_Send`, `Isend`, `Send_init` and their modes).
    pub(super) fn send_call(
        &mut self,
        ev: &Event,
        comm: Option<&CommDef>,
        kind: &CallKind,
    ) -> Result<Outcome, ExportError> {
        let start = match self.send_start(ev, comm) {
            Ok(s) => s,
            Err(r) => return Ok(Outcome::Fold(Some(r))),
        };
        if kind.persistent {
            self.define_persistent(ev, start);
            return Ok(Outcome::Fold(None));
        }
        if kind.nonblocking {
            self.start(ev.args.get(Slot::Request), &start)?;
            return Ok(Outcome::Handled);
        }
        Ok(match start {
            Start::Send { dst, tag, buf } => {
                self.action(format!("send {dst} {tag} {} {}", buf.count, buf.dt))?;
                Outcome::Handled
            }
            _ => Outcome::Discard(Some(Reason::NullPeer)),
        })
    }

    /// A receive-like call (`MPI_Recv`, `Irecv`, `Recv_init`, `Mrecv`, `Imrecv`).
    pub(super) fn recv_call(
        &mut self,
        ev: &Event,
        comm: Option<&CommDef>,
        kind: &CallKind,
    ) -> Result<Outcome, ExportError> {
        let start = match self.recv_start(ev, comm, kind.family == Family::Mrecv) {
            Ok(s) => s,
            Err(r) => return Ok(Outcome::Fold(Some(r))),
        };
        if kind.persistent {
            self.define_persistent(ev, start);
            return Ok(Outcome::Fold(None));
        }
        if kind.nonblocking {
            self.start(ev.args.get(Slot::Request), &start)?;
            return Ok(Outcome::Handled);
        }
        Ok(match start {
            Start::Recv {
                src,
                tag,
                tag_offset,
                buf,
            } => {
                let (src, tag) = self.matched(ev, src, tag, tag_offset);
                self.action(format!("recv {src} {tag} {} {}", buf.count, buf.dt))?;
                Outcome::Handled
            }
            _ => Outcome::Discard(Some(Reason::NullPeer)),
        })
    }

    /// The source and tag a blocking receive matched (from its status; SimGrid's wildcards
    /// when not recorded).
    fn matched(&self, ev: &Event, src: i64, tag: i64, tag_offset: i64) -> (i64, i64) {
        let src = self
            .resolve_source(src, ev.args.get(Slot::StatusSource))
            .unwrap_or(SG_ANY_SOURCE);
        let tag = resolve_tag(tag, ev.args.get(Slot::StatusTag), tag_offset).unwrap_or(SG_ANY_TAG);
        (src, tag)
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

    /// `MPI_Start` of the persistent request `id`.
    pub(super) fn start_persistent(&mut self, id: i64) -> Result<Outcome, ExportError> {
        let Some(start) = self.reqs.get(&id).and_then(|r| r.persistent.clone()) else {
            return Ok(Outcome::Discard(Some(Reason::UnknownRequest)));
        };
        self.start(Some(id), &start)?;
        Ok(Outcome::Handled)
    }

    /// `MPI_Startall` (named `name` in notes).
    pub(super) fn start_all(&mut self, ev: &Event, name: &str) -> Result<Outcome, ExportError> {
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
        Ok(outcome)
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

    /// `MPI_Sendrecv`, `Sendrecv_replace` and (`nonblocking`) `MPI_Isendrecv`.
    pub(super) fn sendrecv(
        &mut self,
        ev: &Event,
        comm: Option<&CommDef>,
        nonblocking: bool,
    ) -> Result<Outcome, ExportError> {
        let send = match self.send_start(ev, comm) {
            Ok(s) => s,
            Err(r) => return Ok(Outcome::Fold(Some(r))),
        };
        let recv = match self.sendrecv_recv_start(ev, comm) {
            Ok(s) => s,
            Err(r) => return Ok(Outcome::Fold(Some(r))),
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
                let (src, tag) = self.matched(ev, src, tag, tag_offset);
                Some((src, tag, buf))
            }
            _ => None,
        };
        self.sendrecv_lines(send, recv_half)
    }

    /// The receive side of a send-receive (`MPI_Sendrecv_replace` receives into its send
    /// buffer).
    fn sendrecv_recv_start(&self, ev: &Event, comm: Option<&CommDef>) -> Result<Start, Reason> {
        let replace = ev.args.get(Slot::RecvCount).is_none();
        let rpeer = ev.args.get(Slot::RecvPeer).ok_or(Reason::UnknownPeer)?;
        if rpeer == PEER_NULL {
            return Ok(Start::Nothing);
        }
        if rpeer != PEER_ANY && self.world_rank(rpeer).is_none() {
            return Err(Reason::UnknownPeer);
        }
        let buf = if replace { send_buf(ev) } else { recv_buf(ev) };
        let buf = buf.ok_or(Reason::MissingArgs)?;
        let tag = ev.args.get(Slot::RecvTag).unwrap_or(0);
        Ok(Start::Recv {
            src: rpeer,
            tag,
            tag_offset: tag_offset(comm),
            buf,
        })
    }

    /// Writes a blocking send-receive: one `sendRecv` when both tags are 0 (the replayer's
    /// tag), else `isend` + `recv` + `wait`, or the half that has a peer.
    fn sendrecv_lines(
        &mut self,
        send: Start,
        recv: Option<(i64, i64, Buf)>,
    ) -> Result<Outcome, ExportError> {
        match (send, recv) {
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
}

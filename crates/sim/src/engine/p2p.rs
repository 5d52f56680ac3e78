//! Point-to-point messages: requests, mailboxes, matching and transfers.
//!
//! A send and a receive are requests ([`Req`]); an unmatched one waits in a mailbox, the
//! destination's (sends) or the receiver's own (receives), in posting order. A new send is
//! matched with the first receive of its destination that accepts it (source, tag and
//! context, wildcards allowed), a new receive with the first send in its mailbox it
//! accepts: MPI's non-overtaking order. A match starts the transfer on the network model;
//! its end completes both requests. A send below the eager threshold (and not synchronous)
//! is complete at once, from its owner's point of view (SMPI's detached sends), while its
//! transfer still runs. A request is freed when its owner has released it and its
//! transfer is over, and its slot reused.
//!
//! A send below `smpi/async-small-thresh` (SMPI's messages to a permanent receiver) that
//! finds no receive starts its transfer at once; the receive that matches it later
//! completes when that transfer ends, or at once if it has ended.

use super::state::{Block, Kind, Req, ReqIdx, WaitList, CHUNK_TIE, NO_REQ};
use super::Simulation;
use crate::coll;
use crate::result::SimError;
use crate::time::Time;
use crate::workload::{CommId, ANY};

/// Whether a released request may be freed: its transfer is over and no receive is still
/// to match it (a send whose transfer started early).
fn freeable(x: &Req) -> bool {
    x.finished && (x.matched || x.early.is_none())
}

/// Whether a receive or probe for (`src`, `tag`, `ctx`), wildcards allowed, matches `send`
/// from world rank `sender`.
fn envelope_matches(src: i64, tag: i64, ctx: u32, send: &Req, sender: u32) -> bool {
    ctx == send.ctx
        && (src == ANY || src == i64::from(sender))
        && (tag == send.tag || (tag == ANY && send.tag >= 0))
}

impl Simulation<'_> {
    /// World rank of rank `r` of communicator `comm`, if both exist.
    pub(super) fn world_rank(&self, comm: CommId, r: u32) -> Option<u32> {
        let c = self.comms.get(comm as usize)?.as_ref()?;
        if c.members.is_empty() {
            (r < c.size).then_some(r)
        } else {
            c.members.get(r as usize).copied()
        }
    }

    /// World rank of destination `dst` of `comm` for rank `r`'s `call`.
    pub(super) fn destination(
        &self,
        r: u32,
        comm: CommId,
        dst: u32,
        call: &str,
    ) -> Result<u32, SimError> {
        self.world_rank(comm, dst).ok_or_else(|| SimError::Invalid {
            rank: r,
            message: format!("{call} to rank {dst} of communicator {comm}, which has no such rank"),
        })
    }

    /// World rank of source `src` (or ANY) of `comm` for rank `r`.
    pub(super) fn peer_world(&self, r: u32, comm: CommId, src: i64) -> Result<i64, SimError> {
        if src == ANY {
            return Ok(ANY);
        }
        self.world_rank(comm, src as u32)
            .map(i64::from)
            .ok_or_else(|| SimError::Invalid {
                rank: r,
                message: format!("rank {src} does not exist in communicator {comm}"),
            })
    }

    /// A new request (in a recycled slot when one is free).
    pub(super) fn new_req(&mut self, req: Req) -> ReqIdx {
        match self.free_reqs.pop() {
            Some(i) => {
                self.reqs[i as usize] = req;
                i
            }
            None => {
                self.reqs.push(req);
                (self.reqs.len() - 1) as ReqIdx
            }
        }
    }

    /// The owner no longer refers to request `q` (idempotent); freed once its transfer is
    /// over.
    pub(super) fn release(&mut self, q: ReqIdx) {
        let x = &mut self.reqs[q as usize];
        if x.released {
            return;
        }
        x.released = true;
        if freeable(x) {
            self.free_reqs.push(q);
        }
    }

    /// Whether receive `recv` accepts `send` from world rank `sender`.
    fn matches(&self, recv: &Req, send: &Req, sender: u32) -> bool {
        envelope_matches(recv.peer, recv.tag, recv.ctx, send, sender)
    }

    /// Posts a send of `me` to world rank `dst`.
    pub(super) fn post_send(
        &mut self,
        me: u32,
        dst: u32,
        tag: i64,
        ctx: u32,
        bytes: u64,
        sync: bool,
    ) -> Result<ReqIdx, SimError> {
        if bytes > coll::MAX_COLLECTIVE_BYTES {
            return Err(SimError::Invalid {
                rank: me,
                message: format!("a message of {bytes} bytes (more than a pebibyte)"),
            });
        }
        let detached = !sync && bytes < self.config.eager_threshold;
        let q = self.new_req(Req {
            owner: me,
            kind: Kind::Send,
            peer: i64::from(dst),
            tag,
            ctx,
            bytes,
            complete: detached,
            matched: false,
            matched_at: Time::NEVER,
            finished: false,
            released: false,
            partner: i64::from(dst),
            finished_at: Time::NEVER,
            or_bytes: None,
            early: None,
        });
        self.messages += 1;
        // The first matching receive posted at the destination, in posting order.
        let mb = &self.mailboxes[dst as usize];
        let hit = mb
            .recvs
            .iter()
            .position(|&rq| self.matches(&self.reqs[rq as usize], &self.reqs[q as usize], me));
        match hit {
            Some(pos) => {
                let rq = self.mailboxes[dst as usize].recvs.remove(pos).unwrap_or(q);
                self.start_transfer(q, rq, me, dst)?;
            }
            None => {
                self.mailboxes[dst as usize].sends.push_back(q);
                if detached && bytes < self.config.costs.async_small_thresh {
                    let (hs, hr) = (self.ranks[me as usize].host, self.ranks[dst as usize].host);
                    let t = self.net.start(self.platform, self.now, hs, hr, bytes)?;
                    self.transfers.insert(t, (q, NO_REQ));
                    self.reqs[q as usize].early = Some(t);
                }
                match self.ranks[dst as usize].block {
                    // A rank blocked probing for it can go on.
                    Block::Probe { .. } => self.touched.push(dst),
                    Block::Polling { .. } => self.polled_send_arrived(dst, q),
                    _ => {}
                }
            }
        }
        Ok(q)
    }

    /// Send `sq` just arrived in the mailbox of rank `r`, which computes while polling: if
    /// the probes match it, the computation ends with the chunk in progress.
    pub(super) fn polled_send_arrived(&mut self, r: u32, sq: ReqIdx) {
        let now = self.now;
        let send = &self.reqs[sq as usize];
        let Block::Polling {
            exec,
            flops,
            chunks,
            found: false,
            src,
            tag,
            ctx,
        } = self.ranks[r as usize].block
        else {
            return;
        };
        if !envelope_matches(src, tag, ctx, send, send.owner) {
            return;
        }
        let done = self.cpu.done_flops(exec, now);
        // The probe after the chunk in progress finds it; a chunk ending right now (to
        // rounding) probes after the send arrived, as the loop's probe would.
        let upto = ((done / flops - CHUNK_TIE).ceil().max(1.0) as u64).min(chunks);
        self.cpu.set_total(exec, now, upto as f64 * flops);
        if let Block::Polling { chunks, found, .. } = &mut self.ranks[r as usize].block {
            *chunks = upto;
            *found = true;
        }
    }

    /// The position in rank `me`'s mailbox of the first send a receive or probe for
    /// (`src`, `tag`, `ctx`) accepts.
    pub(super) fn find_send(&self, me: u32, src: i64, tag: i64, ctx: u32) -> Option<usize> {
        self.mailboxes[me as usize].sends.iter().position(|&sq| {
            let send = &self.reqs[sq as usize];
            envelope_matches(src, tag, ctx, send, send.owner)
        })
    }

    /// Posts a receive of `me` from world rank `src` (or ANY).
    pub(super) fn post_recv(
        &mut self,
        me: u32,
        src: i64,
        tag: i64,
        ctx: u32,
        bytes: u64,
    ) -> Result<ReqIdx, SimError> {
        let q = self.new_req(Req {
            owner: me,
            kind: Kind::Recv,
            peer: src,
            tag,
            ctx,
            bytes,
            complete: false,
            matched: false,
            matched_at: Time::NEVER,
            finished: false,
            released: false,
            partner: ANY,
            finished_at: Time::NEVER,
            or_bytes: None,
            early: None,
        });
        match self.find_send(me, src, tag, ctx) {
            Some(pos) => {
                let sq = self.mailboxes[me as usize].sends.remove(pos).unwrap_or(q);
                let sender = self.reqs[sq as usize].owner;
                match self.reqs[sq as usize].early {
                    Some(t) => self.match_early(sq, q, sender, t),
                    None => self.start_transfer(sq, q, sender, me)?,
                }
            }
            None => self.mailboxes[me as usize].recvs.push_back(q),
        }
        Ok(q)
    }

    /// Matches send `sq` of `sender` with receive `rq` of `receiver` and starts the
    /// transfer on the network model.
    pub(super) fn start_transfer(
        &mut self,
        sq: ReqIdx,
        rq: ReqIdx,
        sender: u32,
        receiver: u32,
    ) -> Result<(), SimError> {
        let now = self.now;
        for q in [sq, rq] {
            let x = &mut self.reqs[q as usize];
            x.matched = true;
            x.matched_at = now;
        }
        let bytes = self.reqs[sq as usize].bytes;
        let detached = self.reqs[sq as usize].complete;
        let r = &mut self.reqs[rq as usize];
        r.partner = i64::from(sender);
        r.or_bytes = detached.then_some(bytes);
        let (hs, hr) = (
            self.ranks[sender as usize].host,
            self.ranks[receiver as usize].host,
        );
        let t = self.net.start(self.platform, now, hs, hr, bytes)?;
        self.transfers.insert(t, (sq, rq));
        Ok(())
    }

    /// Receive `rq` of `receiver` matches send `sq` of `sender`, whose transfer `t` started
    /// when it was posted: the receive completes with the transfer, or now if it is over.
    fn match_early(&mut self, sq: ReqIdx, rq: ReqIdx, sender: u32, t: crate::network::TransferId) {
        let now = self.now;
        for q in [sq, rq] {
            let x = &mut self.reqs[q as usize];
            x.matched = true;
            x.matched_at = now;
        }
        let bytes = self.reqs[sq as usize].bytes;
        let r = &mut self.reqs[rq as usize];
        r.partner = i64::from(sender);
        r.or_bytes = Some(bytes);
        if self.reqs[sq as usize].finished {
            if self.reqs[sq as usize].released {
                self.free_reqs.push(sq);
            }
            self.transfer_finished(NO_REQ, rq);
        } else if let Some(pair) = self.transfers.get_mut(&t) {
            pair.1 = rq;
        }
    }

    /// The transfer of send `sq` to receive `rq` ended: both are complete (a send whose
    /// transfer started early may have no receive yet: [`NO_REQ`]), and freed if released;
    /// their owners are woken.
    pub(super) fn transfer_finished(&mut self, sq: ReqIdx, rq: ReqIdx) {
        let now = self.now;
        for q in [sq, rq] {
            if q == NO_REQ {
                continue;
            }
            let x = &mut self.reqs[q as usize];
            x.finished = true;
            x.finished_at = now;
            let newly = !x.complete;
            x.complete = true;
            let owner = x.owner;
            if x.released && freeable(x) {
                self.free_reqs.push(q);
            }
            if newly {
                self.touched.push(owner);
            }
        }
    }

    /// Rank `r` goes on if requests `qs` are all complete (and drops them, paying their
    /// receive overheads), else blocks in `call` until they are.
    pub(super) fn wait_for(&mut self, r: u32, qs: WaitList, call: &'static str) {
        if qs.iter().all(|&q| self.reqs[q as usize].complete) {
            let or_end = self.recv_overheads_end(&qs, self.now);
            for q in qs {
                self.release(q);
            }
            if let Some(end) = or_end {
                self.overhead(r, end.since(self.now).secs(), call);
            }
        } else {
            self.block(r, Block::Reqs(qs, true), call);
        }
    }
}

//! Ranks sharing an oversubscribed core: more ranks bound to a core than one
//! ([`SimConfig::bind_to_core`](crate::SimConfig::bind_to_core)) with a wake-up delay
//! ([`SimConfig::oversubscribed_wake_up`](crate::SimConfig::oversubscribed_wake_up)).
//!
//! An MPI library waiting with `sched_yield` (Open MPI's `mpi_yield_when_idle`, MPICH's
//! default when oversubscribed) does not get its core back the moment its message arrives
//! while another rank computes there: it waits for the wake-up delay (a time slice) or for
//! a computation on the core to end, whichever comes first ([`Block::Scheduled`], queued
//! per core, first come first served).
//!
//! An MPI library's copy through bounce buffers ([`Action::Pack`]: a plain sleep
//! elsewhere) runs there fragment by fragment: one rank of a core copies at a time (the
//! core's `copier`), and after each fragment it waits for the ranks computing on its core
//! to yield (the end of a probed chunk, or a full time slice, twice the wake-up). A pack
//! `with` a partner is one side of a pipeline (Open MPI's protocol for non-contiguous
//! data): each end waits for the other to finish copying ([`Block::Partner`]), so a
//! sender's blocking send lasts until its receiver has unpacked.

use std::cmp::Reverse;

use super::state::{Block, Packing, CHUNK_TIE};
use super::Simulation;
use crate::time::Time;
#[cfg(doc)]
use crate::workload::Action;

impl Simulation<'_> {
    /// Starts rank `r`'s [`Action::Pack`] of `secs` seconds in `fragments` fragments, one
    /// side of a pipeline with rank `with` when given: fragment by fragment on an
    /// oversubscribed core, else a sleep.
    pub(super) fn start_pack(&mut self, r: u32, secs: f64, fragments: u32, with: Option<u32>) {
        let now = self.now;
        self.ranks[r as usize].pack_with = with.filter(|&w| w != r);
        let queue = self.ranks[r as usize].cpu_queue as usize;
        if fragments > 1 && self.oversubscribed[queue] {
            let p = Packing {
                left: fragments,
                each: secs / f64::from(fragments),
                yielded: false,
            };
            self.next_fragment(r, p);
        } else if secs > 0.0 {
            let end = now.plus(Time::from_secs(secs));
            self.sleepers.push(Reverse((end, r)));
            self.block(r, Block::Sleep(end), "pack");
        }
    }

    /// Whether rank `r`, ready after waiting in MPI, must wait for its core: the core is
    /// oversubscribed (see [`SimConfig::oversubscribed_wake_up`]) and computes.
    pub(super) fn waits_for_a_core(&self, r: u32) -> bool {
        let rank = &self.ranks[r as usize];
        self.oversubscribed[rank.cpu_queue as usize] && self.cpu.no_core_idle(rank.host, rank.core)
    }

    /// Goes on with rank `r`'s [`Action::Pack`] on an oversubscribed core: takes the core's
    /// copy turn (one rank of a core copies at a time, first come first served: the kernel
    /// runs one of them until it has nothing left to copy), waits after each fragment for
    /// the ranks computing on its core to yield, and copies the next fragment.
    pub(super) fn next_fragment(&mut self, r: u32, mut p: Packing) {
        let now = self.now;
        let queue = self.ranks[r as usize].cpu_queue as usize;
        match self.copier[queue] {
            Some(o) if o != r => {
                self.ranks[r as usize].packing = Some(p);
                self.copy_waiters[queue].push_back(r);
                self.block(r, Block::Scheduled(Time::NEVER), "scheduler");
                return;
            }
            _ => self.copier[queue] = Some(r),
        }
        if p.left == 0 {
            self.ranks[r as usize].packing = None;
            self.copier[queue] = None;
            if let Some(w) = self.copy_waiters[queue].pop_front() {
                self.ranks[w as usize].block = Block::Scheduled(now);
                self.touched.push(w);
            }
            return;
        }
        if p.yielded {
            p.yielded = false;
            if let Some(until) = self.next_yield_of_residents(r) {
                self.ranks[r as usize].packing = Some(p);
                self.scheduled[queue].push_back(r);
                self.sleepers.push(Reverse((until, r)));
                self.block(r, Block::Scheduled(until), "scheduler");
                return;
            }
        }
        p.left -= 1;
        p.yielded = true;
        self.ranks[r as usize].packing = Some(p);
        let end = now.plus(Time::from_secs(p.each));
        self.sleepers.push(Reverse((end, r)));
        self.block(r, Block::Sleep(end), "pack");
    }

    /// Rank `r` has copied its side of a joint [`Action::Pack`]: it goes on if `partner`
    /// has copied its side too (and releases it), else it waits for the partner.
    pub(super) fn meet_partner(&mut self, r: u32, partner: u32) {
        let key = (r.min(partner), r.max(partner));
        if self.joints.get(&key) == Some(&partner) {
            self.joints.remove(&key);
            self.touched.push(partner);
        } else {
            self.joints.insert(key, r);
            self.block(r, Block::Partner(key), "pack");
        }
    }

    /// When the ranks computing on rank `r`'s oversubscribed core next yield it (`None`: none
    /// computes). One probing between chunks ([`Action::ComputeWhilePolling`]) yields at the
    /// end of its current chunk; one computing without MPI calls at the end of its time
    /// slice, a full slice after `r` yielded to it: twice
    /// [`SimConfig::oversubscribed_wake_up`], which is the median wait from a random date.
    pub(super) fn next_yield_of_residents(&self, r: u32) -> Option<Time> {
        if !self.waits_for_a_core(r) {
            return None;
        }
        let now = self.now;
        let slice = now.plus(Time::from_secs(2.0 * self.config.oversubscribed_wake_up));
        let queue = self.ranks[r as usize].cpu_queue as usize;
        self.residents[queue]
            .iter()
            .filter(|&&o| o != r)
            .filter_map(|&o| match &self.ranks[o as usize].block {
                Block::Exec(_) => Some(slice),
                Block::Polling { exec, flops, .. } => {
                    let rate = self.cpu.rate(*exec);
                    if rate <= 0.0 {
                        return Some(slice);
                    }
                    let done = self.cpu.done_flops(*exec, now);
                    let chunk_end = ((done / flops + CHUNK_TIE).floor() + 1.0) * flops;
                    Some(
                        now.plus(Time::from_secs((chunk_end - done) / rate))
                            .min(slice),
                    )
                }
                _ => None,
            })
            .min()
    }
}

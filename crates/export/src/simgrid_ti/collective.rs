//! Collectives: the TI line of each collective family, on `MPI_COMM_WORLD` or on a
//! communicator holding every process.
//!
//! SimGrid 3.32 replays collectives on the world communicator only, so a collective on a
//! reordered duplicate of the world has its per-rank lists (counts, type sizes) put back
//! in world rank order ([`Coll::world_order`]); a collective on a smaller communicator has
//! no TI form. Non-blocking and persistent collectives are replayed as the blocking one
//! where they start (every rank starts collectives in the same order).

use mpiscope_mpispec::Family;
use mpiscope_trace::{CommDef, CommKind, Event, ListKind, Slot};

use super::converter::{CallKind, Converter, Outcome, Start};
use super::reason::Reason;
use super::values::{counts_buf, join, recv_buf, send_buf, Buf, DT_BYTE};
use crate::ExportError;

impl Converter {
    /// A collective call named `name` on `comm`.
    pub(super) fn collective(
        &mut self,
        ev: &Event,
        comm: Option<&CommDef>,
        name: &str,
        kind: &CallKind,
    ) -> Result<Outcome, ExportError> {
        let lines = match comm {
            None => Err(Reason::UnknownComm),
            Some(c) => Coll::new(ev, c, self.world, self.rank).and_then(|coll| {
                if coll.moves_nothing(kind.family)? {
                    Ok(Vec::new())
                } else {
                    coll.line(kind.family).map(|line| vec![line])
                }
            }),
        };
        let lines = match lines {
            Ok(l) => l,
            Err(r) => return Ok(Outcome::Fold(Some(r))),
        };
        if lines.is_empty() {
            // Open MPI and MPICH return at once; SimGrid 3.32 aborts on many of these.
            if kind.persistent {
                self.define_persistent(ev, Start::Nothing);
            }
            self.note(name, Reason::ZeroCount, 1);
            return Ok(Outcome::Fold(None));
        }
        if kind.persistent {
            self.define_persistent(ev, Start::Lines(lines));
            self.note(name, Reason::AsBlocking, 1);
            return Ok(Outcome::Fold(None));
        }
        for l in lines {
            self.action(l)?;
        }
        if kind.nonblocking {
            self.note(name, Reason::AsBlocking, 1);
        }
        Ok(Outcome::Handled)
    }
}

/// A collective call as its TI line sees it.
struct Coll<'e> {
    ev: &'e Event,
    /// World size.
    n: usize,
    /// This rank.
    me: usize,
    /// World rank of each communicator rank, when the communicator is not the world
    /// itself (a duplicate, possibly reordered).
    perm: Option<&'e [u32]>,
    /// The send buffer, when recorded.
    sbuf: Option<Buf>,
    /// The receive buffer, when recorded.
    rbuf: Option<Buf>,
}

impl<'e> Coll<'e> {
    /// The collective `ev` of rank `rank` of `world` on `comm`, or why it has no TI form.
    fn new(ev: &'e Event, comm: &'e CommDef, world: u32, rank: u32) -> Result<Coll<'e>, Reason> {
        let n = world as usize;
        let perm: Option<&[u32]> = match comm.kind {
            // Nothing to move between processes; SimGrid 3.32 aborts on some of these.
            CommKind::World if n <= 1 => return Err(Reason::OneProcess),
            CommKind::World => None,
            CommKind::Inter => return Err(Reason::SubComm),
            _ if comm.size <= 1 => return Err(Reason::SelfComm),
            _ if comm.size as usize == n && comm.ranks.len() == n => Some(&comm.ranks),
            _ => return Err(Reason::SubComm),
        };
        Ok(Coll {
            ev,
            n,
            me: rank as usize,
            perm,
            sbuf: send_buf(ev),
            rbuf: recv_buf(ev),
        })
    }

    /// Per-rank values of the communicator's rank order, in world rank order.
    fn world_order(&self, kind: ListKind) -> Result<Vec<i64>, Reason> {
        let n = self.n;
        let list = self.ev.list(kind).ok_or(Reason::MissingArgs)?;
        if list.len() != n {
            return Err(Reason::MissingArgs);
        }
        match self.perm {
            None => Ok(list.to_vec()),
            Some(p) => {
                let mut v = vec![0; n];
                for (&w, &x) in p.iter().zip(list) {
                    *v.get_mut(w as usize).ok_or(Reason::MissingArgs)? = x;
                }
                Ok(v)
            }
        }
    }

    /// The root, as a world rank.
    fn root(&self) -> Result<i64, Reason> {
        self.ev
            .args
            .get(Slot::Root)
            .filter(|r| (0..self.n as i64).contains(r))
            .ok_or(Reason::UnknownRoot)
    }

    /// Per-rank counts of the list `counts`, in elements of the datatype whose size is in
    /// the slot `size`.
    fn counts(&self, counts: ListKind, size: Slot) -> Result<(Vec<i64>, &'static str), Reason> {
        counts_buf(self.world_order(counts)?, self.ev.args.get(size))
    }

    /// Whether the collective moves no data on any rank, as this rank can tell from its own
    /// arguments: zero bytes in the buffer that MPI's matching type signatures make the same
    /// on every rank (the root's or every rank's), or zero in every count of a list that
    /// every rank holds. Open MPI and MPICH return from these at once; gatherv, scatterv,
    /// alltoallv and alltoallw, whose zero counts one rank cannot see for the others, and
    /// barrier never qualify.
    fn moves_nothing(&self, fam: Family) -> Result<bool, Reason> {
        let zero = |b: Option<Buf>| b.map(|b| b.bytes() == 0);
        let all_zero = |kind: ListKind| -> Result<bool, Reason> {
            Ok(self.world_order(kind)?.iter().all(|&c| c == 0))
        };
        let (s, r) = (self.sbuf, self.rbuf);
        Ok(match fam {
            Family::Bcast => zero(s),
            Family::Reduce
            | Family::Allreduce
            | Family::Scan
            | Family::Exscan
            | Family::Alltoall
            | Family::Allgather => zero(s.or(r)),
            // The senders' count; the root may send in place.
            Family::Gather => zero(s.or(r)),
            // The receivers' count; the root may receive in place.
            Family::Scatter => zero(r.or(s)),
            Family::ReduceScatterBlock => zero(r),
            Family::ReduceScatter => Some(all_zero(ListKind::RecvCounts)?),
            Family::Allgatherv => Some(all_zero(ListKind::RecvCounts)?),
            _ => Some(false),
        }
        .unwrap_or(false))
    }

    /// The TI line of a collective of family `fam`.
    fn line(&self, fam: Family) -> Result<String, Reason> {
        let (sbuf, rbuf) = (self.sbuf, self.rbuf);
        let missing = Reason::MissingArgs;
        Ok(match fam {
            Family::Barrier => "barrier".to_owned(),
            Family::Bcast => {
                let b = sbuf.ok_or(missing)?;
                format!("bcast {} {} {}", b.count, self.root()?, b.dt)
            }
            Family::Reduce => {
                let b = sbuf.or(rbuf).ok_or(missing)?;
                format!("reduce {} 0 {} {}", b.count, self.root()?, b.dt)
            }
            Family::Allreduce | Family::Scan | Family::Exscan => {
                let b = sbuf.or(rbuf).ok_or(missing)?;
                format!("{fam} {} 0 {}", b.count, b.dt)
            }
            Family::ReduceScatter => {
                let (counts, dt) = self.counts(ListKind::RecvCounts, Slot::DtypeSize)?;
                format!("reducescatter {} 0 {dt}", join(&counts))
            }
            Family::ReduceScatterBlock => {
                let b = rbuf.ok_or(missing)?;
                format!("reducescatter {} 0 {}", join(&vec![b.count; self.n]), b.dt)
            }
            Family::Alltoall | Family::Allgather => {
                let s = sbuf.or(rbuf).ok_or(missing)?;
                let r = rbuf.unwrap_or(s);
                format!("{fam} {} {} {} {}", s.count, r.count, s.dt, r.dt)
            }
            Family::Gather | Family::Scatter => {
                let s = sbuf.or(rbuf).ok_or(missing)?;
                let r = rbuf.unwrap_or(s);
                let root = self.root()?;
                format!("{fam} {} {} {root} {} {}", s.count, r.count, s.dt, r.dt)
            }
            Family::Gatherv => self.gatherv()?,
            Family::Allgatherv => self.allgatherv()?,
            Family::Scatterv => self.scatterv()?,
            Family::Alltoallv => self.alltoallv()?,
            Family::Alltoallw => self.alltoallw()?,
            _ => return Err(Reason::NoAction),
        })
    }

    /// `gatherv`: the receive counts are the root's only.
    fn gatherv(&self) -> Result<String, Reason> {
        let root = self.root()?;
        let recv = if root as usize == self.me {
            Some(self.counts(ListKind::RecvCounts, Slot::RecvDtypeSize)?)
        } else {
            None
        };
        let s = match (self.sbuf, &recv) {
            (Some(b), _) => b,
            (None, Some((rc, dt))) => Buf {
                count: *rc.get(self.me).ok_or(Reason::MissingArgs)?,
                dt,
            },
            (None, None) => return Err(Reason::MissingArgs),
        };
        let (rc, rdt) = recv.unwrap_or_else(|| (vec![0; self.n], s.dt));
        Ok(format!(
            "gatherv {} {} {root} {} {rdt}",
            s.count,
            join(&rc),
            s.dt
        ))
    }

    /// `allgatherv`.
    fn allgatherv(&self) -> Result<String, Reason> {
        let (rc, rdt) = self.counts(ListKind::RecvCounts, Slot::RecvDtypeSize)?;
        let s = match self.sbuf {
            Some(b) => b,
            None => Buf {
                count: *rc.get(self.me).ok_or(Reason::MissingArgs)?,
                dt: rdt,
            },
        };
        Ok(format!(
            "allgatherv {} {} {} {rdt}",
            s.count,
            join(&rc),
            s.dt
        ))
    }

    /// `scatterv`: the send counts are the root's only.
    fn scatterv(&self) -> Result<String, Reason> {
        let root = self.root()?;
        let send = if root as usize == self.me {
            Some(self.counts(ListKind::SendCounts, Slot::DtypeSize)?)
        } else {
            None
        };
        let r = match (self.rbuf, &send) {
            (Some(b), _) => b,
            (None, Some((sc, dt))) => Buf {
                count: *sc.get(self.me).ok_or(Reason::MissingArgs)?,
                dt,
            },
            (None, None) => return Err(Reason::MissingArgs),
        };
        let (sc, sdt) = send.unwrap_or_else(|| (vec![0; self.n], r.dt));
        Ok(format!(
            "scatterv {} {} {root} {sdt} {}",
            join(&sc),
            r.count,
            r.dt
        ))
    }

    /// `alltoallv` (without send counts, as `MPI_IN_PLACE`: the receive counts).
    fn alltoallv(&self) -> Result<String, Reason> {
        let (rc, rdt) = self.counts(ListKind::RecvCounts, Slot::RecvDtypeSize)?;
        let (sc, sdt) = if self.ev.list(ListKind::SendCounts).is_some() {
            self.counts(ListKind::SendCounts, Slot::DtypeSize)?
        } else {
            (rc.clone(), rdt)
        };
        let (ss, rs): (i64, i64) = (sc.iter().sum(), rc.iter().sum());
        Ok(format!(
            "alltoallv {ss} {} {rs} {} {sdt} {rdt}",
            join(&sc),
            join(&rc)
        ))
    }

    /// `MPI_Alltoallw` as an `alltoallv` in bytes.
    fn alltoallw(&self) -> Result<String, Reason> {
        let rc = self.bytes(ListKind::RecvCounts, ListKind::RecvTypeSizes)?;
        let sc = if self.ev.list(ListKind::SendCounts).is_some() {
            self.bytes(ListKind::SendCounts, ListKind::SendTypeSizes)?
        } else {
            rc.clone()
        };
        let (ss, rs): (i64, i64) = (sc.iter().sum(), rc.iter().sum());
        Ok(format!(
            "alltoallv {ss} {} {rs} {} {DT_BYTE} {DT_BYTE}",
            join(&sc),
            join(&rc)
        ))
    }

    /// Per-rank bytes: counts times per-rank type sizes, in world rank order.
    fn bytes(&self, counts: ListKind, sizes: ListKind) -> Result<Vec<i64>, Reason> {
        let c = self.world_order(counts)?;
        let s = self.world_order(sizes)?;
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
    }
}

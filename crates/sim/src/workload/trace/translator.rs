//! One rank's events into actions: the [`Translator`], shared by the replay of rank files
//! and of structural forms.
//!
//! Each event first gives the computation since the previous call (the gap between the two
//! calls, or its CPU time, plus the time of local MPI calls in between, at the traced host's
//! speed; with CPU times a local call counts as the shortest the same call took), then a
//! callsite mark, then the call's own actions, one method per kind of call: sends and
//! receives with the peers translated to communicator ranks, `MPI_Sendrecv` as two
//! non-blocking operations and a wait, persistent requests as templates that each `start`
//! instantiates, waits and tests as a wait of what they completed, successful probes as
//! blocking ones, collectives through `collective.rs`. Communicators other than the world
//! get simulation ids in the order the ranks first use them (the `Shared` registry), and
//! are defined with an `Action::DefineComm` before their first use.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use mpiscope_trace::{CommKind, Event, Slot, Tables, PEER_ANY, PEER_NULL, PEER_ROOT, TAG_ANY};

use mpiscope_mpispec::Family;

use super::callsites::{CallsiteKey, Callsites};
use super::collective;
use crate::workload::{Action, CommId, ReqHandle, WorkloadError, ANY};

/// Communicator keys to simulation ids, shared by all ranks.
#[derive(Debug, Default)]
pub(crate) struct CommRegistry {
    by_key: HashMap<u64, CommId>,
    next: CommId,
}

/// A communicator as seen by one rank.
#[derive(Debug, Clone)]
struct LocalComm {
    id: CommId,
    /// Comm rank of each world rank in it.
    rank_of: HashMap<u32, u32>,
    size: u32,
    inter: bool,
}

/// A persistent request's template.
#[derive(Debug, Clone)]
struct Persistent {
    send: bool,
    peer: i64,
    tag: i64,
    bytes: u64,
    comm: CommId,
}

/// What turns one rank's events into actions: its communicators, persistent requests and
/// callsites, the pending actions, and the time since its previous call. Shared by the
/// replay of rank files (`TraceRank`) and of structural files
/// (`structural.rs`), which rebuild the events and feed them here.
pub(crate) struct Translator {
    /// The world rank.
    pub(crate) rank: u32,
    /// Names the input in errors.
    path: String,
    speed: f64,
    registry: Arc<Mutex<CommRegistry>>,
    callsites: Callsites,
    /// This rank's (callsite, call, size) to global callsite ids.
    global_callsite: HashMap<(u32, u32, Option<u64>), u32>,
    by_size: bool,
    comms: HashMap<u32, LocalComm>,
    pub(crate) queue: VecDeque<Action>,
    prev_exit: Option<u64>,
    /// Local (non-communicating) MPI time to add to the next computation, ns.
    local_ns: u64,
    /// With CPU times: the shortest wall time (ns) each local call (call id, callsite,
    /// bytes) took so far on this rank, which is what it counts as
    /// ([`Translator::local_call`]).
    local_min: HashMap<(u32, u32, i64), u64>,
    /// The rank's trace records the CPU time of bursts: bursts are its CPU work, times this
    /// factor ([`Translator::use_cpu_time`]); `None`: their wall time, as recorded.
    cpu_scale: Option<f64>,
    persistent: HashMap<i64, Persistent>,
    /// Persistent request id -> handle of its active instance.
    active: HashMap<i64, ReqHandle>,
    next_synthetic: ReqHandle,
    pub(crate) events: u64,
    pub(crate) ended: bool,
}

/// Shared state of the ranks of one replay: communicator ids and callsites.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared {
    registry: Arc<Mutex<CommRegistry>>,
    /// Callsites of all ranks.
    pub(crate) callsites: Callsites,
}

impl Shared {
    /// A fresh numbering (communicator 0 is the world).
    pub(crate) fn new() -> Shared {
        Shared {
            registry: Arc::new(Mutex::new(CommRegistry {
                by_key: HashMap::new(),
                next: 1,
            })),
            callsites: Callsites::default(),
        }
    }

    /// The translator of world rank `rank` reading `path`, its compute bursts run at
    /// `speed` flop/s.
    pub(crate) fn translator(
        &self,
        rank: u32,
        path: String,
        speed: f64,
        by_size: bool,
    ) -> Translator {
        Translator {
            rank,
            path,
            speed,
            registry: self.registry.clone(),
            callsites: self.callsites.clone(),
            global_callsite: HashMap::new(),
            by_size,
            comms: HashMap::new(),
            queue: VecDeque::new(),
            prev_exit: None,
            local_ns: 0,
            local_min: HashMap::new(),
            cpu_scale: None,
            persistent: HashMap::new(),
            active: HashMap::new(),
            next_synthetic: 1 << 62,
            events: 0,
            ended: false,
        }
    }
}

impl Translator {
    fn err(&self, message: String) -> WorkloadError {
        WorkloadError::Syntax {
            path: self.path.clone(),
            line: self.events,
            message,
        }
    }

    /// The global callsite of a call of `call` (named `name`) at this rank's callsite
    /// `local` moving `bytes`.
    fn global_callsite(
        &mut self,
        t: &Tables,
        local: u32,
        call: u32,
        name: &str,
        bytes: Option<u64>,
    ) -> u32 {
        let bytes = bytes.filter(|_| self.by_size);
        if let Some(&g) = self.global_callsite.get(&(local, call, bytes)) {
            return g;
        }
        let frames: Vec<(String, u64)> = match t.callsites.get(&local) {
            Some(cs) => cs
                .frames
                .iter()
                .map(|f| {
                    let path = t
                        .modules
                        .get(&f.module)
                        .map(|m| m.path.clone())
                        .unwrap_or_default();
                    (path, f.offset)
                })
                .collect(),
            None => vec![(String::new(), u64::from(local))],
        };
        let g = self.callsites.intern(CallsiteKey {
            frames,
            function: name.to_string(),
            bytes,
        });
        self.global_callsite.insert((local, call, bytes), g);
        g
    }

    fn comm(&mut self, t: &Tables, local: i64) -> Result<LocalComm, WorkloadError> {
        let local = local as u32;
        if let Some(c) = self.comms.get(&local) {
            return Ok(c.clone());
        }
        let def = t
            .comms
            .get(&local)
            .cloned()
            .ok_or_else(|| self.err(format!("communicator {local} is used but not defined")))?;
        let lc = if def.kind == CommKind::World {
            LocalComm {
                id: 0,
                rank_of: HashMap::new(),
                size: def.size,
                inter: false,
            }
        } else {
            let id = {
                let mut reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
                let next = reg.next;
                let id = *reg.by_key.entry(def.key).or_insert(next);
                if id == next {
                    reg.next += 1;
                }
                id
            };
            let members: Vec<u32> = if def.kind == CommKind::Inter {
                def.remote.clone()
            } else {
                def.ranks.clone()
            };
            self.queue.push_back(Action::DefineComm {
                comm: id,
                members: def.ranks.clone(),
            });
            LocalComm {
                id,
                rank_of: members
                    .iter()
                    .enumerate()
                    .map(|(i, &w)| (w, i as u32))
                    .collect(),
                size: members.len() as u32,
                inter: def.kind == CommKind::Inter,
            }
        };
        self.comms.insert(local, lc.clone());
        Ok(lc)
    }

    fn comm_rank(&self, c: &LocalComm, world: i64) -> Option<u32> {
        if c.id == 0 {
            return (world >= 0).then_some(world as u32);
        }
        c.rank_of.get(&(world as u32)).copied()
    }

    fn synthetic(&mut self) -> ReqHandle {
        self.next_synthetic += 1;
        self.next_synthetic
    }

    /// The actions of one event.
    fn translate(&mut self, t: &Tables, name: &str, ev: &Event) -> Result<(), WorkloadError> {
        let fam = Family::of(name);
        let call = Call {
            t,
            name,
            ev,
            fam,
            nb: mpiscope_mpispec::is_nonblocking(name),
        };
        let a = &ev.args;
        // Calls without a recorded callsite are counted apart (id 0), not with the previous.
        let g = if ev.callsite != 0 {
            self.global_callsite(
                t,
                ev.callsite,
                ev.call,
                name,
                a.get(Slot::Bytes).map(|b| b.max(0) as u64),
            )
        } else {
            0
        };
        self.queue.push_back(Action::Callsite(g));
        if mpiscope_mpispec::is_persistent(name) {
            return self.persistent(&call);
        }
        match fam {
            _ if fam.is_send() => self.send(&call)?,
            Family::Recv | Family::Mrecv => self.recv(&call)?,
            Family::Sendrecv | Family::SendrecvReplace => self.sendrecv(&call)?,
            Family::Start | Family::Startall => self.start(ev),
            Family::Wait
            | Family::Waitall
            | Family::Waitany
            | Family::Waitsome
            | Family::Test
            | Family::Testall
            | Family::Testany
            | Family::Testsome => self.complete(&call),
            Family::Probe | Family::Mprobe | Family::Improbe => self.probe(&call)?,
            _ if mpiscope_mpispec::is_collective(name) && !fam.is_neighbor() => {
                self.collective(&call)?
            }
            Family::Init | Family::InitThread => {}
            Family::Finalize => {
                self.queue.push_back(Action::Finalize);
                self.ended = true;
            }
            _ => {
                // Local work (rank queries, timers, datatypes, ...).
                self.local_ns += self.local_call(ev);
            }
        }
        Ok(())
    }

    /// The communicator of the call.
    fn comm_of(&mut self, c: &Call) -> Result<LocalComm, WorkloadError> {
        self.comm(c.t, c.ev.args.get(Slot::Comm).unwrap_or(0))
    }

    /// A persistent request's creation (`MPI_Send_init`, ...): its template, for `start`.
    fn persistent(&mut self, c: &Call) -> Result<(), WorkloadError> {
        let lc = self.comm_of(c)?;
        let a = &c.ev.args;
        if let Some(id) = a.get(Slot::Request) {
            let send = !matches!(c.fam, Family::Recv | Family::Precv);
            self.persistent.insert(
                id,
                Persistent {
                    send,
                    peer: a.get(Slot::Peer).unwrap_or(PEER_NULL),
                    tag: a.get(Slot::Tag).unwrap_or(0),
                    bytes: c.bytes(Slot::Bytes),
                    comm: lc.id,
                },
            );
        }
        Ok(())
    }

    /// A send of any mode, blocking or not (to `MPI_PROC_NULL`: nothing).
    fn send(&mut self, c: &Call) -> Result<(), WorkloadError> {
        let a = &c.ev.args;
        let peer = a.get(Slot::Peer).unwrap_or(PEER_NULL);
        if peer == PEER_NULL {
            return Ok(());
        }
        let lc = self.comm_of(c)?;
        let dst = self.comm_rank(&lc, peer).ok_or_else(|| {
            self.err(format!(
                "{}: peer {peer} is not in communicator {}",
                c.name, lc.id
            ))
        })?;
        self.queue.push_back(Action::Send {
            dst,
            tag: a.get(Slot::Tag).unwrap_or(0),
            bytes: c.bytes(Slot::Bytes),
            comm: lc.id,
            req: c.request(),
            sync: c.fam == Family::Ssend,
        });
        Ok(())
    }

    /// A receive, blocking or not, from the source and with the tag the traced run matched
    /// when known.
    fn recv(&mut self, c: &Call) -> Result<(), WorkloadError> {
        let a = &c.ev.args;
        let lc = self.comm_of(c)?;
        let peer = a
            .get(Slot::StatusSource)
            .or(a.get(Slot::Peer))
            .unwrap_or(PEER_ANY);
        if peer == PEER_NULL {
            return Ok(());
        }
        let tag = a
            .get(Slot::StatusTag)
            .or(a.get(Slot::Tag))
            .unwrap_or(TAG_ANY);
        let src = if peer == PEER_ANY {
            ANY
        } else {
            i64::from(self.comm_rank(&lc, peer).ok_or_else(|| {
                self.err(format!(
                    "{}: peer {peer} is not in the communicator",
                    c.name
                ))
            })?)
        };
        self.queue.push_back(Action::Recv {
            src,
            tag: if tag == TAG_ANY { ANY } else { tag },
            bytes: a
                .get(Slot::StatusBytes)
                .map(|b| b.max(0) as u64)
                .unwrap_or(c.bytes(Slot::Bytes)),
            comm: lc.id,
            req: c.request(),
        });
        Ok(())
    }

    /// `MPI_Sendrecv` and `MPI_Sendrecv_replace`: a non-blocking send and receive (each
    /// unless its peer is `MPI_PROC_NULL`) and a wait of both.
    fn sendrecv(&mut self, c: &Call) -> Result<(), WorkloadError> {
        let a = &c.ev.args;
        let lc = self.comm_of(c)?;
        let dst = a.get(Slot::Peer).unwrap_or(PEER_NULL);
        let src = a
            .get(Slot::StatusSource)
            .or(a.get(Slot::RecvPeer))
            .unwrap_or(PEER_NULL);
        let mut waits = Vec::new();
        if dst != PEER_NULL {
            let d = self.comm_rank(&lc, dst).ok_or_else(|| {
                self.err(format!("{}: peer {dst} is not in the communicator", c.name))
            })?;
            let h = self.synthetic();
            self.queue.push_back(Action::Send {
                dst: d,
                tag: a.get(Slot::Tag).unwrap_or(0),
                bytes: c.bytes(Slot::Bytes),
                comm: lc.id,
                req: Some(h),
                sync: false,
            });
            waits.push(h);
        }
        if src != PEER_NULL {
            let s = if src == PEER_ANY {
                ANY
            } else {
                i64::from(self.comm_rank(&lc, src).ok_or_else(|| {
                    self.err(format!("{}: peer {src} is not in the communicator", c.name))
                })?)
            };
            let h = self.synthetic();
            let tag = a
                .get(Slot::StatusTag)
                .or(a.get(Slot::RecvTag))
                .unwrap_or(TAG_ANY);
            let rb = if c.fam == Family::Sendrecv {
                c.bytes(Slot::RecvBytes)
            } else {
                c.bytes(Slot::Bytes)
            };
            self.queue.push_back(Action::Recv {
                src: s,
                tag: if tag == TAG_ANY { ANY } else { tag },
                bytes: a
                    .get(Slot::StatusBytes)
                    .map(|b| b.max(0) as u64)
                    .unwrap_or(rb),
                comm: lc.id,
                req: Some(h),
            });
            waits.push(h);
        }
        if !waits.is_empty() {
            self.queue.push_back(Action::Wait { reqs: waits });
        }
        Ok(())
    }

    /// `MPI_Start` and `MPI_Startall`: an instance of each persistent request started, under
    /// a handle of its own.
    fn start(&mut self, ev: &Event) {
        for id in ev.requests() {
            let Some(p) = self.persistent.get(&id).cloned() else {
                continue;
            };
            if p.peer == PEER_NULL {
                continue;
            }
            let c = self
                .comms
                .values()
                .find(|c| c.id == p.comm)
                .cloned()
                .unwrap_or(LocalComm {
                    id: 0,
                    rank_of: HashMap::new(),
                    size: 0,
                    inter: false,
                });
            let h = self.synthetic();
            self.active.insert(id, h);
            let r = if p.peer == PEER_ANY {
                ANY
            } else {
                i64::from(self.comm_rank(&c, p.peer).unwrap_or(0))
            };
            if p.send {
                self.queue.push_back(Action::Send {
                    dst: r as u32,
                    tag: p.tag,
                    bytes: p.bytes,
                    comm: p.comm,
                    req: Some(h),
                    sync: false,
                });
            } else {
                self.queue.push_back(Action::Recv {
                    src: r,
                    tag: if p.tag == TAG_ANY { ANY } else { p.tag },
                    bytes: p.bytes,
                    comm: p.comm,
                    req: Some(h),
                });
            }
        }
    }

    /// Waits and tests: a wait of the requests the call completed (a failed test, none).
    fn complete(&mut self, c: &Call) {
        let reqs: Vec<ReqHandle> =
            c.ev.completions()
                .into_iter()
                .map(|done| {
                    self.active
                        .get(&done.request)
                        .copied()
                        .unwrap_or(done.request as ReqHandle)
                })
                .collect();
        let failed_test = c.fam.is_test() && c.ev.args.get(Slot::Flag) == Some(0);
        if !failed_test && !reqs.is_empty() {
            self.queue.push_back(Action::Wait { reqs });
        }
    }

    /// Probes: failed polls are skipped; a successful one waits for the message.
    fn probe(&mut self, c: &Call) -> Result<(), WorkloadError> {
        let a = &c.ev.args;
        // `MPI_Iprobe` (family `Probe`, non-blocking) and `MPI_Improbe` poll: only a
        // successful poll waits for its message.
        let polled = c.nb || c.fam == Family::Improbe;
        if polled && a.get(Slot::Flag) != Some(1) {
            return Ok(());
        }
        let lc = self.comm_of(c)?;
        let peer = a
            .get(Slot::StatusSource)
            .or(a.get(Slot::Peer))
            .unwrap_or(PEER_ANY);
        let src = if peer == PEER_ANY {
            ANY
        } else {
            self.comm_rank(&lc, peer).map(i64::from).unwrap_or(ANY)
        };
        let tag = a
            .get(Slot::StatusTag)
            .or(a.get(Slot::Tag))
            .unwrap_or(TAG_ANY);
        self.queue.push_back(Action::Probe {
            src,
            tag: if tag == TAG_ANY { ANY } else { tag },
            comm: lc.id,
        });
        Ok(())
    }

    /// A collective on an intracommunicator (intercommunicator collectives are not modeled:
    /// their time counts as local work).
    fn collective(&mut self, c: &Call) -> Result<(), WorkloadError> {
        let lc = self.comm_of(c)?;
        if lc.inter {
            self.local_ns += c.ev.duration();
            return Ok(());
        }
        let me = self
            .comm_rank(&lc, i64::from(self.rank))
            .ok_or_else(|| self.err(format!("{}: rank is not in its communicator", c.name)))?;
        let root_world = c.ev.args.get(Slot::Root).unwrap_or(0);
        let root = if root_world == PEER_ROOT {
            me
        } else {
            self.comm_rank(&lc, root_world).unwrap_or(0)
        };
        let args = collective::args(c.ev, c.fam.name(), lc.size, me, root);
        self.queue.push_back(Action::Collective {
            args,
            comm: lc.id,
            comp_flops: 0.0,
            req: c.request(),
        });
        Ok(())
    }
}

/// One call being translated: the tables, the function's name and family, the event.
struct Call<'a> {
    t: &'a Tables,
    name: &'a str,
    ev: &'a Event,
    fam: Family,
    /// The non-blocking variant.
    nb: bool,
}

impl Call<'_> {
    /// A byte count of the event (0 when absent, negative values as 0).
    fn bytes(&self, s: Slot) -> u64 {
        self.ev.args.get(s).unwrap_or(0).max(0) as u64
    }

    /// The request of a non-blocking call.
    fn request(&self) -> Option<ReqHandle> {
        if self.nb {
            self.ev.args.get(Slot::Request).map(|r| r as ReqHandle)
        } else {
            None
        }
    }
}

impl Translator {
    /// The CPU work (ns) of a local call (a rank query, a timer, a datatype operation):
    /// its wall time, or with CPU times ([`Translator::use_cpu_time`]) the shortest wall
    /// time the same call (function, callsite and bytes) took so far on this rank. The
    /// recorder reads the CPU clock for bursts only, and a rank that shares its core is
    /// often preempted inside a call: an `MPI_Wtime` that returns after the other rank's
    /// time slice lasted milliseconds of which it computed a fraction of a microsecond.
    /// Waiting for a core only lengthens a call, and the same call does the same work, so
    /// the shortest is its work; taken as its wall time, the wait would be replayed as work
    /// on the core the simulator shares again (counted twice).
    fn local_call(&mut self, ev: &Event) -> u64 {
        let wall = ev.duration();
        if self.cpu_scale.is_none() {
            return wall;
        }
        let key = (ev.call, ev.callsite, ev.args.get(Slot::Bytes).unwrap_or(-1));
        let min = self.local_min.entry(key).or_insert(wall);
        *min = (*min).min(wall);
        *min
    }

    /// Makes compute bursts the CPU work the trace recorded (format 1.2), not their wall
    /// time: a burst whose CPU time is known computes for that long (its wall time when
    /// the CPU time is longer, which only the clocks' granularity makes), one without (too
    /// short for the recorder to read the CPU clock, so not stretched by a wait for a core)
    /// for its wall time. The simulator's core sharing then adds the waiting of ranks that
    /// share cores, once.
    ///
    /// `efficiency` is the per-core speed factor of the platform's calibration
    /// (`mpiscope/core-efficiency`) with as many cores busy as the traced run kept busy on
    /// the rank's host. A recorded CPU time was measured on a core slowed that much by its
    /// busy neighbours, and the simulator slows the replayed burst by the factor of its own
    /// busy cores: the work is the CPU time times `efficiency`, so that a replay with the
    /// traced run's busy cores gives back the CPU time (the efficiency is applied once, by
    /// the simulator), and one with fewer busy cores a shorter burst.
    pub(crate) fn use_cpu_time(&mut self, efficiency: f64) {
        self.cpu_scale = Some(efficiency);
    }

    /// The actions of the next event of the rank (`name` is its function): the computation
    /// since the previous call, then the call's own.
    pub(crate) fn event(
        &mut self,
        t: &Tables,
        name: &str,
        ev: &Event,
    ) -> Result<(), WorkloadError> {
        self.events += 1;
        if ev.thread != 0 {
            return Ok(());
        }
        if let Some(prev) = self.prev_exit {
            let wall = ev.t_enter.saturating_sub(prev);
            let local = std::mem::take(&mut self.local_ns);
            let (ns, factor) = match self.cpu_scale {
                None => (wall + local, 1.0),
                Some(e) => (ev.cpu_ns.map_or(wall, |c| c.min(wall)) + local, e),
            };
            if ns > 0 {
                let flops = ns as f64 * 1e-9 * self.speed;
                self.queue.push_back(Action::Compute {
                    flops: if factor == 1.0 { flops } else { flops * factor },
                });
            }
        }
        self.prev_exit = Some(ev.t_exit);
        self.translate(t, name, ev)
    }
}

#[cfg(test)]
mod tests;

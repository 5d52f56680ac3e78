//! Replay of mpiscope traces (`mpiscope trace` run directories).
//!
//! Each rank's events become actions: the time between two MPI calls becomes a computation
//! (its duration times the traced host's speed, so it scales with the simulated host's
//! speed); point-to-point calls, waits, probes and collectives keep their arguments
//! (communicators, ranks, tags, sizes, roots, per-peer counts); receives use the source and
//! tag actually matched in the traced run; tests and probes that failed in the traced run are
//! skipped (the simulated run decides when messages arrive), successful ones become waits and
//! blocking probes. Calls that only work locally (`MPI_Comm_rank`, `MPI_Wtime`, datatype
//! calls...) count as computation.
//!
//! One thread per rank is replayed, the one that initialized MPI; a communication call of
//! another thread stops the replay with an error (`threads.rs`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use mpiscope_trace::{
    CommKind, Event, ListKind, RankReader, RunDir, Slot, Tables, PEER_ANY, PEER_NULL, PEER_ROOT,
    TAG_ANY,
};

use super::threads::{is_replayed, rest_on_main_thread, several_threads};
use super::{Action, CommId, Outcome, RankWorkload, ReqHandle, WorkloadError, ANY};
use crate::coll::{CollArgs, Collective};

/// Options of a trace replay.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// Speed (flop/s) of the traced hosts: compute bursts become `seconds × speed` flops.
    /// `None`: the simulated host's own speed (bursts keep their traced durations there).
    pub traced_speed: Option<f64>,
    /// Count each message size at a callsite as a callsite of its own (the replay then
    /// reports time per callsite and size, as mpiP's message-size statistics do).
    pub callsites_by_size: bool,
}

/// Communicator keys to simulation ids, shared by all ranks.
/// Callsites of all ranks under one numbering: ranks number their callsites in their own
/// order, so the same source line has different ids in different rank files. A callsite is
/// a call stack and the MPI function called there (and the message size, with
/// [`TraceOptions::callsites_by_size`]). Id 0 is unknown; global id `g` is `sites[g - 1]`.
#[derive(Debug, Default, Clone)]
pub struct Callsites {
    inner: Arc<Mutex<CallsiteTable>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CallsiteKey {
    /// Frames as (module path, offset), innermost first.
    frames: Vec<(String, u64)>,
    function: String,
    bytes: Option<u64>,
}

#[derive(Debug, Default)]
struct CallsiteTable {
    by_key: HashMap<CallsiteKey, u32>,
    sites: Vec<CallsiteKey>,
}

impl Callsites {
    fn site<T>(&self, id: u32, f: impl FnOnce(&CallsiteKey) -> Option<T>) -> Option<T> {
        let t = self.inner.lock().ok()?;
        f(t.sites.get((id as usize).checked_sub(1)?)?)
    }

    /// The innermost frame of global callsite `id`: (object file, file-relative address).
    pub fn innermost(&self, id: u32) -> Option<(String, u64)> {
        self.site(id, |k| k.frames.first().cloned())
    }

    /// The MPI function called at callsite `id`.
    pub fn function(&self, id: u32) -> Option<String> {
        self.site(id, |k| Some(k.function.clone()))
    }

    /// The message size of callsite `id`, when callsites are split by size.
    pub fn bytes(&self, id: u32) -> Option<u64> {
        self.site(id, |k| k.bytes)
    }

    fn intern(&self, key: CallsiteKey) -> u32 {
        let Ok(mut t) = self.inner.lock() else {
            return 0;
        };
        if let Some(&g) = t.by_key.get(&key) {
            return g;
        }
        t.sites.push(key.clone());
        let g = t.sites.len() as u32;
        t.by_key.insert(key, g);
        g
    }
}

#[derive(Debug, Default)]
pub(crate) struct CommRegistry {
    by_key: HashMap<u64, CommId>,
    next: CommId,
}

/// Reads a run directory: one workload per rank.
pub fn load(
    run: &RunDir,
    options: TraceOptions,
    host_speeds: &[f64],
) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    load_with_callsites(run, options, host_speeds).map(|(w, _)| w)
}

/// As [`load`], plus the table that names the callsite ids the workloads report (filled as
/// the replay reads the traces).
pub fn load_with_callsites(
    run: &RunDir,
    options: TraceOptions,
    host_speeds: &[f64],
) -> Result<(Vec<Box<dyn RankWorkload>>, Callsites), WorkloadError> {
    let shared = Shared::new();
    let n = run.ranks();
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let reader = run.open_rank(r).map_err(|e| WorkloadError::Io {
            path: run.path.display().to_string(),
            message: e.to_string(),
        })?;
        let speed = options
            .traced_speed
            .unwrap_or_else(|| host_speeds.get(r as usize).copied().unwrap_or(1e9));
        let tr = shared.translator(
            r,
            reader.path().display().to_string(),
            speed,
            options.callsites_by_size,
        );
        out.push(Box::new(TraceRank { reader, tr }));
    }
    Ok((out, shared.callsites))
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
/// replay of rank files ([`TraceRank`]) and of structural files
/// ([`super::structural`]), which rebuild the events and feed them here.
pub(crate) struct Translator {
    rank: u32,
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
            persistent: HashMap::new(),
            active: HashMap::new(),
            next_synthetic: 1 << 62,
            events: 0,
            ended: false,
        }
    }
}

struct TraceRank {
    reader: RankReader<std::io::BufReader<std::fs::File>>,
    tr: Translator,
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
        let a = &ev.args;
        let fam = mpiscope_mpispec::family(name);
        let nb = mpiscope_mpispec::is_nonblocking(name);
        let req = a.get(Slot::Request);
        let bytes = |s: Slot| a.get(s).unwrap_or(0).max(0) as u64;
        let comm_of = |me: &mut Self| -> Result<LocalComm, WorkloadError> {
            me.comm(t, a.get(Slot::Comm).unwrap_or(0))
        };
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
            let c = comm_of(self)?;
            if let Some(id) = req {
                let send = !matches!(fam.as_str(), "recv" | "precv");
                self.persistent.insert(
                    id,
                    Persistent {
                        send,
                        peer: a.get(Slot::Peer).unwrap_or(PEER_NULL),
                        tag: a.get(Slot::Tag).unwrap_or(0),
                        bytes: bytes(Slot::Bytes),
                        comm: c.id,
                    },
                );
            }
            return Ok(());
        }
        match fam.as_str() {
            "send" | "ssend" | "bsend" | "rsend" => {
                let peer = a.get(Slot::Peer).unwrap_or(PEER_NULL);
                if peer == PEER_NULL {
                    return Ok(());
                }
                let c = comm_of(self)?;
                let dst = self.comm_rank(&c, peer).ok_or_else(|| {
                    self.err(format!(
                        "{name}: peer {peer} is not in communicator {}",
                        c.id
                    ))
                })?;
                self.queue.push_back(Action::Send {
                    dst,
                    tag: a.get(Slot::Tag).unwrap_or(0),
                    bytes: bytes(Slot::Bytes),
                    comm: c.id,
                    req: if nb {
                        req.map(|r| r as ReqHandle)
                    } else {
                        None
                    },
                    sync: fam == "ssend",
                });
            }
            "recv" | "mrecv" => {
                let c = comm_of(self)?;
                // The source and tag the traced run matched, when known.
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
                    i64::from(self.comm_rank(&c, peer).ok_or_else(|| {
                        self.err(format!("{name}: peer {peer} is not in the communicator"))
                    })?)
                };
                self.queue.push_back(Action::Recv {
                    src,
                    tag: if tag == TAG_ANY { ANY } else { tag },
                    bytes: a
                        .get(Slot::StatusBytes)
                        .map(|b| b.max(0) as u64)
                        .unwrap_or(bytes(Slot::Bytes)),
                    comm: c.id,
                    req: if nb {
                        req.map(|r| r as ReqHandle)
                    } else {
                        None
                    },
                });
            }
            "sendrecv" | "sendrecv_replace" => {
                let c = comm_of(self)?;
                let dst = a.get(Slot::Peer).unwrap_or(PEER_NULL);
                let src = a
                    .get(Slot::StatusSource)
                    .or(a.get(Slot::RecvPeer))
                    .unwrap_or(PEER_NULL);
                let mut waits = Vec::new();
                if dst != PEER_NULL {
                    let d = self.comm_rank(&c, dst).ok_or_else(|| {
                        self.err(format!("{name}: peer {dst} is not in the communicator"))
                    })?;
                    let h = self.synthetic();
                    self.queue.push_back(Action::Send {
                        dst: d,
                        tag: a.get(Slot::Tag).unwrap_or(0),
                        bytes: bytes(Slot::Bytes),
                        comm: c.id,
                        req: Some(h),
                        sync: false,
                    });
                    waits.push(h);
                }
                if src != PEER_NULL {
                    let s = if src == PEER_ANY {
                        ANY
                    } else {
                        i64::from(self.comm_rank(&c, src).ok_or_else(|| {
                            self.err(format!("{name}: peer {src} is not in the communicator"))
                        })?)
                    };
                    let h = self.synthetic();
                    let tag = a
                        .get(Slot::StatusTag)
                        .or(a.get(Slot::RecvTag))
                        .unwrap_or(TAG_ANY);
                    let rb = if fam == "sendrecv" {
                        bytes(Slot::RecvBytes)
                    } else {
                        bytes(Slot::Bytes)
                    };
                    self.queue.push_back(Action::Recv {
                        src: s,
                        tag: if tag == TAG_ANY { ANY } else { tag },
                        bytes: a
                            .get(Slot::StatusBytes)
                            .map(|b| b.max(0) as u64)
                            .unwrap_or(rb),
                        comm: c.id,
                        req: Some(h),
                    });
                    waits.push(h);
                }
                if !waits.is_empty() {
                    self.queue.push_back(Action::Wait { reqs: waits });
                }
            }
            "start" | "startall" => {
                let ids: Vec<i64> = match ev.list(ListKind::Requests) {
                    Some(l) => l.to_vec(),
                    None => a.get(Slot::Request).into_iter().collect(),
                };
                for id in ids {
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
            "wait" | "waitall" | "waitany" | "waitsome" | "test" | "testall" | "testany"
            | "testsome" => {
                let reqs: Vec<ReqHandle> = ev
                    .completions()
                    .into_iter()
                    .map(|c| {
                        self.active
                            .get(&c.request)
                            .copied()
                            .unwrap_or(c.request as ReqHandle)
                    })
                    .collect();
                let failed_test = fam.starts_with("test") && a.get(Slot::Flag) == Some(0);
                if !failed_test && !reqs.is_empty() {
                    self.queue.push_back(Action::Wait { reqs });
                }
            }
            "probe" | "mprobe" | "improbe" | "iprobe" => {
                // Failed polls are skipped; a successful one waits for the message.
                let polled = fam == "improbe" || fam == "iprobe";
                if polled && a.get(Slot::Flag) != Some(1) {
                    return Ok(());
                }
                let c = comm_of(self)?;
                let peer = a
                    .get(Slot::StatusSource)
                    .or(a.get(Slot::Peer))
                    .unwrap_or(PEER_ANY);
                let src = if peer == PEER_ANY {
                    ANY
                } else {
                    self.comm_rank(&c, peer).map(i64::from).unwrap_or(ANY)
                };
                let tag = a
                    .get(Slot::StatusTag)
                    .or(a.get(Slot::Tag))
                    .unwrap_or(TAG_ANY);
                self.queue.push_back(Action::Probe {
                    src,
                    tag: if tag == TAG_ANY { ANY } else { tag },
                    comm: c.id,
                });
            }
            _ if mpiscope_mpispec::is_collective(name) && !fam.starts_with("neighbor") => {
                let c = comm_of(self)?;
                if c.inter {
                    // Intercommunicator collectives are not modeled: local time.
                    self.local_ns += ev.duration();
                    return Ok(());
                }
                let me = self
                    .comm_rank(&c, i64::from(self.rank))
                    .ok_or_else(|| self.err(format!("{name}: rank is not in its communicator")))?;
                let kind = match fam.as_str() {
                    "barrier" => Collective::Barrier,
                    "bcast" => Collective::Bcast,
                    "reduce" => Collective::Reduce,
                    "allreduce" => Collective::Allreduce,
                    "alltoall" => Collective::Alltoall,
                    "alltoallv" | "alltoallw" => Collective::Alltoallv,
                    "gather" => Collective::Gather,
                    "gatherv" => Collective::Gatherv,
                    "scatter" => Collective::Scatter,
                    "scatterv" => Collective::Scatterv,
                    "allgather" => Collective::Allgather,
                    "allgatherv" => Collective::Allgatherv,
                    "reduce_scatter" | "reduce_scatter_block" => Collective::ReduceScatter,
                    "scan" => Collective::Scan,
                    _ => Collective::Exscan,
                };
                let root_world = a.get(Slot::Root).unwrap_or(0);
                let root = if root_world == PEER_ROOT {
                    me
                } else {
                    self.comm_rank(&c, root_world).unwrap_or(0)
                };
                let ds = a.get(Slot::DtypeSize).unwrap_or(1).max(1) as u64;
                let dr = a.get(Slot::RecvDtypeSize).unwrap_or(ds as i64).max(1) as u64;
                let count = a.get(Slot::Count).unwrap_or(0).max(0) as u64;
                let recv_count = a
                    .get(Slot::RecvCount)
                    .map(|v| v.max(0) as u64)
                    .unwrap_or(count);
                let list = |k: ListKind| {
                    ev.list(k)
                        .map(|l| l.iter().map(|&v| v.max(0) as u64).collect::<Vec<u64>>())
                        .unwrap_or_default()
                };
                let mut send_counts = list(ListKind::SendCounts);
                let mut recv_counts = list(ListKind::RecvCounts);
                if kind == Collective::Alltoallv && fam == "alltoallw" {
                    // Per-peer datatypes: counted in bytes.
                    let st = list(ListKind::SendTypeSizes);
                    let rt = list(ListKind::RecvTypeSizes);
                    send_counts = send_counts
                        .iter()
                        .zip(st.iter().chain(std::iter::repeat(&1)))
                        .map(|(c, s)| c * s)
                        .collect();
                    recv_counts = recv_counts
                        .iter()
                        .zip(rt.iter().chain(std::iter::repeat(&1)))
                        .map(|(c, s)| c * s)
                        .collect();
                }
                let (ds, dr) = if fam == "alltoallw" { (1, 1) } else { (ds, dr) };
                let (count, recv_count) = match kind {
                    Collective::ReduceScatter if fam == "reduce_scatter_block" => {
                        let rc = recv_count;
                        recv_counts = vec![rc; c.size as usize];
                        (rc * u64::from(c.size), rc)
                    }
                    _ => (count, recv_count),
                };
                let n = c.size as usize;
                for v in [&mut send_counts, &mut recv_counts] {
                    if !v.is_empty() && v.len() != n {
                        v.resize(n, 0);
                    }
                }
                if matches!(kind, Collective::Alltoallv) {
                    if send_counts.is_empty() {
                        send_counts = vec![0; n];
                    }
                    if recv_counts.is_empty() {
                        recv_counts = vec![0; n];
                    }
                }
                if matches!(
                    kind,
                    Collective::Gatherv | Collective::Allgatherv | Collective::ReduceScatter
                ) && recv_counts.is_empty()
                {
                    recv_counts = vec![recv_count; n];
                }
                if kind == Collective::Scatterv && send_counts.is_empty() {
                    send_counts = vec![count; n];
                }
                let args = CollArgs {
                    kind,
                    size: c.size,
                    rank: me,
                    root,
                    count,
                    recv_count,
                    dtype_size: ds,
                    recv_dtype_size: dr,
                    send_counts,
                    recv_counts,
                };
                self.queue.push_back(Action::Collective {
                    args,
                    comm: c.id,
                    comp_flops: 0.0,
                    req: if nb {
                        req.map(|r| r as ReqHandle)
                    } else {
                        None
                    },
                });
            }
            "init" | "init_thread" => {}
            "finalize" => {
                self.queue.push_back(Action::Finalize);
                self.ended = true;
            }
            _ => {
                // Local work (rank queries, timers, datatypes, ...).
                self.local_ns += ev.duration();
            }
        }
        Ok(())
    }
}

impl Translator {
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
            let gap = ev.t_enter.saturating_sub(prev) + std::mem::take(&mut self.local_ns);
            if gap > 0 {
                self.queue.push_back(Action::Compute {
                    flops: gap as f64 * 1e-9 * self.speed,
                });
            }
        }
        self.prev_exit = Some(ev.t_exit);
        self.translate(t, name, ev)
    }
}

impl RankWorkload for TraceRank {
    fn next(&mut self, _last: Outcome) -> Option<Result<Action, WorkloadError>> {
        loop {
            if let Some(a) = self.tr.queue.pop_front() {
                return Some(Ok(a));
            }
            if self.tr.ended {
                return None;
            }
            let Some(ev) = self.reader.next_event() else {
                if let Some(e) = self.reader.stopped() {
                    if !e.is_truncation() {
                        return Some(Err(WorkloadError::Io {
                            path: self.reader.path().display().to_string(),
                            message: e.to_string(),
                        }));
                    }
                }
                self.tr.ended = true;
                return Some(Ok(Action::Finalize));
            };
            if ev.thread != 0 {
                let name = self.reader.tables().call_name(ev.call);
                if is_replayed(&name) {
                    let name = name.into_owned();
                    return Some(Err(several_threads(
                        &mut self.reader,
                        self.tr.rank,
                        self.tr.events + 1,
                        &ev,
                        &name,
                    )));
                }
                self.tr.events += 1;
                continue;
            }
            if ev.unfinished {
                // A call the rank was still inside when its record ended (a signal, a
                // hang): it never returned, so the replay ends the rank before it.
                self.tr.events += 1;
                continue;
            }
            let name = self.reader.tables().call_name(ev.call).into_owned();
            if let Err(e) = self.tr.event(self.reader.tables(), &name, &ev) {
                return Some(Err(e));
            }
            if self.tr.ended {
                // Other threads' blocks may follow the main thread's MPI_Finalize.
                let (reader, rank) = (&mut self.reader, self.tr.rank);
                if let Err(e) = rest_on_main_thread(reader, rank, &mut self.tr.events) {
                    return Some(Err(e));
                }
            }
        }
    }
}

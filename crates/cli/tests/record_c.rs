//! End-to-end tests of the recorder with a real `mpirun`: our own C MPI programs
//! (`tests/programs/c/*.c`) run with and without `mpiscope trace`, under Open MPI and MPICH.
//!
//! Each test checks that tracing does not change what the program prints, then walks the
//! trace of every rank event by event against what the program does (derived here by hand
//! from the program's logic, which each program describes in its header comment): the call
//! names in order, every recorded slot (exactly the expected set, no more, no less), the
//! lists, request ids tying completions to the calls that started them, communicator
//! definitions, thread indices, and the `mpiscope report --json` counts.
//!
//! Failures are collected, not raised at the first one, so that one run shows every
//! discrepancy; each names the rank, thread, phase of the program, event index and the
//! recorded event.
//!
//! Comments marked `Regression` point at assertions that caught recorder bugs, now fixed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use common::{Mpi, RankEvents};
use mpiscope_trace::{
    CommKind, Event, ListKind, Slot, Tables, NO_VALUE, PEER_ANY, PEER_NULL, PEER_ROOT, TAG_ANY,
};

/// In an expectation: the slot must be present, with any value.
const ANY: i64 = i64::MIN + 1;
/// Id of the world communicator.
const WORLD: i64 = 0;
/// `MPI_THREAD_MULTIPLE` in both Open MPI and MPICH.
const THREAD_MULTIPLE: i64 = 3;

// ------------------------------------------------------------------ expected arguments

/// Expected fixed arguments of one event: exactly these slots.
#[derive(Clone, Default, Debug)]
struct A(BTreeMap<Slot, i64>);

fn a() -> A {
    A::default()
}

impl A {
    fn s(mut self, slot: Slot, v: i64) -> A {
        self.0.insert(slot, v);
        self
    }
    fn comm(self, c: i64) -> A {
        self.s(Slot::Comm, c)
    }
    /// Peer, tag and communicator of a point-to-point call.
    fn p2p(self, peer: i64, tag: i64, comm: i64) -> A {
        self.s(Slot::Peer, peer).s(Slot::Tag, tag).comm(comm)
    }
    /// The (send) buffer: count, datatype size, bytes.
    fn buf(self, count: i64, size: i64) -> A {
        self.s(Slot::Count, count)
            .s(Slot::DtypeSize, size)
            .s(Slot::Bytes, count * size)
    }
    /// The receive buffer of a combined or collective call.
    fn rbuf(self, count: i64, size: i64) -> A {
        self.s(Slot::RecvCount, count)
            .s(Slot::RecvDtypeSize, size)
            .s(Slot::RecvBytes, count * size)
    }
    /// The receive half of a sendrecv.
    fn from(self, peer: i64, tag: i64) -> A {
        self.s(Slot::RecvPeer, peer).s(Slot::RecvTag, tag)
    }
    /// A decoded status.
    fn st(self, src: i64, tag: i64, bytes: i64) -> A {
        self.s(Slot::StatusSource, src)
            .s(Slot::StatusTag, tag)
            .s(Slot::StatusBytes, bytes)
    }
    fn req(self, id: i64) -> A {
        self.s(Slot::Request, id)
    }
    fn root(self, r: i64) -> A {
        self.s(Slot::Root, r)
    }
    fn op(self, id: i64) -> A {
        self.s(Slot::Op, id)
    }
    fn flag(self, f: i64) -> A {
        self.s(Slot::Flag, f)
    }
    fn n(self, len: i64) -> A {
        self.s(Slot::ArrayLen, len)
    }
}

/// Expected lists of one event: exactly these.
type L = Vec<(ListKind, Vec<i64>)>;

/// A completion: request id and, for a receive, (source, tag, bytes).
type Done = (i64, Option<(i64, i64, i64)>);

/// The `Completions` list of these completions.
fn done(items: &[Done]) -> Vec<i64> {
    let mut v = Vec::new();
    for &(id, st) in items {
        v.push(id);
        match st {
            Some((s, t, b)) => v.extend([s, t, b]),
            None => v.extend([NO_VALUE; 3]),
        }
    }
    v
}

fn show_val(v: i64) -> String {
    if v == NO_VALUE {
        "-".into()
    } else if v == ANY {
        "<any>".into()
    } else {
        v.to_string()
    }
}

/// An event as text, for failure messages.
fn show_event(name: &str, ev: &Event) -> String {
    let mut s = format!("{name}(thread {}", ev.thread);
    for (slot, v) in ev.args.iter() {
        s.push_str(&format!(" {}={}", slot.name(), show_val(v)));
    }
    for l in &ev.lists {
        s.push_str(&format!(
            " {}=[{}]",
            l.kind.name(),
            l.values
                .iter()
                .map(|&v| show_val(v))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    s.push(')');
    s
}

// ------------------------------------------------------------------ running

/// A program run with and without the recorder, and its trace.
struct Traced {
    dir: tempfile::TempDir,
    run: PathBuf,
    mpi: Mpi,
    prog: &'static str,
    np: u32,
    stdout: String,
    ranks: Vec<RankEvents>,
}

/// Builds `tests/programs/c/<prog>.c`, runs it on `np` ranks untraced and traced, checks
/// exit codes and that the traced stdout equals the untraced one, and reads every rank.
fn run_program(mpi: Mpi, prog: &'static str, np: u32) -> Traced {
    let extra: &[&str] = if prog == "threads" {
        &["-pthread"]
    } else {
        &[]
    };
    let exe = common::build(mpi, &format!("c/{prog}.c"), extra);
    let plain = common::run_plain(mpi, np, &exe, &[]);
    assert_eq!(
        plain.code,
        Some(0),
        "{prog} ({}, {np} ranks) failed untraced:\n{}\n{}",
        mpi.name(),
        plain.stdout,
        plain.stderr
    );
    assert!(
        !plain.stdout.contains("ERROR"),
        "{prog} untraced reports errors:\n{}",
        plain.stdout
    );
    assert!(
        plain.stdout.contains(&format!("{prog}: size={np} "))
            || (prog == "threads"
                && plain
                    .stdout
                    .contains("threads: MPI_THREAD_MULTIPLE not provided")),
        "{prog}: unexpected output:\n{}",
        plain.stdout
    );
    let dir = common::tempdir();
    let (traced, run) = common::run_traced(mpi, np, &exe, &[], &[], dir.path());
    assert_eq!(
        traced.code,
        Some(0),
        "{prog} ({}, {np} ranks) failed traced:\n{}\n{}",
        mpi.name(),
        traced.stdout,
        traced.stderr
    );
    assert_eq!(
        traced.stdout, plain.stdout,
        "{prog}: tracing changed the output (stderr: {})",
        traced.stderr
    );
    let ranks = (0..np).map(|r| common::read_rank(&run, r)).collect();
    Traced {
        dir,
        run,
        mpi,
        prog,
        np,
        stdout: plain.stdout,
        ranks,
    }
}

/// Checks that hold for every trace: trailer present, no read error, every call succeeded
/// and was recorded, times sane, calls of one thread in order and not overlapping, the
/// world communicator defined as id 0.
fn generic_checks(t: &Traced, fails: &mut Vec<String>) {
    let ctx = format!("{} {} np{}", t.mpi.name(), t.prog, t.np);
    for (r, re) in t.ranks.iter().enumerate() {
        if !re.complete {
            fails.push(format!("{ctx} rank {r}: no trailer (complete == false)"));
        }
        if let Some(s) = &re.stopped {
            fails.push(format!("{ctx} rank {r}: reading stopped: {s}"));
        }
        match re.tables.comms.get(&0) {
            Some(w) => {
                if w.kind != CommKind::World || w.size != t.np || !w.ranks.is_empty() {
                    fails.push(format!("{ctx} rank {r}: comm 0 is not the world: {w:?}"));
                }
            }
            None => fails.push(format!("{ctx} rank {r}: comm 0 is not defined")),
        }
        let mut last: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
        for (i, (name, ev)) in re.events.iter().enumerate() {
            let e = show_event(name, ev);
            if t.prog != "threads" && ev.thread != 0 {
                fails.push(format!(
                    "{ctx} rank {r} event #{i}: thread {} in a single-threaded program: {e}",
                    ev.thread
                ));
            }
            if ev.ret != 0 {
                fails.push(format!("{ctx} rank {r} event #{i}: ret {} in {e}", ev.ret));
            }
            if ev.skipped != 0 {
                fails.push(format!(
                    "{ctx} rank {r} event #{i}: skipped {} in {e}",
                    ev.skipped
                ));
            }
            if ev.t_exit < ev.t_enter {
                fails.push(format!(
                    "{ctx} rank {r} event #{i}: exit {} before entry {} in {e}",
                    ev.t_exit, ev.t_enter
                ));
            }
            if let Some(&(enter, exit)) = last.get(&ev.thread) {
                if ev.t_enter < enter || ev.t_enter < exit {
                    fails.push(format!(
                        "{ctx} rank {r} event #{i}: enters at {} before the previous call of its thread ({enter}..{exit}) ended: {e}",
                        ev.t_enter
                    ));
                }
            }
            last.insert(ev.thread, (ev.t_enter, ev.t_exit));
        }
    }
}

/// Compares `mpiscope report --json` with the calls the program makes (`expected`, summed
/// over ranks), and returns the report for further checks.
fn check_report(
    t: &Traced,
    expected: &BTreeMap<String, u64>,
    fails: &mut Vec<String>,
) -> serde_json::Value {
    let ctx = format!("{} {} np{} report", t.mpi.name(), t.prog, t.np);
    let rep = common::report_json(&t.run);
    if rep["ranks"] != t.np {
        fails.push(format!("{ctx}: ranks {}, expected {}", rep["ranks"], t.np));
    }
    let calls = rep["calls"].as_object().cloned().unwrap_or_default();
    let got: BTreeSet<&String> = calls.keys().collect();
    let want: BTreeSet<&String> = expected.keys().collect();
    if got != want {
        fails.push(format!(
            "{ctx}: functions differ: only in report {:?}, only expected {:?}",
            got.difference(&want).collect::<Vec<_>>(),
            want.difference(&got).collect::<Vec<_>>()
        ));
    }
    for (name, &n) in expected {
        let c = &calls.get(name).cloned().unwrap_or_default();
        for field in ["count", "recorded"] {
            if c[field].as_u64() != Some(n) {
                fails.push(format!(
                    "{ctx}: {name}.{field} = {}, expected {n}",
                    c[field]
                ));
            }
        }
        if c["fortran"].as_u64() != Some(0) {
            fails.push(format!(
                "{ctx}: {name}.fortran = {}, expected 0",
                c["fortran"]
            ));
        }
    }
    let per_rank = rep["per_rank"].as_array().cloned().unwrap_or_default();
    if per_rank.len() != t.np as usize {
        fails.push(format!(
            "{ctx}: {} per_rank entries, expected {}",
            per_rank.len(),
            t.np
        ));
    }
    for (i, pr) in per_rank.iter().enumerate() {
        if pr["rank"].as_u64() != Some(i as u64) || pr["complete"] != true {
            fails.push(format!(
                "{ctx}: per_rank[{i}] = rank {} complete {}",
                pr["rank"], pr["complete"]
            ));
        }
    }
    rep
}

/// Checks one byte total of the report.
fn check_report_bytes(
    ctx: &str,
    rep: &serde_json::Value,
    name: &str,
    field: &str,
    want: u64,
    fails: &mut Vec<String>,
) {
    let got = rep["calls"][name][field].as_u64();
    if got != Some(want) {
        fails.push(format!(
            "{ctx} report: {name}.{field} = {got:?}, expected {want}"
        ));
    }
}

/// Panics with every failure, if any. The trace directory is deleted unless
/// `MPISCOPE_TEST_KEEP=1` is set.
fn finish(t: Traced, fails: Vec<String>) {
    if fails.is_empty() {
        return;
    }
    let trace = if std::env::var_os("MPISCOPE_TEST_KEEP").is_some_and(|v| v == "1") {
        format!("trace kept in {}", t.dir.keep().join("trace").display())
    } else {
        "set MPISCOPE_TEST_KEEP=1 to keep the trace".to_string()
    };
    panic!(
        "{} {} np{}: {} trace check(s) failed ({trace}):\n  {}",
        t.mpi.name(),
        t.prog,
        t.np,
        fails.len(),
        fails.join("\n  ")
    );
}

// ------------------------------------------------------------------ walking a trace

/// What walking the traces found: failures and the calls the program made, by name.
#[derive(Default)]
struct Outcome {
    fails: Vec<String>,
    counts: BTreeMap<String, u64>,
}

impl Outcome {
    fn absorb(&mut self, s: Seq<'_>) {
        let (f, c) = s.finish();
        self.fails.extend(f);
        for (k, v) in c {
            *self.counts.entry(k).or_default() += v;
        }
    }
}

/// A cursor over the events of one thread of one rank, matched against expectations.
struct Seq<'a> {
    label: String,
    evs: Vec<&'a (String, Event)>,
    tables: &'a Tables,
    pos: usize,
    phase: String,
    fails: Vec<String>,
    counts: BTreeMap<String, u64>,
    reqs: BTreeSet<i64>,
}

impl<'a> Seq<'a> {
    fn new(t: &'a Traced, rank: u32, thread: u16) -> Seq<'a> {
        let re = &t.ranks[rank as usize];
        Seq {
            label: format!(
                "{} {} np{} rank {rank} thread {thread}",
                t.mpi.name(),
                t.prog,
                t.np
            ),
            evs: re
                .events
                .iter()
                .filter(|(_, e)| e.thread == thread)
                .collect(),
            tables: &re.tables,
            pos: 0,
            phase: "start".into(),
            fails: Vec::new(),
            counts: BTreeMap::new(),
            reqs: BTreeSet::new(),
        }
    }

    fn phase(&mut self, p: impl Into<String>) {
        self.phase = p.into();
    }

    fn fail(&mut self, msg: String) {
        self.fails.push(format!(
            "{} [{}] #{}: {msg}",
            self.label, self.phase, self.pos
        ));
    }

    fn peek(&self) -> Option<&'a (String, Event)> {
        self.evs.get(self.pos).copied()
    }

    /// The next event is `name` with `slot` equal to `v`.
    fn peek_is(&self, name: &str, slot: Slot, v: i64) -> bool {
        self.peek()
            .is_some_and(|(n, e)| n == name && e.args.get(slot) == Some(v))
    }

    /// A slot of the next event, if it is `name`.
    fn peek_slot(&self, name: &str, slot: Slot) -> Option<i64> {
        self.peek()
            .filter(|(n, _)| n == name)
            .and_then(|(_, e)| e.args.get(slot))
    }

    /// A list of the next event, if it is `name`.
    fn peek_list(&self, name: &str, kind: ListKind) -> Option<Vec<i64>> {
        self.peek()
            .filter(|(n, _)| n == name)
            .and_then(|(_, e)| e.list(kind))
            .map(|l| l.to_vec())
    }

    /// Takes the next event, which must be `name`; skips (and reports) a few unexpected
    /// events to resynchronize.
    fn take(&mut self, name: &str) -> Option<&'a Event> {
        *self.counts.entry(name.to_owned()).or_default() += 1;
        let Some((n, e)) = self.peek() else {
            self.fail(format!(
                "expected {name}, but the thread has no more events"
            ));
            return None;
        };
        if n == name {
            self.pos += 1;
            return Some(e);
        }
        let end = (self.pos + 16).min(self.evs.len());
        if let Some(i) = (self.pos..end).find(|&i| self.evs[i].0 == name) {
            let extra: Vec<String> = self.evs[self.pos..i]
                .iter()
                .map(|(n, e)| show_event(n, e))
                .collect();
            self.fail(format!(
                "unexpected event(s) before {name}: {}",
                extra.join(", ")
            ));
            self.pos = i + 1;
            return Some(&self.evs[i].1);
        }
        self.fail(format!("expected {name}, found {}", show_event(n, e)));
        None
    }

    /// The next event is `name` with exactly the slots of `want` and no list.
    fn ev(&mut self, name: &str, want: A) -> Option<&'a Event> {
        self.evl(name, want, Vec::new())
    }

    /// The next event is `name` with exactly the slots of `want` and the lists of `lists`.
    fn evl(&mut self, name: &str, want: A, lists: L) -> Option<&'a Event> {
        let ev = self.take(name)?;
        let mut errs = Vec::new();
        let got: BTreeMap<Slot, i64> = ev.args.iter().collect();
        for (s, &w) in &want.0 {
            match got.get(s) {
                None => errs.push(format!(
                    "slot {} missing (expected {})",
                    s.name(),
                    show_val(w)
                )),
                Some(&g) if w != ANY && g != w => errs.push(format!(
                    "slot {} = {}, expected {}",
                    s.name(),
                    show_val(g),
                    show_val(w)
                )),
                _ => {}
            }
        }
        for (s, &g) in &got {
            if !want.0.contains_key(s) {
                errs.push(format!("unexpected slot {} = {}", s.name(), show_val(g)));
            }
        }
        let got_l: BTreeMap<ListKind, &[i64]> = ev
            .lists
            .iter()
            .map(|l| (l.kind, l.values.as_slice()))
            .collect();
        let want_l: BTreeMap<ListKind, &[i64]> =
            lists.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        let kinds: BTreeSet<ListKind> = got_l.keys().chain(want_l.keys()).copied().collect();
        for k in kinds {
            let fmt = |v: Option<&&[i64]>| match v {
                None => "absent".to_string(),
                Some(v) => format!(
                    "[{}]",
                    v.iter().map(|&x| show_val(x)).collect::<Vec<_>>().join(",")
                ),
            };
            if got_l.get(&k) != want_l.get(&k) {
                errs.push(format!(
                    "list {} = {}, expected {}",
                    k.name(),
                    fmt(got_l.get(&k)),
                    fmt(want_l.get(&k))
                ));
            }
        }
        if !errs.is_empty() {
            let e = show_event(name, ev);
            self.fail(format!("{}; recorded {e}", errs.join("; ")));
        }
        Some(ev)
    }

    /// A call that creates a request (`want` without the `Request` slot): returns the new id,
    /// checked to be positive and unique on this rank.
    fn new_req(&mut self, name: &str, want: A) -> i64 {
        self.new_req_l(name, want, Vec::new())
    }

    /// Same as [`Seq::new_req`] with lists.
    fn new_req_l(&mut self, name: &str, want: A, lists: L) -> i64 {
        let fallback = -1000 - self.pos as i64;
        let Some(ev) = self.evl(name, want.req(ANY), lists) else {
            return fallback;
        };
        let Some(id) = ev.args.get(Slot::Request) else {
            return fallback;
        };
        if id <= 0 || !self.reqs.insert(id) {
            self.fail(format!(
                "{name}: request id {id} is not positive or not new"
            ));
        }
        id
    }

    /// The id of the reduction operation called `name` in this rank's tables.
    fn op(&mut self, name: &str) -> i64 {
        let ids: Vec<u32> = self
            .tables
            .ops
            .values()
            .filter(|o| o.name == name)
            .map(|o| o.id)
            .collect();
        if ids.len() != 1 {
            self.fail(format!(
                "{} operation(s) named {name} in the tables: {:?}",
                ids.len(),
                self.tables.ops
            ));
            return -999;
        }
        i64::from(ids[0])
    }

    /// A communicator created by `name` (`want` without `NewComm`): returns its id.
    fn new_comm(&mut self, name: &str, want: A) -> i64 {
        let fallback = -2000 - self.pos as i64;
        self.ev(name, want.s(Slot::NewComm, ANY))
            .and_then(|e| e.args.get(Slot::NewComm))
            .unwrap_or(fallback)
    }

    fn finish(mut self) -> (Vec<String>, BTreeMap<String, u64>) {
        if self.pos < self.evs.len() {
            let rest: Vec<String> = self.evs[self.pos..]
                .iter()
                .take(8)
                .map(|(n, e)| show_event(n, e))
                .collect();
            let n = self.evs.len() - self.pos;
            self.phase("end");
            self.fail(format!(
                "{n} unexpected trailing event(s): {}",
                rest.join(", ")
            ));
        }
        (self.fails, self.counts)
    }
}

// ------------------------------------------------------------------ p2p_blocking.c

fn expect_p2p_blocking(t: &Traced) -> Outcome {
    let n = i64::from(t.np);
    let mut out = Outcome::default();
    for r in 0..n {
        let mut s = Seq::new(t, r as u32, 0);
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));

        s.phase("1 ring");
        if n >= 2 {
            let recv = |s: &mut Seq| {
                s.ev(
                    "MPI_Recv",
                    a().p2p(prev, 100 + prev, WORLD).buf(100, 4).st(
                        prev,
                        100 + prev,
                        40 * (prev + 1),
                    ),
                );
                s.ev("MPI_Get_count", a());
            };
            let send = |s: &mut Seq| {
                s.ev(
                    "MPI_Send",
                    a().p2p(next, 100 + r, WORLD).buf(10 * (r + 1), 4),
                );
            };
            if r != 0 {
                recv(&mut s);
                send(&mut s);
            } else {
                send(&mut s);
                recv(&mut s);
            }
        }

        s.phase("2 ssend pairs");
        let partner = if r % 2 == 0 { r + 1 } else { r - 1 };
        if partner < n {
            if r % 2 == 0 {
                s.ev("MPI_Ssend", a().p2p(partner, 200, WORLD).buf(5, 8));
                s.ev(
                    "MPI_Recv",
                    a().p2p(partner, 201, WORLD).buf(5, 8).st(partner, 201, 40),
                );
                s.ev("MPI_Get_count", a());
            } else {
                s.ev(
                    "MPI_Recv",
                    a().p2p(partner, 200, WORLD).buf(5, 8).st(partner, 200, 40),
                );
                s.ev("MPI_Get_count", a());
                s.ev("MPI_Ssend", a().p2p(partner, 201, WORLD).buf(5, 8));
            }
        }

        s.phase("3 bsend");
        s.ev("MPI_Buffer_attach", a());
        s.ev("MPI_Bsend", a().p2p(next, 300, WORLD).buf(8, 4));
        s.ev(
            "MPI_Recv",
            a().p2p(prev, 300, WORLD).buf(8, 4).st(prev, 300, 32),
        );
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Buffer_detach", a());

        s.phase("4 rsend");
        let id = s.new_req("MPI_Irecv", a().p2p(prev, 400, WORLD).buf(6, 4));
        s.ev("MPI_Barrier", a().comm(WORLD));
        s.ev("MPI_Rsend", a().p2p(next, 400, WORLD).buf(6, 4));
        s.ev("MPI_Wait", a().req(id).st(prev, 400, 24));
        s.ev("MPI_Get_count", a());

        s.phase("5 sendrecv");
        s.ev(
            "MPI_Sendrecv",
            a().p2p(next, 500 + r, WORLD)
                .buf(4, 4)
                .from(prev, 500 + prev)
                .rbuf(4, 4)
                .st(prev, 500 + prev, 16),
        );
        s.ev("MPI_Get_count", a());

        s.phase("6 sendrecv_replace");
        s.ev(
            "MPI_Sendrecv_replace",
            a().p2p(prev, 600, WORLD)
                .buf(3, 8)
                .from(next, 600)
                .st(next, 600, 24),
        );
        s.ev("MPI_Get_count", a());

        s.phase("7 wildcards");
        if r != 0 {
            s.ev("MPI_Send", a().p2p(0, 700 + r, WORLD).buf(2 * r, 4));
        } else {
            let mut left: BTreeSet<i64> = (1..n).collect();
            for _ in 1..n {
                // The program receives from whichever sender the probe matched.
                let src = s.peek_slot("MPI_Probe", Slot::StatusSource).unwrap_or(-99);
                if !left.remove(&src) {
                    s.fail(format!(
                        "probe matched source {src}, not one of the senders left {left:?}"
                    ));
                }
                s.ev(
                    "MPI_Probe",
                    a().p2p(PEER_ANY, TAG_ANY, WORLD)
                        .st(src, 700 + src, 8 * src),
                );
                s.ev("MPI_Get_count", a());
                s.ev(
                    "MPI_Recv",
                    a().p2p(src, TAG_ANY, WORLD)
                        .buf(64, 4)
                        .st(src, 700 + src, 8 * src),
                );
                s.ev("MPI_Get_count", a());
            }
        }
        s.ev("MPI_Barrier", a().comm(WORLD));
        if r != 0 {
            s.ev("MPI_Send", a().p2p(0, 750 + r, WORLD).buf(r, 4));
        } else {
            let mut left: BTreeSet<i64> = (1..n).collect();
            for _ in 1..n {
                let src = s.peek_slot("MPI_Recv", Slot::StatusSource).unwrap_or(-99);
                if !left.remove(&src) {
                    s.fail(format!(
                        "wildcard receive got source {src}, not one of the senders left {left:?}"
                    ));
                }
                s.ev(
                    "MPI_Recv",
                    a().p2p(PEER_ANY, TAG_ANY, WORLD)
                        .buf(64, 4)
                        .st(src, 750 + src, 4 * src),
                );
                s.ev("MPI_Get_count", a());
            }
        }

        s.phase("8 proc_null");
        s.ev("MPI_Send", a().p2p(PEER_NULL, 800, WORLD).buf(5, 4));
        s.ev(
            "MPI_Recv",
            a().p2p(PEER_NULL, 800, WORLD)
                .buf(5, 4)
                .st(PEER_NULL, TAG_ANY, 0),
        );
        s.ev("MPI_Get_count", a());

        s.phase("9 zero bytes");
        if n >= 2 {
            let recv = |s: &mut Seq| {
                s.ev(
                    "MPI_Recv",
                    a().p2p(prev, 900, WORLD).buf(10, 4).st(prev, 900, 0),
                );
                s.ev("MPI_Get_count", a());
            };
            let send = |s: &mut Seq| {
                s.ev("MPI_Send", a().p2p(next, 900, WORLD).buf(0, 4));
            };
            if r != 0 {
                recv(&mut s);
                send(&mut s);
            } else {
                send(&mut s);
                recv(&mut s);
            }
        }

        s.phase("10 derived datatype");
        s.ev("MPI_Type_contiguous", a());
        s.ev("MPI_Type_commit", a());
        s.ev(
            "MPI_Sendrecv",
            a().p2p(next, 1000, WORLD)
                .buf(2, 24)
                .from(prev, 1000)
                .rbuf(2, 24)
                .st(prev, 1000, 48),
        );
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Type_free", a());

        s.phase("end");
        let sum = s.op("MPI_SUM");
        s.ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
    }
    out
}

fn check_p2p_blocking(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "p2p_blocking", np);
    let mut out = expect_p2p_blocking(&t);
    generic_checks(&t, &mut out.fails);
    let rep = check_report(&t, &out.counts, &mut out.fails);
    // Bytes moved, from the program's logic (PROC_NULL moves nothing).
    let n = u64::from(np);
    let ctx = format!("{} p2p_blocking np{np}", mpi.name());
    let ring = if n >= 2 { 20 * n * (n + 1) } else { 0 };
    // Sends: ring 40(r+1), wildcard phases 8r + 4r, zero-byte ring 0.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Send",
        "bytes_sent",
        ring + 6 * n * (n - 1),
        &mut out.fails,
    );
    // Receives (status bytes): ring, Ssend pairs 40 per paired rank, Bsend 32, wildcards at 0.
    let recv = ring + 40 * 2 * (n / 2) + 32 * n + 6 * n * (n - 1);
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Recv",
        "bytes_received",
        recv,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Sendrecv",
        "bytes_sent",
        n * (16 + 48),
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Sendrecv",
        "bytes_received",
        n * (16 + 48),
        &mut out.fails,
    );
    finish(t, out.fails);
}

// ------------------------------------------------------------------ p2p_nonblocking.c

fn expect_p2p_nonblocking(t: &Traced) -> Outcome {
    let n = i64::from(t.np);
    let mut out = Outcome::default();
    for r in 0..n {
        let mut s = Seq::new(t, r as u32, 0);
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));

        s.phase("A wait");
        let ra = s.new_req("MPI_Irecv", a().p2p(prev, 10, WORLD).buf(8, 4));
        let sa = s.new_req("MPI_Isend", a().p2p(next, 10, WORLD).buf(8, 4));
        s.ev("MPI_Wait", a().req(ra).st(prev, 10, 32));
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Wait", a().req(sa));

        // Regression (shared handle of immediately completed requests): from here on, a
        // Waitall/Waitsome/Testsome... over several send requests that completed at creation
        // lists the id of the last one for each of them (Open MPI returns the one
        // `ompi_request_empty` handle for every such Isend, MPICH a shared completed
        // request), e.g. Requests [r0, r1, s1, s1] instead of [r0, r1, s0, s1].
        for round in 0..2 {
            s.phase(format!("B waitall round {round}"));
            let (t0, t1, c) = (20 + 2 * round, 21 + 2 * round, 4 - round);
            let r0 = s.new_req("MPI_Irecv", a().p2p(prev, t0, WORLD).buf(c, 4));
            let r1 = s.new_req("MPI_Irecv", a().p2p(next, t1, WORLD).buf(c, 4));
            let s0 = s.new_req("MPI_Isend", a().p2p(next, t0, WORLD).buf(c, 4));
            let s1 = s.new_req("MPI_Isend", a().p2p(prev, t1, WORLD).buf(c, 4));
            // Statuses are decoded even when the program passes MPI_STATUSES_IGNORE (round 1).
            s.evl(
                "MPI_Waitall",
                a().n(4),
                vec![
                    (ListKind::Requests, vec![r0, r1, s0, s1]),
                    (
                        ListKind::Completions,
                        done(&[
                            (r0, Some((prev, t0, 4 * c))),
                            (r1, Some((next, t1, 4 * c))),
                            (s0, None),
                            (s1, None),
                        ]),
                    ),
                ],
            );
            if round == 0 {
                s.ev("MPI_Get_count", a());
                s.ev("MPI_Get_count", a());
            }
        }

        s.phase("C waitany");
        let mut rq: Vec<i64> = (0..3)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 30 + k, WORLD).buf(k + 1, 4)))
            .collect();
        let sq: Vec<i64> = (0..3)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 30 + k, WORLD).buf(k + 1, 4)))
            .collect();
        for _ in 0..3 {
            let idx = s.peek_slot("MPI_Waitany", Slot::Index).unwrap_or(-1);
            if !(0..3).contains(&idx) || rq[idx as usize] == 0 {
                s.fail(format!(
                    "Waitany completed index {idx}, not a pending request of {rq:?}"
                ));
            }
            let k = idx.clamp(0, 2);
            let before = rq.clone();
            rq[k as usize] = 0;
            s.evl(
                "MPI_Waitany",
                a().n(3)
                    .s(Slot::Index, idx)
                    .req(before[k as usize])
                    .st(prev, 30 + k, 4 * (k + 1)),
                vec![(ListKind::Requests, before)],
            );
            s.ev("MPI_Get_count", a());
        }
        s.evl(
            "MPI_Waitall",
            a().n(3),
            vec![
                (ListKind::Requests, sq.clone()),
                (
                    ListKind::Completions,
                    done(&[(sq[0], None), (sq[1], None), (sq[2], None)]),
                ),
            ],
        );

        s.phase("D waitsome");
        let mut rq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 40 + k, WORLD).buf(2, 4)))
            .collect();
        let sq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 40 + k, WORLD).buf(2, 4)))
            .collect();
        let mut left = 2;
        while left > 0 {
            let idx = s
                .peek_list("MPI_Waitsome", ListKind::Indices)
                .unwrap_or_default();
            if idx.is_empty()
                || idx
                    .iter()
                    .any(|&i| !(0..2).contains(&i) || rq[i as usize] == 0)
            {
                s.fail(format!(
                    "Waitsome completed indices {idx:?}, not pending requests of {rq:?}"
                ));
                left = 1; // give up after this event
            }
            let before = rq.clone();
            let mut comp = Vec::new();
            for &i in &idx {
                let k = i.clamp(0, 1);
                comp.push((before[k as usize], Some((prev, 40 + k, 8))));
                rq[k as usize] = 0;
            }
            s.evl(
                "MPI_Waitsome",
                a().n(2).s(Slot::Index, idx.len() as i64),
                vec![
                    (ListKind::Requests, before),
                    (ListKind::Indices, idx.clone()),
                    (ListKind::Completions, done(&comp)),
                ],
            );
            for _ in &idx {
                s.ev("MPI_Get_count", a());
            }
            left -= (idx.len() as i64).max(1);
        }
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, sq.clone()),
                (ListKind::Completions, done(&[(sq[0], None), (sq[1], None)])),
            ],
        );

        s.phase("E test");
        let g = s.new_req("MPI_Irecv", a().p2p(prev, 50, WORLD).buf(5, 4));
        // Nothing was sent yet: the first Test fails.
        s.ev("MPI_Test", a().req(g).flag(0));
        s.ev("MPI_Barrier", a().comm(WORLD));
        s.ev("MPI_Send", a().p2p(next, 50, WORLD).buf(5, 4));
        while s.peek_is("MPI_Test", Slot::Flag, 0) {
            s.ev("MPI_Test", a().req(g).flag(0));
        }
        s.ev("MPI_Test", a().req(g).flag(1).st(prev, 50, 20));
        s.ev("MPI_Get_count", a());

        s.phase("F testall");
        let h = s.new_req("MPI_Irecv", a().p2p(prev, 60, WORLD).buf(6, 4));
        let hs = s.new_req("MPI_Isend", a().p2p(next, 60, WORLD).buf(6, 4));
        while s.peek_is("MPI_Testall", Slot::Flag, 0) {
            s.evl(
                "MPI_Testall",
                a().n(2).flag(0),
                vec![(ListKind::Requests, vec![h, hs])],
            );
        }
        s.evl(
            "MPI_Testall",
            a().n(2).flag(1),
            vec![
                (ListKind::Requests, vec![h, hs]),
                (
                    ListKind::Completions,
                    done(&[(h, Some((prev, 60, 24))), (hs, None)]),
                ),
            ],
        );
        s.ev("MPI_Get_count", a());

        s.phase("G testany");
        let mut rq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 70 + k, WORLD).buf(1, 4)))
            .collect();
        let sq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 70 + k, WORLD).buf(1, 4)))
            .collect();
        let mut left = 2;
        while left > 0 {
            if s.peek_is("MPI_Testany", Slot::Flag, 0) {
                s.evl(
                    "MPI_Testany",
                    a().n(2).flag(0),
                    vec![(ListKind::Requests, rq.clone())],
                );
                continue;
            }
            let idx = s.peek_slot("MPI_Testany", Slot::Index).unwrap_or(-1);
            if !(0..2).contains(&idx) || rq[idx as usize] == 0 {
                s.fail(format!(
                    "Testany completed index {idx}, not a pending request of {rq:?}"
                ));
                left = 1;
            }
            let k = idx.clamp(0, 1);
            let before = rq.clone();
            rq[k as usize] = 0;
            s.evl(
                "MPI_Testany",
                a().n(2)
                    .flag(1)
                    .s(Slot::Index, idx)
                    .req(before[k as usize])
                    .st(prev, 70 + k, 4),
                vec![(ListKind::Requests, before)],
            );
            s.ev("MPI_Get_count", a());
            left -= 1;
        }
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, sq.clone()),
                (ListKind::Completions, done(&[(sq[0], None), (sq[1], None)])),
            ],
        );

        s.phase("H testsome");
        let mut rq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 80 + k, WORLD).buf(2, 4)))
            .collect();
        let sq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 80 + k, WORLD).buf(2, 4)))
            .collect();
        let mut left = 2;
        while left > 0 {
            if s.peek_is("MPI_Testsome", Slot::Index, 0) {
                s.evl(
                    "MPI_Testsome",
                    a().n(2).s(Slot::Index, 0),
                    vec![(ListKind::Requests, rq.clone())],
                );
                continue;
            }
            let idx = s
                .peek_list("MPI_Testsome", ListKind::Indices)
                .unwrap_or_default();
            if idx.is_empty()
                || idx
                    .iter()
                    .any(|&i| !(0..2).contains(&i) || rq[i as usize] == 0)
            {
                s.fail(format!(
                    "Testsome completed indices {idx:?}, not pending requests of {rq:?}"
                ));
                left = 1;
            }
            let before = rq.clone();
            let mut comp = Vec::new();
            for &i in &idx {
                let k = i.clamp(0, 1);
                comp.push((before[k as usize], Some((prev, 80 + k, 8))));
                rq[k as usize] = 0;
            }
            s.evl(
                "MPI_Testsome",
                a().n(2).s(Slot::Index, idx.len() as i64),
                vec![
                    (ListKind::Requests, before),
                    (ListKind::Indices, idx.clone()),
                    (ListKind::Completions, done(&comp)),
                ],
            );
            for _ in &idx {
                s.ev("MPI_Get_count", a());
            }
            left -= (idx.len() as i64).max(1);
        }
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, sq.clone()),
                (ListKind::Completions, done(&[(sq[0], None), (sq[1], None)])),
            ],
        );

        s.phase("I persistent");
        let pr = s.new_req("MPI_Recv_init", a().p2p(prev, 90, WORLD).buf(5, 4));
        let ps = s.new_req("MPI_Send_init", a().p2p(next, 90, WORLD).buf(5, 4));
        for _ in 0..3 {
            s.ev("MPI_Start", a().req(pr));
            s.ev("MPI_Start", a().req(ps));
            s.ev("MPI_Wait", a().req(pr).st(prev, 90, 20));
            s.ev("MPI_Wait", a().req(ps));
            s.ev("MPI_Get_count", a());
        }
        for _ in 0..2 {
            s.evl(
                "MPI_Startall",
                a().n(2),
                vec![(ListKind::Requests, vec![pr, ps])],
            );
            s.evl(
                "MPI_Waitall",
                a().n(2),
                vec![
                    (ListKind::Requests, vec![pr, ps]),
                    (
                        ListKind::Completions,
                        done(&[(pr, Some((prev, 90, 20))), (ps, None)]),
                    ),
                ],
            );
            s.ev("MPI_Get_count", a());
        }
        s.ev("MPI_Request_free", a().req(pr));
        s.ev("MPI_Request_free", a().req(ps));

        s.phase("J wildcard irecv");
        let q = s.new_req("MPI_Irecv", a().p2p(PEER_ANY, TAG_ANY, WORLD).buf(16, 4));
        let qs = s.new_req("MPI_Isend", a().p2p(next, 100 + r, WORLD).buf(3, 4));
        // MPI_STATUS_IGNORE: the recorder still decodes the status.
        s.ev("MPI_Wait", a().req(q).st(prev, 100 + prev, 12));
        s.ev("MPI_Wait", a().req(qs));
        s.ev("MPI_Barrier", a().comm(WORLD));

        s.phase("K iprobe");
        let ks = s.new_req("MPI_Isend", a().p2p(next, 110, WORLD).buf(7, 4));
        while s.peek_is("MPI_Iprobe", Slot::Flag, 0) {
            s.ev("MPI_Iprobe", a().p2p(PEER_ANY, 110, WORLD).flag(0));
        }
        s.ev(
            "MPI_Iprobe",
            a().p2p(PEER_ANY, 110, WORLD).flag(1).st(prev, 110, 28),
        );
        s.ev("MPI_Get_count", a());
        s.ev(
            "MPI_Recv",
            a().p2p(prev, 110, WORLD).buf(7, 4).st(prev, 110, 28),
        );
        s.ev("MPI_Wait", a().req(ks));

        s.phase("L mprobe");
        let ls = s.new_req("MPI_Isend", a().p2p(next, 120, WORLD).buf(9, 4));
        s.ev("MPI_Mprobe", a().p2p(prev, 120, WORLD).st(prev, 120, 36));
        s.ev("MPI_Get_count", a());
        // Regression (Open MPI): Open MPI's mpi.h names the datatype parameter of MPI_Mrecv
        // and MPI_Imrecv `type`, not `datatype`; count/dtsize/bytes were missing.
        s.ev("MPI_Mrecv", a().comm(WORLD).buf(9, 4).st(prev, 120, 36));
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Wait", a().req(ls));

        s.phase("M improbe");
        let ms = s.new_req("MPI_Isend", a().p2p(next, 130, WORLD).buf(11, 4));
        while s.peek_is("MPI_Improbe", Slot::Flag, 0) {
            s.ev("MPI_Improbe", a().p2p(PEER_ANY, 130, WORLD).flag(0));
        }
        s.ev(
            "MPI_Improbe",
            a().p2p(PEER_ANY, 130, WORLD).flag(1).st(prev, 130, 44),
        );
        // Regression (Open MPI): see MPI_Mrecv above.
        let im = s.new_req("MPI_Imrecv", a().comm(WORLD).buf(11, 4));
        s.ev("MPI_Wait", a().req(im).st(prev, 130, 44));
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Wait", a().req(ms));

        s.phase("end");
        let sum = s.op("MPI_SUM");
        s.ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
    }
    out
}

fn check_p2p_nonblocking(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "p2p_nonblocking", np);
    let mut out = expect_p2p_nonblocking(&t);
    generic_checks(&t, &mut out.fails);
    let rep = check_report(&t, &out.counts, &mut out.fails);
    let n = u64::from(np);
    let ctx = format!("{} p2p_nonblocking np{np}", mpi.name());
    // Persistent sends are credited when started: 5 starts of 20 bytes per rank.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Start",
        "bytes_sent",
        n * 3 * 20,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Start",
        "bytes_received",
        n * 3 * 20,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Startall",
        "bytes_sent",
        n * 2 * 20,
        &mut out.fails,
    );
    check_report_bytes(&ctx, &rep, "MPI_Send_init", "bytes_sent", 0, &mut out.fails);
    // Isend buffers: A 32, B 2x16 + 2x12, C 4+8+12, D 2x8, F 24, G 2x4, H 2x8, J 12, K 28,
    // L 36, M 44.
    let isend = 32 + 32 + 24 + 24 + 16 + 24 + 8 + 16 + 12 + 28 + 36 + 44;
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Isend",
        "bytes_sent",
        n * isend,
        &mut out.fails,
    );
    finish(t, out.fails);
}

// ------------------------------------------------------------------ collectives.c

fn expect_collectives(t: &Traced) -> Outcome {
    let n = i64::from(t.np);
    let tri = n * (n + 1) / 2;
    let mut out = Outcome::default();
    for r in 0..n {
        let mut s = Seq::new(t, r as u32, 0);
        let (sum, max) = (s.op("MPI_SUM"), s.op("MPI_MAX"));
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));
        let w = || a().comm(WORLD);
        let upto_n: Vec<i64> = (1..=n).collect();

        s.phase("rooted");
        s.ev("MPI_Barrier", w());
        s.ev("MPI_Bcast", w().buf(10, 4).root(0));
        s.ev("MPI_Reduce", w().buf(5, 8).root(1 % n).op(sum));
        s.ev("MPI_Allreduce", w().buf(3, 4).op(max));
        // Gather / Gatherv: the receive side only at the root.
        let gr = n - 1;
        s.ev(
            "MPI_Gather",
            if r == gr {
                w().buf(2, 4).rbuf(2, 4).root(gr)
            } else {
                w().buf(2, 4).root(gr)
            },
        );
        if r == 0 {
            s.evl(
                "MPI_Gatherv",
                w().buf(r + 1, 4)
                    .s(Slot::RecvDtypeSize, 4)
                    .s(Slot::RecvBytes, 4 * tri)
                    .root(0),
                vec![(ListKind::RecvCounts, upto_n.clone())],
            );
        } else {
            s.ev("MPI_Gatherv", w().buf(r + 1, 4).root(0));
        }
        // Scatter / Scatterv: the send side only at the root.
        let sr = n / 2;
        s.ev(
            "MPI_Scatter",
            if r == sr {
                w().buf(3, 4).rbuf(3, 4).root(sr)
            } else {
                w().rbuf(3, 4).root(sr)
            },
        );
        if r == 0 {
            s.evl(
                "MPI_Scatterv",
                w().s(Slot::DtypeSize, 4)
                    .s(Slot::Bytes, 4 * n * n)
                    .rbuf(2 * r + 1, 4)
                    .root(0),
                vec![(ListKind::SendCounts, (0..n).map(|i| 2 * i + 1).collect())],
            );
        } else {
            s.ev("MPI_Scatterv", w().rbuf(2 * r + 1, 4).root(0));
        }

        s.phase("all-to-all");
        s.ev("MPI_Allgather", w().buf(2, 4).rbuf(2, 4));
        s.evl(
            "MPI_Allgatherv",
            w().buf(r + 1, 8)
                .s(Slot::RecvDtypeSize, 8)
                .s(Slot::RecvBytes, 8 * tri),
            vec![(ListKind::RecvCounts, upto_n.clone())],
        );
        s.ev("MPI_Alltoall", w().buf(2, 4).rbuf(2, 4));
        let sc: Vec<i64> = (0..n).map(|j| (r + j) % 3 + 1).collect();
        let rc: Vec<i64> = (0..n).map(|j| (j + r) % 3 + 1).collect();
        s.evl(
            "MPI_Alltoallv",
            w().s(Slot::DtypeSize, 4)
                .s(Slot::Bytes, 4 * sc.iter().sum::<i64>())
                .s(Slot::RecvDtypeSize, 4)
                .s(Slot::RecvBytes, 4 * rc.iter().sum::<i64>()),
            vec![(ListKind::SendCounts, sc), (ListKind::RecvCounts, rc)],
        );
        let tsize = |x: i64| if x % 2 == 0 { 4 } else { 8 };
        let ssizes: Vec<i64> = (0..n).map(tsize).collect();
        s.evl(
            "MPI_Alltoallw",
            w().s(Slot::Bytes, ssizes.iter().sum())
                .s(Slot::RecvBytes, n * tsize(r)),
            vec![
                (ListKind::SendCounts, vec![1; n as usize]),
                (ListKind::SendTypeSizes, ssizes),
                (ListKind::RecvCounts, vec![1; n as usize]),
                (ListKind::RecvTypeSizes, vec![tsize(r); n as usize]),
            ],
        );

        s.phase("reductions");
        // Reduce_scatter: one datatype, a count per rank; Bytes is the whole send buffer.
        s.evl(
            "MPI_Reduce_scatter",
            w().s(Slot::DtypeSize, 4).s(Slot::Bytes, 4 * tri).op(sum),
            vec![(ListKind::RecvCounts, upto_n.clone())],
        );
        s.ev("MPI_Reduce_scatter_block", w().rbuf(2, 4).op(sum));
        s.ev("MPI_Scan", w().buf(2, 8).op(sum));
        s.ev("MPI_Exscan", w().buf(2, 4).op(sum));

        s.phase("in place");
        // Allreduce has one count for both buffers: in place, it still reduces 4 ints.
        s.ev("MPI_Allreduce", w().buf(4, 4).op(sum));
        // Allgather in place: no send side.
        s.ev("MPI_Allgather", w().rbuf(3, 4));

        s.phase("user op");
        s.ev("MPI_Op_create", a());
        let user = s.op("user#0");
        s.ev("MPI_Allreduce", w().buf(2, 4).op(user));
        s.ev("MPI_Op_free", a());

        s.phase("non-blocking");
        let ib = s.new_req("MPI_Ibarrier", w());
        s.ev("MPI_Wait", a().req(ib));
        let bc = s.new_req("MPI_Ibcast", w().buf(6, 4).root(1 % n));
        s.ev("MPI_Wait", a().req(bc));
        let ar = s.new_req("MPI_Iallreduce", w().buf(2, 8).op(sum));
        let aa = s.new_req("MPI_Ialltoall", w().buf(1, 4).rbuf(1, 4));
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, vec![ar, aa]),
                (ListKind::Completions, done(&[(ar, None), (aa, None)])),
            ],
        );
        let gv = if r == 0 {
            let want = w()
                .buf(1, 4)
                .s(Slot::RecvDtypeSize, 4)
                .s(Slot::RecvBytes, 4 * tri)
                .root(0);
            s.new_req_l(
                "MPI_Igatherv",
                want,
                vec![(ListKind::RecvCounts, upto_n.clone())],
            )
        } else {
            s.new_req("MPI_Igatherv", w().buf(r + 1, 4).root(0))
        };
        s.ev("MPI_Wait", a().req(gv));

        s.phase("end");
        s.ev("MPI_Allreduce", w().buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
    }
    out
}

fn check_collectives(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "collectives", np);
    let mut out = expect_collectives(&t);
    generic_checks(&t, &mut out.fails);
    let rep = check_report(&t, &out.counts, &mut out.fails);
    let n = u64::from(np);
    let ctx = format!("{} collectives np{np}", mpi.name());
    // Bcast: the root sends its 40 bytes, the others receive them.
    check_report_bytes(&ctx, &rep, "MPI_Bcast", "bytes_sent", 40, &mut out.fails);
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Bcast",
        "bytes_received",
        40 * (n - 1),
        &mut out.fails,
    );
    // Allgather: 8 bytes out and 8n in; in place nothing out and 12n in.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Allgather",
        "bytes_sent",
        8 * n,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Allgather",
        "bytes_received",
        20 * n * n,
        &mut out.fails,
    );
    // Alltoall: 8 bytes to and from each of n ranks.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Alltoall",
        "bytes_sent",
        8 * n * n,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Alltoall",
        "bytes_received",
        8 * n * n,
        &mut out.fails,
    );
    // Reduce_scatter_block: 8n bytes in, 8 bytes out per rank.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Reduce_scatter_block",
        "bytes_sent",
        8 * n * n,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Reduce_scatter_block",
        "bytes_received",
        8 * n,
        &mut out.fails,
    );
    finish(t, out.fails);
}

// ------------------------------------------------------------------ comms.c

/// Communicator ids one rank recorded for the communicators of comms.c.
#[derive(Default, Debug)]
struct CommIds {
    half: i64,
    dup: i64,
    rev: Option<i64>,
    inter: i64,
    merged: i64,
    cart: i64,
}

fn expect_comms(t: &Traced) -> (Outcome, Vec<CommIds>) {
    let n = i64::from(t.np);
    let m = n / 2;
    let mut out = Outcome::default();
    let mut all_ids = Vec::new();
    for r in 0..n {
        let (c, h) = (r % 2, r / 2);
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        let mut s = Seq::new(t, r as u32, 0);
        let sum = s.op("MPI_SUM");
        let mut ids = CommIds::default();
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));

        s.phase("1 split");
        let half = s.new_comm("MPI_Comm_split", a().comm(WORLD));
        ids.half = half;
        s.ev("MPI_Comm_rank", a().comm(half));
        s.ev("MPI_Comm_size", a().comm(half));
        // Half rank x is world rank 2x + c.
        let (hnext, hprev) = (2 * ((h + 1) % m) + c, 2 * ((h - 1 + m) % m) + c);
        let recv = |s: &mut Seq| {
            s.ev(
                "MPI_Recv",
                a().p2p(hprev, 5, half).buf(3, 4).st(hprev, 5, 12),
            );
        };
        let send = |s: &mut Seq| {
            s.ev("MPI_Send", a().p2p(hnext, 5, half).buf(3, 4));
        };
        if h != 0 {
            recv(&mut s);
            send(&mut s);
        } else {
            send(&mut s);
            recv(&mut s);
        }
        s.ev("MPI_Bcast", a().comm(half).buf(4, 4).root(2 + c));
        s.ev("MPI_Reduce", a().comm(half).buf(1, 4).root(c).op(sum));
        s.ev("MPI_Allreduce", a().comm(half).buf(1, 4).op(sum));

        s.phase("2 dup");
        let dup = s.new_comm("MPI_Comm_dup", a().comm(WORLD));
        ids.dup = dup;
        s.ev(
            "MPI_Sendrecv",
            a().p2p(next, 7, dup)
                .buf(2, 4)
                .from(prev, 7)
                .rbuf(2, 4)
                .st(prev, 7, 8),
        );
        s.ev("MPI_Allreduce", a().comm(dup).buf(1, 4).op(sum));
        s.ev("MPI_Comm_free", a().comm(dup));

        s.phase("3 create");
        s.ev("MPI_Comm_group", a().comm(WORLD));
        s.ev("MPI_Group_incl", a());
        if r == 0 {
            // Not a member: MPI_COMM_NULL, no new communicator.
            s.ev("MPI_Comm_create", a().comm(WORLD));
        } else {
            let rev = s.new_comm("MPI_Comm_create", a().comm(WORLD));
            ids.rev = Some(rev);
            // Rev rank v is world rank n-1-v.
            let (v, k) = (n - 1 - r, n - 1);
            let (to, from) = (n - 1 - (v + 1) % k, n - 1 - (v - 1 + k) % k);
            s.ev("MPI_Comm_rank", a().comm(rev));
            s.ev(
                "MPI_Sendrecv",
                a().p2p(to, 8, rev)
                    .buf(1, 4)
                    .from(from, 8)
                    .rbuf(1, 4)
                    .st(from, 8, 4),
            );
            s.ev("MPI_Bcast", a().comm(rev).buf(2, 4).root(n - 1));
            let g = a().comm(rev).buf(1, 4).root(n - 3);
            s.ev("MPI_Gather", if v == 2 { g.rbuf(1, 4) } else { g });
            s.ev("MPI_Comm_free", a().comm(rev));
        }
        s.ev("MPI_Group_free", a());
        s.ev("MPI_Group_free", a());

        s.phase("4 intercomm");
        let inter = s.new_comm("MPI_Intercomm_create", a().comm(half).s(Slot::Tag, 77));
        ids.inter = inter;
        s.ev("MPI_Comm_remote_size", a().comm(inter));
        // Remote rank x is world rank 2x + 1 - c.
        let partner = 2 * h + 1 - c;
        if c == 0 {
            s.ev("MPI_Send", a().p2p(partner, 9, inter).buf(4, 4));
            s.ev(
                "MPI_Recv",
                a().p2p(partner, 10, inter).buf(4, 4).st(partner, 10, 16),
            );
        } else {
            s.ev(
                "MPI_Recv",
                a().p2p(partner, 9, inter).buf(4, 4).st(partner, 9, 16),
            );
            s.ev("MPI_Send", a().p2p(partner, 10, inter).buf(4, 4));
        }
        let root = if c == 1 {
            0
        } else if h == 0 {
            PEER_ROOT
        } else {
            PEER_NULL
        };
        s.ev("MPI_Bcast", a().comm(inter).buf(3, 4).root(root));
        // Regression: MPI_Intercomm_merge recorded no `comm` (its communicator parameter is
        // called `intercomm`).
        let merged = s.new_comm("MPI_Intercomm_merge", a().comm(inter));
        ids.merged = merged;
        s.ev("MPI_Comm_rank", a().comm(merged));
        s.ev("MPI_Comm_size", a().comm(merged));
        // Merged rank x is world 2x for x < m (the low group, evens), 2(x-m)+1 after.
        let q = c * m + h;
        let mw = |x: i64| if x < m { 2 * x } else { 2 * (x - m) + 1 };
        let (to, from) = (mw((q + 1) % n), mw((q - 1 + n) % n));
        s.ev(
            "MPI_Sendrecv",
            a().p2p(to, 11, merged)
                .buf(1, 4)
                .from(from, 11)
                .rbuf(1, 4)
                .st(from, 11, 4),
        );
        s.ev("MPI_Allreduce", a().comm(merged).buf(1, 4).op(sum));
        s.ev("MPI_Comm_free", a().comm(merged));
        s.ev("MPI_Comm_free", a().comm(inter));

        s.phase("5 cart");
        let cart = s.new_comm("MPI_Cart_create", a().comm(WORLD));
        ids.cart = cart;
        s.ev("MPI_Cart_shift", a().comm(cart));
        let dst = if r == n - 1 { PEER_NULL } else { r + 1 };
        let src = if r == 0 { PEER_NULL } else { r - 1 };
        // A receive from MPI_PROC_NULL completes with source PROC_NULL, tag ANY_TAG, 0 bytes.
        let st = if r == 0 {
            (PEER_NULL, TAG_ANY, 0)
        } else {
            (r - 1, 12, 8)
        };
        s.ev(
            "MPI_Sendrecv",
            a().p2p(dst, 12, cart)
                .buf(2, 4)
                .from(src, 12)
                .rbuf(2, 4)
                .st(st.0, st.1, st.2),
        );
        s.ev("MPI_Comm_free", a().comm(cart));

        s.phase("6 free");
        s.ev("MPI_Comm_free", a().comm(half));
        s.ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
        all_ids.push(ids);
    }
    (out, all_ids)
}

/// The communicator tables of comms.c: members as world ranks, kinds, sizes, and keys
/// equal on all members (and different for different communicators).
fn check_comm_tables(t: &Traced, ids: &[CommIds], fails: &mut Vec<String>) {
    let n = t.np;
    let m = n / 2;
    let ctx = format!("{} comms np{n}", t.mpi.name());
    let def = |r: usize, id: i64| {
        u32::try_from(id)
            .ok()
            .and_then(|i| t.ranks[r].tables.comms.get(&i))
            .cloned()
    };
    let mut keys: BTreeMap<&str, BTreeMap<u32, u64>> = BTreeMap::new();
    let mut id_fails = Vec::new();
    let mut expect = |r: usize,
                      what: &'static str,
                      id: Option<i64>,
                      kind: CommKind,
                      ranks: Vec<u32>,
                      remote: Vec<u32>| {
        let Some(id) = id else { return };
        let Some(d) = def(r, id) else {
            fails.push(format!(
                "{ctx} rank {r}: {what} communicator {id} is not defined"
            ));
            return;
        };
        let want = (kind, ranks.len() as u32, ranks.clone(), remote.clone());
        let got = (d.kind, d.size, d.ranks.clone(), d.remote.clone());
        if got != want {
            fails.push(format!("{ctx} rank {r}: {what} communicator {id} is {got:?}, expected (kind, size, ranks, remote) {want:?}"));
        }
        // Keys: one per communicator and colour (the halves are two communicators).
        let group = match what {
            "half" if r % 2 == 1 => "half odd",
            "half" => "half even",
            w => w,
        };
        keys.entry(group).or_default().insert(r as u32, d.key);
    };
    for (r, i) in ids.iter().enumerate() {
        let c = (r % 2) as u32;
        let mine: Vec<u32> = (0..m).map(|x| 2 * x + c).collect();
        let other: Vec<u32> = (0..m).map(|x| 2 * x + 1 - c).collect();
        let world: Vec<u32> = (0..n).collect();
        expect(
            r,
            "half",
            Some(i.half),
            CommKind::Intra,
            mine.clone(),
            vec![],
        );
        expect(
            r,
            "dup",
            Some(i.dup),
            CommKind::Intra,
            world.clone(),
            vec![],
        );
        expect(
            r,
            "rev",
            i.rev,
            CommKind::Intra,
            (1..n).rev().collect(),
            vec![],
        );
        expect(r, "inter", Some(i.inter), CommKind::Inter, mine, other);
        let merged: Vec<u32> = (0..m)
            .map(|x| 2 * x)
            .chain((0..m).map(|x| 2 * x + 1))
            .collect();
        expect(r, "merged", Some(i.merged), CommKind::Intra, merged, vec![]);
        expect(r, "cart", Some(i.cart), CommKind::Intra, world, vec![]);
        let all = [
            i.half,
            i.dup,
            i.rev.unwrap_or(-1),
            i.inter,
            i.merged,
            i.cart,
        ];
        let distinct: BTreeSet<i64> = all.iter().copied().filter(|&x| x >= 0).collect();
        let live = all.iter().filter(|&&x| x >= 0).count();
        if distinct.len() != live || distinct.contains(&0) || distinct.contains(&1) {
            id_fails.push(format!("{ctx} rank {r}: communicator ids not distinct from each other and from world/self: {i:?}"));
        }
    }
    fails.extend(id_fails);
    let expected_members: BTreeMap<&str, usize> = [
        ("half even", m),
        ("half odd", m),
        ("dup", n),
        ("rev", n - 1),
        ("inter", n),
        ("merged", n),
        ("cart", n),
    ]
    .into_iter()
    .map(|(k, v)| (k, v as usize))
    .collect();
    let mut firsts = BTreeMap::new();
    for (group, by_rank) in &keys {
        let distinct: BTreeSet<u64> = by_rank.values().copied().collect();
        if distinct.len() != 1 || by_rank.len() != expected_members[group] {
            fails.push(format!("{ctx}: {group} communicator keys differ between members or members missing: {by_rank:x?}"));
        }
        if let Some(&k) = distinct.iter().next() {
            if let Some(other) = firsts.insert(k, *group) {
                fails.push(format!(
                    "{ctx}: {group} and {other} communicators share the key {k:#x}"
                ));
            }
        }
    }
}

fn check_comms(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "comms", np);
    let (mut out, ids) = expect_comms(&t);
    generic_checks(&t, &mut out.fails);
    check_comm_tables(&t, &ids, &mut out.fails);
    check_report(&t, &out.counts, &mut out.fails);
    finish(t, out.fails);
}

// ------------------------------------------------------------------ threads.c

const NTHREADS: i64 = 3;
const ITERS: usize = 20;

fn check_threads(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "threads", np);
    let n = i64::from(np);
    let mut out = Outcome::default();
    generic_checks(&t, &mut out.fails);
    if t.stdout.contains("not provided") {
        // The MPI library does not support MPI_THREAD_MULTIPLE: the program only
        // initializes and finalizes. Check that much.
        eprintln!(
            "{}: MPI_THREAD_MULTIPLE not provided; only the skip path is checked",
            mpi.name()
        );
        for r in 0..n {
            let mut s = Seq::new(&t, r as u32, 0);
            let level = s.peek_slot("MPI_Init_thread", Slot::Level).unwrap_or(-1);
            if !(0..THREAD_MULTIPLE).contains(&level) {
                s.fail(format!(
                    "Init_thread level {level} while the program says MULTIPLE was not provided"
                ));
            }
            s.ev("MPI_Init_thread", a().s(Slot::Level, level));
            s.ev("MPI_Comm_rank", a().comm(WORLD));
            s.ev("MPI_Comm_size", a().comm(WORLD));
            s.ev("MPI_Finalize", a());
            out.absorb(s);
        }
        check_report(&t, &out.counts, &mut out.fails);
        finish(t, out.fails);
        return;
    }
    for r in 0..n {
        let re = &t.ranks[r as usize];
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        let threads: BTreeSet<u16> = re.events.iter().map(|(_, e)| e.thread).collect();
        let want_threads: BTreeSet<u16> = (0..=NTHREADS as u16).collect();
        if threads != want_threads {
            out.fails.push(format!(
                "{} threads rank {r}: thread indices {threads:?}, expected {want_threads:?}",
                mpi.name()
            ));
        }
        // The main thread: no MPI call while the workers run.
        let mut s = Seq::new(&t, r as u32, 0);
        let sum = s.op("MPI_SUM");
        let init = s
            .ev("MPI_Init_thread", a().s(Slot::Level, THREAD_MULTIPLE))
            .cloned();
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        let size = s.ev("MPI_Comm_size", a().comm(WORLD)).cloned();
        let allreduce = s
            .ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum))
            .cloned();
        s.ev("MPI_Finalize", a());
        out.absorb(s);
        if init.is_none() {
            continue;
        }
        // Each worker: ITERS Sendrecv with its own tag; which worker got which thread index
        // depends on who called MPI first.
        //
        // Regression (was intermittent): a worker's events reached the rank file before the
        // definition of MPI_Sendrecv, which another worker had claimed but not written yet;
        // they then read as call `?<id>`.
        let mut tags_seen = BTreeSet::new();
        for th in 1..=NTHREADS as u16 {
            let mut s = Seq::new(&t, r as u32, th);
            let tag = s.peek_slot("MPI_Sendrecv", Slot::Tag).unwrap_or(-1);
            let k = tag - 10;
            if !(0..NTHREADS).contains(&k) || !tags_seen.insert(tag) {
                s.fail(format!(
                    "worker thread tag {tag}: not one of 10..{} or seen on another thread",
                    10 + NTHREADS - 1
                ));
            }
            s.phase(format!("worker with tag {tag}"));
            for _ in 0..ITERS {
                let want = a()
                    .p2p(next, tag, WORLD)
                    .buf(k + 1, 4)
                    .from(prev, tag)
                    .rbuf(k + 1, 4)
                    .st(prev, tag, 4 * (k + 1));
                let Some(ev) = s.ev("MPI_Sendrecv", want) else {
                    break;
                };
                // Between the main thread's Comm_size and Allreduce.
                let lo = size.as_ref().map_or(0, |e| e.t_exit);
                let hi = allreduce.as_ref().map_or(u64::MAX, |e| e.t_enter);
                if ev.t_enter < lo || ev.t_exit > hi {
                    let msg = format!(
                        "Sendrecv at {}..{} outside the workers' lifetime {lo}..{hi}",
                        ev.t_enter, ev.t_exit
                    );
                    s.fail(msg);
                }
            }
            out.absorb(s);
        }
    }
    let rep = check_report(&t, &out.counts, &mut out.fails);
    for (i, pr) in rep["per_rank"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if pr["threads"].as_u64() != Some(NTHREADS as u64 + 1) {
            out.fails.push(format!(
                "{} threads report: per_rank[{i}].threads = {}, expected {}",
                mpi.name(),
                pr["threads"],
                NTHREADS + 1
            ));
        }
    }
    let ctx = format!("{} threads np{np}", mpi.name());
    let per_rank: u64 = (0..NTHREADS as u64).map(|k| 4 * (k + 1)).sum::<u64>() * ITERS as u64;
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Sendrecv",
        "bytes_sent",
        u64::from(np) * per_rank,
        &mut out.fails,
    );
    finish(t, out.fails);
}

// ------------------------------------------------------------------ the tests

#[test]
fn openmpi_p2p_blocking_1_rank() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::OpenMpi, 1);
}

#[test]
fn openmpi_p2p_blocking_2_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::OpenMpi, 2);
}

#[test]
fn openmpi_p2p_blocking_4_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::OpenMpi, 4);
}

/// Regression test for request ids of shared handles and Open MPI's `Mrecv` datatype
/// (see `expect_p2p_nonblocking`).
#[test]
fn openmpi_p2p_nonblocking_4_ranks() {
    let _g = common::mpi_lock();
    check_p2p_nonblocking(Mpi::OpenMpi, 4);
}

#[test]
fn openmpi_collectives_3_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::OpenMpi, 3);
}

#[test]
fn openmpi_collectives_4_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::OpenMpi, 4);
}

#[test]
fn openmpi_collectives_8_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::OpenMpi, 8);
}

/// Regression test for the communicator of `MPI_Intercomm_merge` (see `expect_comms`).
#[test]
fn openmpi_comms_4_ranks() {
    let _g = common::mpi_lock();
    check_comms(Mpi::OpenMpi, 4);
}

/// Regression test for the call-definition race (see `check_threads`).
#[test]
fn openmpi_threads_2_ranks() {
    let _g = common::mpi_lock();
    check_threads(Mpi::OpenMpi, 2);
}

#[test]
fn mpich_p2p_blocking_2_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::Mpich, 2);
}

#[test]
fn mpich_p2p_blocking_4_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::Mpich, 4);
}

/// Regression test for request ids of shared handles (see `expect_p2p_nonblocking`).
#[test]
fn mpich_p2p_nonblocking_2_ranks() {
    let _g = common::mpi_lock();
    check_p2p_nonblocking(Mpi::Mpich, 2);
}

/// Regression test for request ids of shared handles (see `expect_p2p_nonblocking`).
#[test]
fn mpich_p2p_nonblocking_3_ranks() {
    let _g = common::mpi_lock();
    check_p2p_nonblocking(Mpi::Mpich, 3);
}

#[test]
fn mpich_collectives_2_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::Mpich, 2);
}

#[test]
fn mpich_collectives_4_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::Mpich, 4);
}

/// Regression test for the communicator of `MPI_Intercomm_merge` (see `expect_comms`).
#[test]
fn mpich_comms_4_ranks() {
    let _g = common::mpi_lock();
    check_comms(Mpi::Mpich, 4);
}

/// Regression test for the call-definition race (see `check_threads`).
#[test]
fn mpich_threads_2_ranks() {
    let _g = common::mpi_lock();
    check_threads(Mpi::Mpich, 2);
}

//! Helpers shared by the export tests: synthetic traces and SimGrid runs.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use mpiscope_trace::{
    Args, CallDef, CommDef, CommKind, Definition, Lang, ListKind, RankInfo, RankWriter, RawEvent,
    RawList, Slot, Trailer, NO_CORE,
};

/// Id of the world communicator in synthetic traces.
pub const WORLD: i64 = 0;
/// Id of the self communicator in synthetic traces.
pub const SELF: i64 = 1;

/// Writes one rank's file of a synthetic trace. Times are in ns (monotonic clock).
pub struct RankBuilder {
    w: RankWriter<BufWriter<File>>,
    calls: HashMap<String, u32>,
    /// Current time: end of the last event.
    pub t: u64,
    events: u64,
}

impl RankBuilder {
    fn new(dir: &Path, rank: u32, size: u32) -> RankBuilder {
        let info = RankInfo {
            pid: 1000 + rank,
            ..RankInfo::synthetic(rank, size)
        };
        let path = dir.join(mpiscope_trace::rank_file_name(rank));
        let f = BufWriter::new(File::create(&path).expect("create rank file"));
        let mut w = RankWriter::new(f, &info, 1 << 16).expect("start rank file");
        w.define(&[
            Definition::Comm(CommDef {
                id: 0,
                key: 11,
                kind: CommKind::World,
                size,
                ranks: vec![],
                remote: vec![],
            }),
            Definition::Comm(CommDef {
                id: 1,
                key: 22,
                kind: CommKind::Own,
                size: 1,
                ranks: vec![rank],
                remote: vec![],
            }),
        ])
        .expect("define comms");
        RankBuilder {
            w,
            calls: HashMap::new(),
            t: 0,
            events: 0,
        }
    }

    /// Defines another communicator.
    pub fn comm(&mut self, def: CommDef) {
        self.w
            .define(&[Definition::Comm(def)])
            .expect("define comm");
    }

    /// Records `name` after `gap` ns of compute, lasting `dur` ns.
    pub fn call(
        &mut self,
        name: &str,
        gap: u64,
        dur: u64,
        args: &[(Slot, i64)],
        lists: &[(ListKind, Vec<i64>)],
    ) {
        let next = self.calls.len() as u32 + 1;
        let id = *self.calls.entry(name.to_owned()).or_insert(next);
        if id == next {
            self.w
                .define(&[Definition::Call(CallDef {
                    id,
                    name: name.to_owned(),
                    lang: Lang::C,
                })])
                .expect("define call");
        }
        let mut a = Args::EMPTY;
        for &(s, v) in args {
            a.set(s, v);
        }
        let raw: Vec<RawList> = lists
            .iter()
            .map(|(k, v)| RawList {
                kind: *k,
                values: v,
            })
            .collect();
        let t_enter = self.t + gap;
        let t_exit = t_enter + dur;
        self.t = t_exit;
        self.w
            .event(&RawEvent {
                call: id,
                t_enter,
                t_exit,
                callsite: 0,
                core: NO_CORE,
                ret: 0,
                skipped: 0,
                args: &a,
                lists: &raw,
                cpu: None,
            })
            .expect("write event");
        self.events += 1;
    }

    fn finish(self) {
        let trailer = Trailer {
            reason: "finalize".into(),
            sync_ticks: self.t,
            sync_ns: self.t,
            events: self.events,
            lost: 0,
            calls: vec![],
        };
        self.w.finish(Some(&trailer)).expect("finish rank file");
    }
}

/// Writes a synthetic run of `size` ranks into `dir`, each rank's events given by `f`.
pub fn write_run(dir: &Path, size: u32, mut f: impl FnMut(u32, &mut RankBuilder)) {
    std::fs::create_dir_all(dir).expect("create run dir");
    for rank in 0..size {
        let mut b = RankBuilder::new(dir, rank, size);
        f(rank, &mut b);
        b.finish();
    }
}

/// Point-to-point arguments on the world communicator.
pub fn p2p(peer: i64, tag: i64, count: i64, dtsize: i64) -> Vec<(Slot, i64)> {
    vec![
        (Slot::Peer, peer),
        (Slot::Tag, tag),
        (Slot::Comm, WORLD),
        (Slot::Count, count),
        (Slot::DtypeSize, dtsize),
        (Slot::Bytes, count * dtsize),
    ]
}

/// The lines of an exported rank file.
pub fn lines(out: &Path, rank: u32) -> Vec<String> {
    let text = std::fs::read_to_string(out.join(format!("rank-{rank}.txt")))
        .expect("read exported rank file");
    assert!(
        text.ends_with('\n'),
        "every TI line must end with a newline"
    );
    text.lines().map(str::to_owned).collect()
}

/// Writes a SimGrid platform of `hosts` hosts (1 Gflop/s, 1 Gbps links with 10 us latency)
/// and a hostfile, in `dir`; returns their paths.
pub fn platform(dir: &Path, hosts: u32) -> (PathBuf, PathBuf) {
    let p = dir.join("platform.xml");
    let xml = format!(
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n    \
         <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" bw=\"1Gbps\" lat=\"10us\"/>\n  \
         </zone>\n</platform>\n",
        hosts - 1
    );
    std::fs::write(&p, xml).expect("write platform");
    let h = dir.join("hostfile");
    let names: String = (0..hosts).map(|i| format!("node-{i}\n")).collect();
    std::fs::write(&h, names).expect("write hostfile");
    (p, h)
}

/// A program needed by a test, or a failure that says how to get it.
pub fn require_program(name: &str, hint: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!("`{name}` is not installed (not found in PATH): {hint}");
}

/// Result of a replay.
pub struct Replay {
    /// Simulated time in seconds, as SimGrid prints it.
    pub simulated_s: f64,
    /// Everything SimGrid printed.
    pub output: String,
}

/// Replays `index` with `smpirun` on `np` ranks; panics (with SimGrid's output) unless the
/// replay succeeds and prints its simulated time.
pub fn replay(work: &Path, index: &Path, np: u32) -> Replay {
    let smpirun = require_program(
        "smpirun",
        "install SimGrid 3.32 (Debian/Ubuntu: apt-get install simgrid libsimgrid-dev)",
    );
    let (plat, hosts) = platform(work, np.max(2));
    let out = Command::new(smpirun)
        .current_dir(work)
        .arg("-np")
        .arg(np.to_string())
        .arg("-platform")
        .arg(&plat)
        .arg("-hostfile")
        .arg(&hosts)
        .arg("-replay")
        .arg(index)
        .arg("--cfg=smpi/coll-selector:ompi")
        .arg("--log=root.thresh:warning")
        .arg("--log=smpi_replay.thresh:info")
        .output()
        .expect("run smpirun");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "smpirun -replay failed ({}):\n{output}",
        out.status
    );
    let simulated_s = output
        .lines()
        .find_map(|l| l.split("Simulation time ").nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("smpirun did not print its simulation time:\n{output}"));
    eprintln!("{}: simulated time {simulated_s} s", index.display());
    Replay {
        simulated_s,
        output,
    }
}

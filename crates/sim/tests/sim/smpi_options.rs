//! Differential tests of SMPI's per-call costs against SimGrid 3.32: small hand-written
//! time-independent traces that exercise one option each (test loops, probe loops, sends
//! and receives of sizes on both sides of the overheads' bounds, computations), replayed by
//! `smpirun -replay` with the option set (`--cfg`) and by ours with the same option, both
//! on SimGrid's SMPI network model (`--network smpi`, whose per-call defaults are
//! SimGrid's). Ours must be within 1% of SimGrid's default run, as the point-to-point
//! traces of `simgrid_diff`, and within 1e-6 (or 10 ns) of its `network/optim:Full` run;
//! the option must move SimGrid's time, else the trace would not test it.

use std::collections::BTreeMap;
use std::path::Path;

use mpiscope_sim::SimConfig;

use super::common::{need, our_time, platform_files, simgrid_time, Topology};

/// A trace of `ranks.len()` ranks (each rank's lines, without its number) placed on the
/// hosts `hosts` (of the 16-host flat cluster).
struct Trace {
    ranks: Vec<Vec<String>>,
    hosts: Vec<&'static str>,
}

impl Trace {
    fn new(ranks: &[&[&str]]) -> Trace {
        Trace {
            ranks: ranks
                .iter()
                .map(|lines| lines.iter().map(|l| l.to_string()).collect())
                .collect(),
            hosts: (0..ranks.len()).map(host).collect(),
        }
    }

    /// Writes the rank files and their index in `dir`; returns the index.
    fn write(&self, dir: &Path) -> std::path::PathBuf {
        let mut index = String::new();
        for (r, lines) in self.ranks.iter().enumerate() {
            let name = format!("r{r}.txt");
            let text: String = std::iter::once("init".to_string())
                .chain(lines.iter().cloned())
                .chain(std::iter::once("finalize".to_string()))
                .map(|l| format!("{r} {l}\n"))
                .collect();
            std::fs::write(dir.join(&name), text).unwrap();
            index.push_str(&name);
            index.push('\n');
        }
        let path = dir.join("index.txt");
        std::fs::write(&path, index).unwrap();
        path
    }
}

fn host(i: usize) -> &'static str {
    ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"][i]
}

/// SimGrid's (default, `Full`) and our makespans of `trace` with the `--cfg` options `cfg`.
fn times(trace: &Trace, cfg: &[&str]) -> (f64, f64, f64) {
    need("smpirun");
    let tmp = tempfile::tempdir().unwrap();
    let (xml, _) = platform_files(tmp.path(), Topology::Flat);
    let hf = tmp.path().join("hostfile");
    let hosts: String = trace.hosts.iter().map(|h| format!("{h}\n")).collect();
    std::fs::write(&hf, hosts).unwrap();
    let index = trace.write(tmp.path());
    let np = trace.ranks.len() as u32;
    let run = |optim| {
        simgrid_time(tmp.path(), &index, np, &xml, &hf, optim, "SMPI", cfg)
            .unwrap_or_else(|out| panic!("smpirun -replay {cfg:?} failed:\n{out}"))
    };
    let (lazy, full) = (run(None), run(Some("Full")));
    let options: BTreeMap<String, String> = cfg
        .iter()
        .map(|c| {
            let (k, v) = c.split_once(':').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let config = SimConfig::for_options(&options, "smpi").unwrap();
    (lazy, full, our_time(&index, &xml, &hf, config))
}

/// Ours against SimGrid with `cfg`; SimGrid's time with `cfg` must differ from its time
/// with `baseline` (else the trace does not exercise the option) when `moves`.
fn check(what: &str, trace: &Trace, cfg: &[&str], baseline: &[&str], moves: bool) {
    let (lazy, full, ours) = times(trace, cfg);
    let (before, _, ours_before) = times(trace, baseline);
    eprintln!(
        "{what} {cfg:?}: SimGrid {lazy:.9} s (Full {full:.9} s), ours {ours:.9} s; \
         with {baseline:?}: SimGrid {before:.9} s, ours {ours_before:.9} s"
    );
    let err = (ours - lazy).abs() / lazy;
    assert!(
        err <= 0.01,
        "{what} {cfg:?}: SimGrid {lazy} s vs ours {ours} s ({:.3}% > 1%)",
        err * 100.0
    );
    assert!(
        (ours - full).abs() <= 1e-6 * full || (ours - full).abs() <= 1e-8,
        "{what} {cfg:?}: SimGrid (network/optim:Full) {full} s vs ours {ours} s"
    );
    if moves {
        assert!(
            (lazy - before).abs() > 1e-3 * before,
            "{what}: {cfg:?} does not move SimGrid's time ({lazy} s vs {before} s)"
        );
    }
}

/// Two pairs of ranks: 0 and 2 receive 1 MB from 1 and 3 and test for it 30 times (tests
/// that fail until the message is in, then nothing: its request was caught), wait, and
/// send 1000 bytes back; 1 and 3 compute first, 3 longer. A last message on another key
/// keeps the store of 0 and 2 non-empty (SimGrid refuses a wait on an empty store). Rank
/// 2 starts 50 us late: the two testers share SimGrid's counter but never wake at the same
/// date (which of two ranks due at the same date runs first is SimGrid's heap's choice).
fn test_loops() -> Trace {
    let receiver = |me: u32, peer: u32, delay: &str| -> Vec<String> {
        let mut lines = vec![
            format!("compute {delay}"),
            format!("irecv {peer} 5 10"),
            format!("irecv {peer} 0 1000000"),
        ];
        lines.extend(std::iter::repeat_n(format!("test {peer} {me} 0"), 30));
        lines.extend([
            format!("wait {peer} {me} 0"),
            format!("send {peer} 1 1000"),
            format!("wait {peer} {me} 5"),
        ]);
        lines
    };
    let sender = |flops: &str, to: u32| -> Vec<String> {
        vec![
            format!("compute {flops}"),
            format!("send {to} 0 1000000"),
            format!("recv {to} 1 1000"),
            format!("send {to} 5 10"),
        ]
    };
    let ranks = [
        receiver(0, 1, "0"),
        sender("1000000", 0),
        receiver(2, 3, "50000"),
        sender("1700000", 2),
    ];
    let ranks: Vec<Vec<&str>> = ranks
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    let ranks: Vec<&[&str]> = ranks.iter().map(Vec::as_slice).collect();
    Trace::new(&ranks)
}

#[test]
fn test_cost() {
    // The default (1e-4 s, growing) against none; then 1e-3 s.
    check("test loops", &test_loops(), &[], &["smpi/test:0"], true);
    check("test loops", &test_loops(), &["smpi/test:1e-3"], &[], true);
}

#[test]
fn grow_injected_times() {
    let cfg = ["smpi/grow-injected-times:no"];
    check("test loops", &test_loops(), &cfg, &[], true);
    check("probe loops", &probe_loops(), &cfg, &[], true);
}

/// Ranks 0 and 2 receive from 1 and 3 with a probe first (a negative size), a loop of
/// iprobes that ends when the message is there; 1 and 3 compute first.
fn probe_loops() -> Trace {
    Trace::new(&[
        &["recv 1 0 -1", "send 1 1 100"],
        &["compute 1050000", "send 0 0 1000", "recv 0 1 100"],
        &["recv 3 0 -1", "send 3 1 100"],
        &["compute 2220000", "send 2 0 1000", "recv 2 1 100"],
    ])
}

#[test]
fn iprobe_cost() {
    // (No probe cost at all would never end in SimGrid: its probe loop needs time to pass.)
    check(
        "probe loops",
        &probe_loops(),
        &[],
        &["smpi/iprobe:1e-6"],
        true,
    );
    check(
        "probe loops",
        &probe_loops(),
        &["smpi/iprobe:1e-3"],
        &[],
        true,
    );
}

#[test]
fn iprobe_cpu_usage() {
    // Rank 0 probes on the host where rank 1 computes: the probes' computations share
    // the core, bounded to the fraction of it the option gives them.
    let mut trace = Trace::new(&[
        &["recv 1 0 -1", "send 1 1 100"],
        &["compute 3000000", "send 0 0 1000", "recv 0 1 100"],
    ]);
    trace.hosts = vec!["n0", "n0"];
    check(
        "shared host",
        &trace,
        &["smpi/iprobe-cpu-usage:0.2"],
        &[],
        true,
    );
    check(
        "shared host",
        &trace,
        &["smpi/iprobe-cpu-usage:0.7"],
        &[],
        false,
    );
}

/// Sends, non-blocking sends and a sendRecv of sizes on both sides of the overheads'
/// bounds (1000 and 65536 bytes) and of the eager threshold, received by blocking and
/// non-blocking receives.
fn sizes() -> Trace {
    Trace::new(&[
        &[
            "send 1 0 100",
            "send 1 0 2000",
            "send 1 0 70000",
            "isend 1 1 100",
            "isend 1 1 2000",
            "isend 1 1 70000",
            "compute 10000",
            "waitall",
            "sendRecv 3000 1 500 1 6 6",
            "recv 1 2 10",
        ],
        &[
            "compute 100000",
            "recv 0 0 100",
            "recv 0 0 2000",
            "recv 0 0 70000",
            "irecv 0 1 100",
            "irecv 0 1 2000",
            "irecv 0 1 70000",
            "waitall",
            "sendRecv 500 0 3000 0 6 6",
            "send 0 2 10",
        ],
    ])
}

/// A piecewise cost with sections below 1000 bytes, to 65536 and above.
const PIECES: &str = "0:1e-5:1e-9;1000:2e-5:2e-9;65536:3e-6:1e-10";

#[test]
fn send_overhead_os() {
    check(
        "sizes",
        &sizes(),
        &[&format!("smpi/os:{PIECES}")],
        &[],
        true,
    );
}

#[test]
fn isend_overhead_ois() {
    check(
        "sizes",
        &sizes(),
        &[&format!("smpi/ois:{PIECES}")],
        &[],
        true,
    );
}

#[test]
fn recv_overhead_or() {
    check(
        "sizes",
        &sizes(),
        &[&format!("smpi/or:{PIECES}")],
        &[],
        true,
    );
    // The three together.
    let all = [
        format!("smpi/os:{PIECES}"),
        "smpi/ois:0:3e-6:0".to_string(),
        format!("smpi/or:{PIECES}"),
    ];
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    check("sizes", &sizes(), &all, &[], true);
}

#[test]
fn async_small_thresh() {
    // Small messages move as soon as they are sent, before their receive is posted.
    let trace = Trace::new(&[
        &[
            "send 1 0 1000",
            "send 1 0 8000",
            "isend 1 0 200",
            "compute 5000",
            "wait 0 1 0",
        ],
        &[
            "compute 1000000",
            "recv 0 0 1000",
            "recv 0 0 8000",
            "irecv 0 0 200",
            "waitall",
        ],
    ]);
    check(
        "small sends",
        &trace,
        &["smpi/async-small-thresh:4096"],
        &[],
        true,
    );
    check(
        "probe loops",
        &probe_loops(),
        &["smpi/async-small-thresh:4096"],
        &[],
        false,
    );
}

#[test]
fn init_sleep() {
    check("sizes", &sizes(), &["smpi/init:0.01"], &[], true);
}

#[test]
fn finalization_barrier() {
    check(
        "probe loops",
        &probe_loops(),
        &["smpi/finalization-barrier:yes"],
        &[],
        true,
    );
}

#[test]
fn simulate_computation() {
    check(
        "probe loops",
        &probe_loops(),
        &["smpi/simulate-computation:no"],
        &[],
        true,
    );
}

/// `smpi/host-speed`, `smpi/cpu-threshold` and `smpi/wtime` change nothing in a replay:
/// SimGrid's time stays the same with each, and so does ours (which does not read them).
#[test]
fn options_without_effect_on_replay() {
    let (base, _, ours_base) = times(&probe_loops(), &[]);
    for cfg in [
        "smpi/host-speed:1000f",
        "smpi/cpu-threshold:1",
        "smpi/wtime:1",
    ] {
        let (t, _, ours) = times(&probe_loops(), &[cfg]);
        eprintln!("{cfg}: SimGrid {t:.9} s (without: {base:.9} s), ours {ours:.9} s");
        assert_eq!(t, base, "{cfg} moves SimGrid's replay");
        assert_eq!(ours, ours_base);
    }
}

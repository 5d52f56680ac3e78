//! Compute bursts of ranks that shared cores: a trace that recorded their CPU time (format
//! 1.2) replays them as CPU work, and the simulator's core sharing adds the waiting once.
//! Ranks here each compute one burst of 2 s wall time, of which 1 s on a core.

use std::path::Path;

use mpiscope_sim::platform::{cluster, ClusterSpec, HostSpec};
use mpiscope_sim::workload::trace;
use mpiscope_sim::{SimConfig, Simulation};
use mpiscope_trace::{
    Args, BurstCpu, CallDef, CommDef, CommKind, Definition, Lang, RankInfo, RankWriter, RawEvent,
    RunDir, Trailer, NO_CORE,
};

const SECOND: u64 = 1_000_000_000;

/// Rank `rank` of `size`: `MPI_Init`, a burst of 2 s (1 s of CPU time when `cpu`), then
/// `MPI_Finalize`; `recorded` says whether the recorder read CPU times at all.
fn write_rank(dir: &Path, rank: u32, size: u32, cpu: Option<u64>, recorded: bool) {
    let info = RankInfo {
        core: Some(rank % 2),
        executable: "/bin/bursts".into(),
        options: if recorded {
            serde_json::json!({ "cpu_time_s": 0.00005 })
        } else {
            serde_json::json!({})
        },
        ..RankInfo::synthetic(rank, size)
    };
    let mut w = RankWriter::new(Vec::new(), &info, 1 << 16).unwrap();
    w.define(&[
        Definition::Comm(CommDef {
            id: 0,
            key: 1,
            kind: CommKind::World,
            size,
            ranks: vec![],
            remote: vec![],
        }),
        Definition::Call(CallDef {
            id: 1,
            name: "MPI_Init".into(),
            lang: Lang::C,
        }),
        Definition::Call(CallDef {
            id: 2,
            name: "MPI_Finalize".into(),
            lang: Lang::C,
        }),
    ])
    .unwrap();
    let a = Args::EMPTY;
    let ev = |call, t_enter, cpu: Option<u64>| RawEvent {
        call,
        t_enter,
        t_exit: t_enter + 1000,
        callsite: 0,
        core: NO_CORE,
        ret: 0,
        skipped: 0,
        args: &a,
        lists: &[],
        cpu: cpu.map(|ns| BurstCpu { ns, lead_ticks: 0 }),
    };
    w.event(&ev(1, 1000, None)).unwrap();
    w.event(&ev(2, 2000 + 2 * SECOND, cpu)).unwrap();
    let end = 3000 + 2 * SECOND;
    let trailer = Trailer {
        reason: "finalize".into(),
        sync_ticks: end,
        sync_ns: end,
        events: 2,
        lost: 0,
        calls: vec![],
    };
    let bytes = w.finish(Some(&trailer)).unwrap();
    std::fs::write(dir.join(mpiscope_trace::rank_file_name(rank)), bytes).unwrap();
}

/// A run of `size` ranks on one host, rank `r` started on core `r % 2`.
fn run(dir: &Path, size: u32, cpu: Option<u64>, recorded: bool) -> RunDir {
    let placement: Vec<serde_json::Value> = (0..size)
        .map(|r| {
            serde_json::json!({"rank": r, "host": "node", "pid": 100 + r, "core": r % 2,
                "file": mpiscope_trace::rank_file_name(r)})
        })
        .collect();
    let manifest = serde_json::json!({
        "format_version": "1.2", "recorder_version": "test", "command": ["bursts"],
        "executable": "/bin/bursts",
        "mpi": {"flavour": "openmpi", "version": "test", "standard": "3.1"},
        "ranks": size, "hosts": ["node"], "placement": placement,
        "clock": {"source": "monotonic", "ticks_per_second": 1e9, "resolution_ns": 1.0,
            "alignment": "one host"},
        "start_unix_ns": 0, "start_time": "1970-01-01T00:00:00.000Z", "options": {}
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
    for r in 0..size {
        write_rank(dir, r, size, cpu, recorded);
    }
    RunDir::open(dir).unwrap()
}

/// The makespan of `run` on one host of `cores` cores (1 Gflop/s each) at `efficiency`.
fn replay(run: &RunDir, cores: u32, efficiency: &[f64], wall_bursts: bool) -> f64 {
    let mut spec = ClusterSpec::new(1, 1e9, 1e-6);
    spec.host = HostSpec {
        cores,
        ..HostSpec::default()
    };
    let p = cluster(spec).unwrap();
    let options = trace::TraceOptions {
        wall_bursts,
        core_efficiency: efficiency.to_vec(),
        ..trace::TraceOptions::default()
    };
    let n = run.ranks() as usize;
    let ws = trace::load(run, options, &vec![1e9; n]).unwrap();
    let config = SimConfig {
        core_efficiency: efficiency.to_vec(),
        ..SimConfig::default()
    };
    Simulation::new(&p, config, vec![0; n], ws)
        .unwrap()
        .run()
        .unwrap()
        .makespan_s
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() < 1e-3
}

#[test]
fn bursts_that_waited_for_a_core_are_shared_once() {
    // Four ranks traced on two cores: each burst took 2 s, 1 s of it on a core. Replayed
    // on two cores, the four seconds of work take 2 s, the traced time; taken for work,
    // the 2 s bursts would be shared again: 4 s.
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), 4, Some(SECOND), true);
    let with_cpu = replay(&r, 2, &[], false);
    let wall = replay(&r, 2, &[], true);
    assert!(close(with_cpu, 2.0), "{with_cpu}");
    assert!(close(wall, 4.0), "{wall}");
    // On four cores the same work takes 1 s.
    assert!(close(replay(&r, 4, &[], false), 1.0));
}

#[test]
fn the_core_efficiency_is_applied_once() {
    // Two cores busy in the traced run (ranks started on cores 0 and 1), each core at 0.8
    // of its speed then: 1 s of CPU time is 0.8 s of one lone core's work. The replay with
    // two busy cores slows it by 0.8 again: back to 1 s, what was measured. One rank alone
    // on the host computes it in 0.8 s.
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), 2, Some(SECOND), true);
    let got = replay(&r, 2, &[1.0, 0.8], false);
    assert!(close(got, 1.0), "{got}");
    let got = replay(&r, 4, &[1.0, 0.8], false);
    assert!(close(got, 1.0), "{got}");
}

#[test]
fn traces_without_cpu_times_replay_as_before() {
    // Format 1.1 (no CPU time recorded): the wall time, slowed by the efficiency as
    // before. A 1.2 trace whose bursts were too short to read the CPU clock keeps the
    // wall time too, as CPU work.
    let dir = tempfile::tempdir().unwrap();
    let old = run(dir.path(), 2, None, false);
    let got = replay(&old, 2, &[1.0, 0.8], false);
    assert!(close(got, 2.0 / 0.8), "{got}");
    let dir = tempfile::tempdir().unwrap();
    let short = run(dir.path(), 2, None, true);
    let got = replay(&short, 2, &[1.0, 0.8], false);
    assert!(close(got, 2.0), "{got}");
    // A CPU time longer than the wall time (clock granularity) counts for the wall time.
    let dir = tempfile::tempdir().unwrap();
    let long = run(dir.path(), 1, Some(3 * SECOND), true);
    let got = replay(&long, 1, &[], false);
    assert!(close(got, 2.0), "{got}");
}

#[test]
fn busy_cores_of_the_traced_run_come_from_the_placement() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), 4, None, true);
    assert_eq!(trace::traced_busy_cores(&r), vec![2, 2, 2, 2]);
}

#[test]
fn the_structural_form_keeps_the_cpu_times() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), 4, Some(SECOND), true);
    let form = mpiscope_sim::workload::structural::save(&r, None).unwrap();
    assert!(form.ranks.iter().all(|k| k.cpu_bursts == Some(2)));
    let mut spec = ClusterSpec::new(1, 1e9, 1e-6);
    spec.host = HostSpec {
        cores: 2,
        ..HostSpec::default()
    };
    let p = cluster(spec).unwrap();
    let (ws, _) =
        mpiscope_sim::workload::structural::load(&form, trace::TraceOptions::default(), &[1e9; 4])
            .unwrap();
    let got = Simulation::new(&p, SimConfig::default(), vec![0; 4], ws)
        .unwrap()
        .run()
        .unwrap()
        .makespan_s;
    assert!(close(got, 2.0), "{got}");
    // Its wall times are gone: --wall-bursts says so instead of replaying CPU times.
    let wall = trace::TraceOptions {
        wall_bursts: true,
        ..trace::TraceOptions::default()
    };
    let e = mpiscope_sim::workload::structural::load(&form, wall, &[1e9; 4])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("--wall-bursts") && e.contains("replay the trace"),
        "{e}"
    );
}

//! Differential tests against SimGrid 3.32: the same time-independent traces replayed by
//! `smpirun -replay` (CM02 network model, Open MPI collective selector) and by our
//! simulator on the same platform must give the same makespan (within 1% for
//! point-to-point traces, 5% with collectives).
//!
//! Traces are recorded from our C programs (`tests/programs`) with `smpirun -trace-ti`.
//! SimGrid must be installed (`apt-get install libsimgrid-dev`); the tests fail
//! with that message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use mpiscope_sim::SimConfig;

use super::common::{cm02, need, our_time, platform_files, simgrid_time, Topology};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Records the TI trace of `program args` at `np` ranks on `platform`; returns the index
/// file.
fn record(
    dir: &Path,
    program: &str,
    args: &[&str],
    np: u32,
    platform: &Path,
    hostfile: &Path,
) -> PathBuf {
    need("smpicc");
    need("smpirun");
    let exe = dir.join(program);
    let src = here().join("programs").join(format!("{program}.c"));
    let o = Command::new("smpicc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "smpicc {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let index = dir.join(format!("{program}-{}-{np}.txt", args.join("-")));
    let o = Command::new("smpirun")
        .arg("-trace-ti")
        .arg(format!("--cfg=tracing/filename:{}", index.display()))
        .arg("--cfg=smpi/simulate-computation:no")
        .arg("-np")
        .arg(np.to_string())
        .arg("-platform")
        .arg(platform)
        .arg("-hostfile")
        .arg(hostfile)
        .arg(&exe)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "smpirun -trace-ti {program} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    index
}

/// How a comparison ended.
#[derive(Debug)]
enum Verdict {
    /// Relative error against SimGrid's default run.
    Compared(f64),
    /// SimGrid 3.32 aborted; ours completed.
    SimGridAborts,
}

/// Replays the trace of `program args` at `np` ranks on `topo` with SimGrid (default and
/// `Full` sharing updates) and with ours. Ours must be within `tolerance` of SimGrid's
/// default run (the acceptance criterion) and within 1e-6 (or 10 ns) of its `Full` run,
/// which solves the same max-min systems as we do (see docs/notes/simgrid-3.32-selective-update.md).
/// When SimGrid aborts on the trace, ours must still complete; the comparison is skipped
/// with a message.
fn compare_with(program: &str, args: &[&str], np: u32, topo: Topology, tolerance: f64) -> Verdict {
    let tmp = tempfile::tempdir().unwrap();
    let (xml, hf) = platform_files(tmp.path(), topo);
    let index = record(tmp.path(), program, args, np, &xml, &hf);
    let ours = our_time(&index, &xml, &hf, cm02());
    let what = format!("{program} {} np={np} {topo:?}", args.join(" "));
    let lazy = simgrid_time(tmp.path(), &index, np, &xml, &hf, None, "CM02", &[]);
    let full = simgrid_time(tmp.path(), &index, np, &xml, &hf, Some("Full"), "CM02", &[]);
    let (lazy, full) = match (lazy, full) {
        (Ok(l), Ok(f)) => (l, f),
        (l, f) => {
            let out = l.err().or(f.err()).unwrap_or_default();
            let last: Vec<&str> = out.lines().rev().take(3).collect();
            eprintln!(
                "{what}: SimGrid 3.32 aborts on this trace (skipped; ours: {ours:.9} s): {}",
                last.join(" | ")
            );
            assert!(ours > 0.0);
            return Verdict::SimGridAborts;
        }
    };
    let err = (ours - lazy).abs() / lazy;
    let err_full = (ours - full).abs() / full;
    eprintln!(
        "{what}: SimGrid {lazy:.9} s (Full: {full:.9} s), ours {ours:.9} s, error {:.4}% (vs Full {:.2e})",
        err * 100.0,
        err_full
    );
    assert!(
        err <= tolerance,
        "{what}: SimGrid {lazy} s vs ours {ours} s ({:.3}% > {:.1}%)",
        err * 100.0,
        tolerance * 100.0
    );
    // SimGrid rounds dates to `surf/precision` (1e-9 s) at each event: allow a few of those
    // on short runs.
    assert!(
        err_full <= 1e-6 || (ours - full).abs() <= 1e-8,
        "{what}: SimGrid (network/optim:Full) {full} s vs ours {ours} s"
    );
    Verdict::Compared(err)
}

fn compare(program: &str, np: u32, topo: Topology, tolerance: f64) {
    compare_with(program, &[], np, topo, tolerance);
}

/// Every collective the TI format replays, one trace each, at 8 and 16 ranks on `topo`.
/// At least `min_compared` of the 30 traces must be replayable by SimGrid.
fn each_collective(topo: Topology, min_compared: usize) {
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for np in [8, 16] {
        for c in [
            "barrier",
            "bcast",
            "reduce",
            "allreduce",
            "alltoall",
            "alltoallv",
            "allgather",
            "allgatherv",
            "gather",
            "scatter",
            "reduce_scatter",
            "scan",
            "bcast_large",
            "allreduce_large",
            "allgatherv_large",
        ] {
            match compare_with("coll_one", &[c], np, topo, 0.05) {
                Verdict::Compared(e) => compared.push(format!("{c}@{np} {:.4}%", e * 100.0)),
                Verdict::SimGridAborts => skipped.push(format!("{c}@{np}")),
            }
        }
    }
    eprintln!(
        "{topo:?}: compared {} ({}); SimGrid 3.32 aborts on {} ({})",
        compared.len(),
        compared.join(", "),
        skipped.len(),
        skipped.join(", ")
    );
    assert!(
        compared.len() >= min_compared,
        "{topo:?}: only {} traces compared",
        compared.len()
    );
}

#[test]
fn p2p_flat_cluster_8() {
    compare("p2p_mix", 8, Topology::Flat, 0.01);
}

#[test]
fn p2p_flat_cluster_16() {
    compare("p2p_mix", 16, Topology::Flat, 0.01);
}

#[test]
fn p2p_fat_tree_16() {
    compare("p2p_mix", 16, Topology::FatTree, 0.01);
}

#[test]
fn p2p_torus_16() {
    compare("p2p_mix", 16, Topology::Torus, 0.01);
}

#[test]
fn collectives_flat_cluster_4() {
    compare("coll_mix", 4, Topology::Flat, 0.05);
}

#[test]
fn collectives_flat_cluster_8() {
    compare("coll_mix", 8, Topology::Flat, 0.05);
}

#[test]
fn collectives_flat_cluster_16() {
    compare("coll_mix", 16, Topology::Flat, 0.05);
}

#[test]
fn collectives_fat_tree_8() {
    compare("coll_mix", 8, Topology::FatTree, 0.05);
}

#[test]
fn collectives_torus_8() {
    compare("coll_mix", 8, Topology::Torus, 0.05);
}

#[test]
fn each_collective_flat_cluster() {
    each_collective(Topology::Flat, 25);
}

#[test]
fn each_collective_fat_tree() {
    each_collective(Topology::FatTree, 25);
}

#[test]
fn each_collective_torus() {
    each_collective(Topology::Torus, 25);
}

/// SimGrid's `SMPI` network model (smpirun's default: CM02 with piecewise latency and
/// bandwidth factors by message size and `weight-S` 8775) against ours with the same
/// parameters.
fn smpi_model(topo: Topology) {
    let tmp = tempfile::tempdir().unwrap();
    let (xml, hf) = platform_files(tmp.path(), topo);
    let index = record(tmp.path(), "p2p_mix", &[], 16, &xml, &hf);
    let config = SimConfig {
        network: mpiscope_sim::NetworkKind::new(mpiscope_sim::network::FlowConfig::smpi()),
        ..cm02()
    };
    let ours = our_time(&index, &xml, &hf, config);
    let full = simgrid_time(tmp.path(), &index, 16, &xml, &hf, Some("Full"), "SMPI", &[]).unwrap();
    let cm02 = our_time(&index, &xml, &hf, cm02());
    eprintln!("p2p_mix np=16 {topo:?} SMPI model: SimGrid (Full) {full:.9} s, ours {ours:.9} s (ours with CM02: {cm02:.9} s)");
    assert!(
        (ours - full).abs() <= 1e-6 * full,
        "SMPI model {topo:?}: SimGrid {full} s vs ours {ours} s"
    );
    assert!(
        (cm02 - full).abs() > 1e-3 * full,
        "the factors change nothing?"
    );
}

#[test]
fn smpi_model_flat_cluster() {
    smpi_model(Topology::Flat);
}

#[test]
fn smpi_model_torus() {
    smpi_model(Topology::Torus);
}

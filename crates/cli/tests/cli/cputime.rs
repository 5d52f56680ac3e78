//! Ranks that share cores: `mpiscope trace` records the CPU time of compute bursts, and
//! `mpiscope replay` replays them as CPU work, so that four ranks traced on two cores
//! replay near the measured time instead of sharing the cores a second time.

use std::path::Path;
use std::process::Command;

use crate::common::{build, mpi_lock, mpiscope, report_json, tempdir, Mpi};

/// One host with two cores (1 Gf each).
fn two_cores(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("two-cores.xml");
    std::fs::write(
        &p,
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\
         <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-0\" speed=\"1Gf\" core=\"2\" \
         bw=\"1GBps\" lat=\"10us\"/></zone></platform>\n",
    )
    .unwrap();
    p
}

fn makespan(args: &[&str]) -> f64 {
    let o = Command::new(mpiscope())
        .arg("replay")
        .args(args)
        .args(["--json", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    j["makespan_s"].as_f64().unwrap()
}

#[test]
fn four_ranks_on_two_cores_replay_their_cpu_work() {
    let _g = mpi_lock();
    let tmp = tempdir();
    let exe = build(Mpi::OpenMpi, "c/shared_cores.c", &[]);
    let out = tmp.path().join("trace");
    // Every rank on cores 0 and 1 only (the affinity is inherited), waiting ranks yielding
    // their core: each burst of 10 ms of CPU work waits about as long for a core.
    let o = Command::new("taskset")
        .args(["-c", "0,1"])
        .arg(mpiscope())
        .args(["trace", "-q", "-o"])
        .arg(&out)
        .arg("--preload")
        .arg(Mpi::OpenMpi.preload())
        .arg("--")
        .args(Mpi::OpenMpi.launcher(4))
        .args(["--mca", "mpi_yield_when_idle", "1"])
        .arg(&exe)
        .args(["40", "10"])
        .output()
        .expect("launch");
    assert!(
        o.status.success(),
        "traced run failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The measured span: end of MPI_Init to MPI_Finalize, the longest rank.
    let r = report_json(&out);
    let measured = r["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["app_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(measured > 0.4, "4 x 40 x 10 ms on two cores: {measured}");
    let platform = two_cores(tmp.path());
    let (d, p) = (out.to_str().unwrap(), platform.to_str().unwrap());
    let cpu = makespan(&[d, "--platform", p, "--mapping", "sequential:4"]);
    let wall = makespan(&[
        d,
        "--platform",
        p,
        "--mapping",
        "sequential:4",
        "--wall-bursts",
    ]);
    let (err_cpu, err_wall) = ((cpu - measured) / measured, (wall - measured) / measured);
    eprintln!(
        "measured {measured:.3} s; replay {cpu:.3} s ({:+.1}%), with wall bursts {wall:.3} s \
         ({:+.1}%)",
        100.0 * err_cpu,
        100.0 * err_wall
    );
    // What the program does is known: 40 bursts of 10 ms of CPU work per rank, four ranks
    // on two cores, 0.8 s, whatever else loads the machine (other processes stretch the
    // waits for a core, and the measured time with them, not the CPU work). The replay
    // must find that work; bursts replayed for their wall time share the cores a second
    // time, at least 1.5 times as long (twice on a quiet machine, more under load).
    let work = 4.0 * 40.0 * 0.010 / 2.0;
    assert!(
        (cpu - work).abs() < 0.15 * work,
        "{cpu} s against {work} s of work"
    );
    assert!(
        wall > 1.5 * cpu,
        "with wall bursts {wall} s, with CPU times {cpu} s"
    );
    // The replay models a dedicated host: never much longer than the measured run, and on
    // a quiet machine (the run took its work within 10%: the other tests of the suite load
    // it too) near it, closer than the wall bursts.
    assert!(cpu < 1.1 * measured, "{cpu} against {measured}");
    if measured < 1.1 * work {
        assert!(err_cpu.abs() < 0.15, "{cpu} against {measured}");
        assert!(
            err_cpu.abs() < err_wall.abs() / 2.0,
            "{err_cpu} against {err_wall}"
        );
    } else {
        eprintln!("loaded machine: the measured run took {measured:.3} s for {work:.3} s of work");
    }
}

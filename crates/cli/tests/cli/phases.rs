//! `--phase loop`: a program with a set-up, a time-step loop and a tear-down
//! (`tests/programs/misc/setup_loop.c`, set-up calls 30 ms apart), traced on 1 and 2 ranks.
//! `report`, `compare` and `replay` restricted to each rank's main loop leave the set-up's
//! bursts out; `--min-gap` leaves the back-to-back calls out of the burst statistics.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{build, cluster, mpi_lock, mpiscope, run_traced, tempdir, Mpi};

/// Traces `setup_loop` on `np` ranks into `dir`.
fn traced(dir: &Path, np: u32) -> PathBuf {
    let exe = build(Mpi::OpenMpi, "misc/setup_loop.c", &[]);
    let d = dir.join(format!("np{np}"));
    std::fs::create_dir_all(&d).unwrap();
    let (run, trace) = {
        let _g = mpi_lock();
        run_traced(Mpi::OpenMpi, np, &exe, &["60"], &[], &d)
    };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    trace
}

/// `mpiscope ARGS` (it must succeed), its JSON.
fn json(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Value {
    let o = Command::new(mpiscope()).args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Bursts of 20 ms or more in a burst histogram (the set-up's are 30 ms).
fn long_bursts(bursts: &Value) -> u64 {
    bursts["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["from"].as_u64().unwrap() >= 20_000_000)
        .map(|b| b["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn the_main_loop_leaves_the_set_up_out() {
    let tmp = tempdir();
    let one = traced(tmp.path(), 1);
    let two = traced(tmp.path(), 2);

    // report: the set-up's 30 ms bursts are in the whole run, not in the loop.
    let all = json(&[&"report", &two, &"--json"]);
    let lp = json(&[&"report", &two, &"--json", &"--phase", &"loop"]);
    assert_eq!(all["phase"], "all");
    assert!(all.get("phase_ranges").is_none());
    assert!(long_bursts(&all["bursts"]) >= 2 * 4, "{}", all["bursts"]);
    assert_eq!(lp["phase"], "loop");
    assert_eq!(long_bursts(&lp["bursts"]), 0, "{}", lp["bursts"]);
    let ranges = lp["phase_ranges"].as_array().unwrap();
    assert_eq!(ranges.len(), 2);
    for r in ranges {
        assert_eq!(r["kind"], "calls", "{r}");
        assert!(r["iterations"].as_u64().unwrap() >= 5, "{r}");
        assert!(r["end_ns"].as_u64() > r["start_ns"].as_u64(), "{r}");
    }
    // About 4 bursts per step and rank (the Bcast's every tenth), none of the set-up.
    let n = lp["bursts"]["count"].as_u64().unwrap();
    assert!((2 * 4 * 50..2 * 5 * 61).contains(&n), "{n} bursts");
    assert!(lp.get("balance").is_none() && lp.get("endings").is_none());
    // The set-up calls are not counted, the loop's are.
    assert!(lp["calls"].get("MPI_Scan").is_none(), "{}", lp["calls"]);
    assert_eq!(
        lp["calls"]["MPI_Alltoall"]["count"],
        all["calls"]["MPI_Alltoall"]["count"]
    );

    // --min-gap: the gap from MPI_Comm_rank to MPI_Allreduce (under a microsecond) is left
    // out of the bursts, not of the compute time.
    let gap = json(&[
        &"report",
        &two,
        &"--json",
        &"--phase",
        &"loop",
        &"--min-gap",
        &"2e-6",
    ]);
    assert_eq!(gap["burst_min_gap_s"], 2e-6);
    let m = gap["bursts"]["count"].as_u64().unwrap();
    assert!(m + 2 * 55 <= n, "{m} of {n} bursts");
    assert!(gap["bursts"]["harmonic_mean_s"].as_f64() > lp["bursts"]["harmonic_mean_s"].as_f64());
    assert_eq!(gap["totals"]["compute_s"], lp["totals"]["compute_s"]);

    // compare: per run, the phase, each rank's range, the spread across ranks; the page
    // draws the spread as error bars.
    let page = tmp.path().join("scaling.html");
    let c = json(&[
        &"compare",
        &two,
        &one,
        &"--json",
        &"--phase",
        &"loop",
        &"--min-gap",
        &"2e-6",
        &"--html",
        &page,
    ]);
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(
        (runs[0]["ranks"].as_u64(), runs[1]["ranks"].as_u64()),
        (Some(1), Some(2))
    );
    for r in runs {
        assert_eq!(r["phase"], "loop");
        assert_eq!(r["burst_min_gap_s"], 2e-6);
        let spread = &r["burst_harmonic_mean_ranks"];
        assert_eq!(spread["ranks"], r["ranks"], "{r}");
        assert!(spread["min_s"].as_f64() <= spread["max_s"].as_f64());
        assert!(spread["min_s"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(
            r["phase_ranges"].as_array().unwrap().len() as u64,
            r["ranks"].as_u64().unwrap()
        );
    }
    let whole = json(&[&"compare", &two, &one, &"--json"]);
    assert!(
        whole["runs"][1]["burst_mean_s"].as_f64().unwrap()
            > runs[1]["burst_mean_s"].as_f64().unwrap(),
        "the set-up's bursts raise the whole run's mean"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Phase: the main loop of each rank"), "{html}");
    assert!(
        html.contains("harmonic mean: rank min to max at 2 ranks: "),
        "{html}"
    );
    assert!(
        html.contains(">compute burst between MPI calls (s, log scale)<"),
        "{html}"
    );

    // replay: the same makespan, plus when each rank enters and leaves its loop.
    let (platform, hosts) = cluster(tmp.path(), 2);
    let base = [
        &"replay" as &dyn AsRef<std::ffi::OsStr>,
        &two,
        &"--platform",
        &platform,
        &"--hostfile",
        &hosts,
        &"--json",
    ];
    let plain = json(&base);
    let mut args = base.to_vec();
    args.extend([&"--phase" as &dyn AsRef<std::ffi::OsStr>, &"loop"]);
    let timed = json(&args);
    assert_eq!(plain["makespan_s"], timed["makespan_s"]);
    assert!(plain.get("phase").is_none());
    let p = &timed["phase"];
    let makespan = timed["makespan_s"].as_f64().unwrap();
    let sim = p["simulated_s"].as_f64().unwrap();
    // The loop is most of the run but not the 120 ms of set-up and 30 ms of tear-down.
    assert!(sim > 0.0 && sim < makespan - 0.1, "{p} of {makespan} s");
    assert!(p["traced_s"].as_f64().unwrap() > 0.0);
    for r in p["ranks"].as_array().unwrap() {
        let (a, b) = (
            r["enter_s"].as_f64().unwrap(),
            r["leave_s"].as_f64().unwrap(),
        );
        assert!(0.1 < a && a < b && b < makespan, "{r}");
    }
    // Not for inputs without a record to find a loop in.
    let ti = tmp.path().join("index.txt");
    std::fs::write(&ti, "").unwrap();
    let o = Command::new(mpiscope())
        .args(["replay", "--phase", "loop", "--platform"])
        .arg(&platform)
        .arg(&ti)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let o = Command::new(mpiscope())
        .args(["report", "--phase", "setup"])
        .arg(&two)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`all` or `loop`"));
}

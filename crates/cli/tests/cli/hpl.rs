//! End-to-end tests of `mpiscope hpl`: an `HPL.dat` with every broadcast, both depths and
//! every swap variant simulated on a small SimGrid cluster, HPL's output format, the JSON.

use std::path::Path;
use std::process::Command;

use crate::common::{mpiscope, tempdir};

/// HPL.dat with the given Ns, grids, BCASTs, DEPTHs and SWAP.
fn dat(dir: &Path, ns: &str, ps: &str, qs: &str, bcasts: &str, depths: &str, swap: u32) -> String {
    let count = |s: &str| s.split_whitespace().count();
    let text = format!(
        "HPLinpack benchmark input file\nInnovative Computing Laboratory, University of Tennessee\n\
         HPL.out      output file name (if any)\n6            device out\n\
         {}            # of problems sizes (N)\n{ns}         Ns\n1            # of NBs\n32           NBs\n\
         0            PMAP\n{}            # of process grids (P x Q)\n{ps}        Ps\n{qs}        Qs\n\
         16.0         threshold\n1            # of panel fact\n2            PFACTs\n\
         1            # of recursive stopping criterium\n4            NBMINs\n\
         1            # of panels in recursion\n2            NDIVs\n\
         1            # of recursive panel fact.\n1            RFACTs\n\
         {}            # of broadcast\n{bcasts}  BCASTs\n{}            # of lookahead depth\n\
         {depths}          DEPTHs\n{swap}            SWAP\n64           swapping threshold\n\
         0            L1 form\n0            U  form\n1            Equilibration\n8            alignment\n",
        count(ns),
        count(ps),
        count(bcasts),
        count(depths)
    );
    let p = dir.join(format!("HPL-{swap}.dat"));
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

fn cluster(dir: &Path) -> String {
    let p = dir.join("cluster.xml");
    std::fs::write(
        &p,
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\
         <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-7\" speed=\"1Gf\" \
         bw=\"1GBps\" lat=\"10us\"/></zone></platform>\n",
    )
    .unwrap();
    p.to_str().unwrap().to_owned()
}

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(mpiscope())
        .arg("hpl")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_variant_runs_and_prints_hpl_lines() {
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    for swap in 0..3 {
        let d = dat(
            tmp.path(),
            "300",
            "2 1 3",
            "2 4 2",
            "0 1 2 3 4 5",
            "0 1",
            swap,
        );
        let (ok, out, err) = run(&[&d, "--platform", &platform]);
        assert!(ok, "{err}");
        let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("WR")).collect();
        // 3 grids x 2 depths x 6 broadcasts.
        assert_eq!(lines.len(), 36, "{out}");
        assert!(out.contains("T/V                N    NB     P     Q"));
        assert!(out.contains("Finished     36 tests"));
        for l in &lines {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f[1], "300");
            assert_eq!(f[2], "32");
            let gflops: f64 = f[6].parse().unwrap();
            assert!(f[6].contains("e+") || f[6].contains("e-"), "{l}");
            // 1 Gf hosts bound the rate by the rank count.
            let ranks: f64 = f[3].parse::<f64>().unwrap() * f[4].parse::<f64>().unwrap();
            assert!(gflops > 0.0 && gflops < ranks, "{l}");
        }
    }
}

#[test]
fn long_broadcasts_with_look_ahead_do_not_deadlock_on_8_x_8() {
    // The configuration real HPL (hpcc, 64 ranks) runs to the end in 2.1 s here, on which
    // the skeleton deadlocked while it probed before the long broadcasts' spread (HPL has
    // that probe under `#if 0`): N 3000, NB 64, BCAST long and long-modified, depth 1, mix.
    let tmp = tempdir();
    let platform = tmp.path().join("c64.toml");
    std::fs::write(
        &platform,
        "[cluster]\nhosts = 64\nprefix = \"n\"\nspeed = 1e10\nbandwidth = 1.25e9\nlatency = 1e-6\n",
    )
    .unwrap();
    let d = dat(tmp.path(), "3000", "8", "8", "4 5", "1", 2);
    std::fs::write(
        &d,
        std::fs::read_to_string(&d)
            .unwrap()
            .replace("32           NBs", "64           NBs"),
    )
    .unwrap();
    let (ok, out, err) = run(&[&d, "--platform", platform.to_str().unwrap()]);
    assert!(ok, "{err}");
    for tv in ["WR14C2R4", "WR15C2R4"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(tv) && l.contains("3000    64     8     8")),
            "{out}"
        );
    }
}

#[test]
fn json_lists_configurations() {
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let d = dat(tmp.path(), "200 400", "2", "2", "1", "1", 1);
    let (ok, out, err) = run(&[&d, "--platform", &platform, "--json"]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let list = j.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["n"], 200);
    assert_eq!(list[1]["n"], 400);
    for c in list {
        assert_eq!(
            (c["nb"].as_u64(), c["p"].as_u64(), c["q"].as_u64()),
            (Some(32), Some(2), Some(2))
        );
        assert!(c["time_s"].as_f64().unwrap() > 0.0);
        assert!(c["sim_wall_s"].as_f64().unwrap() >= 0.0);
        // HPL's count over the time: (2/3 N^3 + 3/2 N^2) / t / 1e9.
        let n = c["n"].as_f64().unwrap();
        let expect = (2.0 / 3.0 * n * n * n + 1.5 * n * n) / c["time_s"].as_f64().unwrap() / 1e9;
        let g = c["gflops"].as_f64().unwrap();
        assert!((g - expect).abs() <= 1e-9 * expect, "{g} vs {expect}");
        assert!(g < 4.0, "four 1 Gf hosts: {g}");
    }
    // A bigger problem takes longer.
    assert!(list[1]["time_s"].as_f64() > list[0]["time_s"].as_f64());
}

#[test]
fn bad_input_names_the_line() {
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let d = dat(tmp.path(), "300", "2", "2", "7", "0", 0);
    let (ok, _, err) = run(&[&d, "--platform", &platform]);
    assert!(!ok);
    assert!(err.contains(":23: BCAST 7 is not between 0 and 5"), "{err}");
    // A platform that does not exist.
    let d = dat(tmp.path(), "300", "2", "2", "0", "0", 0);
    let (ok, _, err) = run(&[&d, "--platform", "/nonexistent.xml"]);
    assert!(!ok);
    assert!(err.contains("cannot load the platform"), "{err}");
}

#[test]
fn message_counts_match_hpl_by_hand() {
    // N = 64, NB = 32 (two panels), depth 0, BCAST 1ring, SWAP binary exchange.
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let messages_with = |p: &str, q: &str, pivots: &str| -> u64 {
        let d = dat(tmp.path(), "64", p, q, "0", "0", 0);
        let (ok, out, err) = run(&[&d, "--platform", &platform, "--json", "--pivots", pivots]);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j[0]["pivots"], pivots);
        j[0]["messages"].as_u64().unwrap()
    };
    let messages = |p: &str, q: &str| messages_with(p, q, "messages");
    // 1 x Q: no pivot exchanges or swaps; the ring sends Q - 1 messages per panel.
    assert_eq!(messages("1", "2"), 2);
    assert_eq!(messages("1", "4"), 2 * 3);
    // 2 x 1: per panel column one pivot exchange (2 messages): 2 x 32 x 2 = 128; per
    // update one U/W exchange (2 messages), two updates (columns 32..65, then 64..65): 4.
    assert_eq!(messages("2", "1"), 128 + 4);
    // 2 x 2: pivots as above in the owning column (128); one ring message per process row
    // and panel (4); panel 0's update swaps in both columns (column 0 owns column 64, the
    // right-hand side, column 1 owns 32..64): 4; panel 1's only in column 0: 2.
    assert_eq!(messages("2", "2"), 128 + 4 + 4 + 2);
    // Aggregated pivots: three exchanges per panel (columns 0, 1 and 31), the rest alike.
    assert_eq!(messages_with("2", "1", "aggregated"), 2 * 3 * 2 + 4);
    assert_eq!(messages_with("2", "2", "aggregated"), 2 * 3 * 2 + 4 + 4 + 2);
}

#[test]
fn aggregated_polls_keep_the_dates_of_probing_chunks() {
    // 4 x 4, depth 1 (the update probes the next panel's broadcast every NB columns):
    // one action for the probed chunks gives HPL's chunk-by-chunk dates and messages.
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let d = dat(tmp.path(), "3000", "4", "4", "1 3", "1", 0);
    let with = |polls: &str, extra: &[&str]| -> Vec<(f64, u64)> {
        let mut args = vec![
            d.as_str(),
            "--platform",
            &platform,
            "--json",
            "--polls",
            polls,
        ];
        args.extend_from_slice(extra);
        let (ok, out, err) = run(&args);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let runs = j.as_array().unwrap();
        assert_eq!(runs.len(), 2);
        runs.iter()
            .map(|r| {
                assert_eq!(r["polls"], polls);
                (
                    r["time_s"].as_f64().unwrap(),
                    r["messages"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let (chunks, aggregated) = (with("chunks", &[]), with("aggregated", &[]));
    for ((tc, mc), (ta, ma)) in chunks.into_iter().zip(aggregated) {
        assert_eq!(mc, ma);
        assert!((ta - tc).abs() <= 1e-3 * tc, "{ta} against {tc}");
    }
    // When probes cost time (SMPI's 1e-4 s times a counter all ranks share), one
    // computation cannot stand for the probed chunks: the skeleton probes every chunk, so
    // both choices give the same dates, later than with free probes.
    let costly = ["--cfg", "smpi/iprobe:1e-4"];
    let (chunks, aggregated) = (with("chunks", &costly), with("aggregated", &costly));
    let free = with("chunks", &[]);
    for (((tc, mc), (ta, ma)), (tf, _)) in chunks.into_iter().zip(aggregated).zip(free) {
        assert_eq!(mc, ma);
        assert_eq!(ta, tc);
        assert!(tc > tf, "probes at 1e-4 s: {tc} s, free: {tf} s");
    }
}

#[test]
fn swap_variants_and_the_mix_threshold() {
    // 2 x 1, N = 64, NB = 32: 128 pivot messages, then two updates of 33 and 1 columns.
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let messages = |swap: u32, threshold: u32| -> u64 {
        let d = dat(tmp.path(), "64", "2", "1", "0", "0", swap);
        let text = std::fs::read_to_string(&d).unwrap().replace(
            "64           swapping threshold",
            &format!("{threshold}           swapping threshold"),
        );
        std::fs::write(&d, text).unwrap();
        let (ok, out, err) = run(&[
            &d,
            "--platform",
            &platform,
            "--json",
            "--pivots",
            "messages",
        ]);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        j[0]["messages"].as_u64().unwrap()
    };
    // Binary exchange: one exchange (2 messages) per update.
    assert_eq!(messages(0, 64), 128 + 2 + 2);
    // Spread-roll: the current row sends the other row its half of U (1 message), then one
    // roll step exchanges halves (2 messages), per update.
    assert_eq!(messages(1, 64), 128 + 3 + 3);
    // Mix: long above the threshold (33 columns > 16), binary exchange below (1 column).
    assert_eq!(messages(2, 16), 128 + 3 + 2);
    // Mix with a threshold above both widths: binary exchange twice.
    assert_eq!(messages(2, 64), 128 + 2 + 2);
}

#[test]
fn bound_ranks_share_their_core_only() {
    // 2 x 2 on one host (`--mapping sequential:4`): with 4 cores each rank has one, bound or
    // not; with 2 cores bound ranks 0 and 2 share core 0 whatever core 1 does, so the run
    // changes. The JSON records the choice.
    let tmp = tempdir();
    let d = dat(tmp.path(), "1000", "2", "2", "1", "1", 2);
    let time = |cores: u32, bind: &str| -> f64 {
        let platform = tmp.path().join(format!("host-{cores}.toml"));
        std::fs::write(
            &platform,
            format!(
                "[cluster]\nhosts = 1\ncores = {cores}\nspeed = \"1Gf\"\nbandwidth = \"1GBps\"\n\
                 latency = \"1us\"\n"
            ),
        )
        .unwrap();
        let (ok, out, err) = run(&[
            &d,
            "--platform",
            platform.to_str().unwrap(),
            "--mapping",
            "sequential:4",
            "--bind-to",
            bind,
            "--json",
        ]);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j[0]["bind_to"], bind);
        j[0]["time_s"].as_f64().unwrap()
    };
    assert_eq!(time(4, "core"), time(4, "none"));
    assert_ne!(time(2, "core"), time(2, "none"));
    let (ok, _, err) = run(&[
        &d,
        "--platform",
        &cluster(tmp.path()),
        "--bind-to",
        "socket",
    ]);
    assert!(!ok && err.contains("socket"), "{err}");
}

#[test]
fn the_timeline_names_hpl_phases_and_changes_nothing() {
    // 2 x 2 on the cluster: the timeline (Chrome trace) holds every rank, spans named by
    // what the rank did and its HPL phase, and marking phases leaves the result unchanged.
    let tmp = tempdir();
    let d = dat(tmp.path(), "500", "2", "2", "1", "1", 1);
    let platform = cluster(tmp.path());
    let trace = tmp.path().join("timeline.json");
    let time = |extra: &[&str]| -> f64 {
        let mut args = vec![d.as_str(), "--platform", platform.as_str(), "--json"];
        args.extend_from_slice(extra);
        let (ok, out, err) = run(&args);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        j[0]["time_s"].as_f64().unwrap()
    };
    assert_eq!(time(&["--timeline", trace.to_str().unwrap()]), time(&[]));
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let names: std::collections::BTreeSet<&str> =
        events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    for phase in [
        "panel factorization",
        "panel broadcast",
        "row swaps",
        "update",
    ] {
        assert!(
            names.iter().any(|n| n.ends_with(&format!("({phase})"))),
            "{phase} missing from {names:?}"
        );
    }
    let ranks: std::collections::BTreeSet<u64> =
        events.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    assert_eq!(ranks.len(), 4, "{ranks:?}");
    // Several configurations: refused, naming the option.
    let two = dat(tmp.path(), "500 600", "2", "2", "1", "1", 1);
    let (ok, _, err) = run(&[
        &two,
        "--platform",
        &platform,
        "--timeline",
        trace.to_str().unwrap(),
    ]);
    assert!(
        !ok && err.contains("--timeline") && err.contains("2 configurations"),
        "{err}"
    );
}

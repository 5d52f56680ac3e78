//! End-to-end tests of `mpiscope replay`: a run recorded under real `mpirun` replayed on a
//! modeled cluster, hand-written SimGrid time-independent traces checked against the model's
//! analytic times, and bad inputs that must give a clear error (never a panic).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{build, mpi_lock, mpiscope, report_json, run_traced, tempdir, Mpi};

/// A flat SimGrid cluster of `hosts` hosts: 1 GB/s, 10 us private split-duplex links, 1 Gf.
fn cluster(dir: &Path, hosts: u32) -> PathBuf {
    let p = dir.join("cluster.xml");
    std::fs::write(
        &p,
        format!(
            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
             <platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\
             <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" \
             bw=\"1GBps\" lat=\"10us\"/></zone></platform>\n",
            hosts - 1
        ),
    )
    .unwrap();
    p
}

/// A SimGrid time-independent trace: one file per rank with the given lines.
fn ti_trace(dir: &Path, ranks: &[&str]) -> PathBuf {
    let index = dir.join("index.txt");
    let mut list = String::new();
    for (r, body) in ranks.iter().enumerate() {
        let f = dir.join(format!("rank{r}.txt"));
        std::fs::write(&f, body).unwrap();
        list.push_str(&format!("{}\n", f.display()));
    }
    std::fs::write(&index, list).unwrap();
    index
}

struct Out {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn replay(args: &[&str]) -> Out {
    let o = Command::new(mpiscope())
        .arg("replay")
        .args(args)
        .output()
        .expect("launch mpiscope");
    Out {
        ok: o.status.success(),
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn replay_json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let o = replay(&a);
    assert!(o.ok, "replay {args:?} failed:\n{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{}", o.stdout))
}

/// A failure that is an error message, not a crash: exit 1 (an error while running).
fn assert_clean_error(o: &Out, needles: &[&str]) {
    assert_error_exit(o, 1, needles);
}

/// A failure with exit `code` (2: a usage error) and a message naming `needles`.
fn assert_error_exit(o: &Out, code: i32, needles: &[&str]) {
    assert!(!o.ok, "expected a failure, got:\n{}", o.stdout);
    assert_eq!(o.code, Some(code), "not a clean error exit:\n{}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "panic:\n{}", o.stderr);
    for n in needles {
        assert!(
            o.stderr.contains(n),
            "`{n}` missing from the error:\n{}",
            o.stderr
        );
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// The bundled example (`examples/halo.c`, 4 ranks, 50 iterations) as a new user reads it:
/// the report's bytes are the matched messages' (the end ranks' halves with MPI_PROC_NULL move
/// nothing), its MPI time is within MPI_Init..MPI_Finalize, every percentile is within the
/// values, and `replay` counts as many MPI_Sendrecv calls per callsite as `report` does,
/// the simulated actions apart.
#[test]
fn halo_example_report_and_replay_agree() {
    let _g = mpi_lock();
    let tmp = tempdir();
    // Compiled here: a test program of `tests/programs` is called `halo` too.
    let exe = tmp.path().join("halo-example");
    let cc = Command::new(Mpi::OpenMpi.cc())
        .args(["-g", "-O2", "-o"])
        .arg(&exe)
        .arg(crate::common::root().join("examples/halo.c"))
        .arg("-lm")
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let (run, dir) = run_traced(Mpi::OpenMpi, 4, &exe, &["50"], &[], tmp.path());
    assert_eq!(run.code, Some(0), "traced run failed:\n{}", run.stderr);
    let r = report_json(&dir);
    // 50 iterations x 2 exchanges x 3 neighbour pairs, one 8-byte message each way.
    let sr = &r["calls"]["MPI_Sendrecv"];
    assert_eq!(sr["count"], 400, "{sr}");
    assert_eq!(
        (sr["bytes_sent"].as_u64(), sr["bytes_received"].as_u64()),
        (Some(2400), Some(2400)),
        "{sr}"
    );
    let p2p: u64 = r["message_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["p2p"].as_u64().unwrap())
        .sum();
    assert_eq!(p2p, 300, "{}", r["message_sizes"]);
    for (name, c) in r["calls"].as_object().unwrap() {
        let q: Vec<f64> = ["median_s", "p90_s", "p99_s", "max_s"]
            .iter()
            .map(|k| c[k].as_f64().unwrap())
            .collect();
        assert!(q.windows(2).all(|w| w[0] <= w[1]), "{name}: {c}");
    }
    for rank in r["per_rank"].as_array().unwrap() {
        let f = |k: &str| rank[k].as_f64().unwrap();
        assert!(f("init_s") > 0.0 && f("finalize_s") > 0.0, "{rank}");
        assert!(f("app_s") + f("init_s") <= f("wall_s") + 1e-9, "{rank}");
        // The first thread's calls and the gaps between them tile the application time.
        assert!(
            (f("mpi_s") + f("compute_s") - f("app_s")).abs() < 1e-6,
            "{rank}"
        );
        assert!(
            (f("mpi_pct") - 100.0 * f("mpi_s") / f("app_s")).abs() < 1e-9,
            "{rank}"
        );
    }
    let sites = r["callsites"].as_array().unwrap();
    let report_sites: Vec<(&str, u64)> = sites
        .iter()
        .filter(|c| c["function"] == "MPI_Sendrecv")
        .map(|c| {
            (
                c["location"].as_str().unwrap_or("?"),
                c["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(report_sites.len(), 2, "{sites:?}");
    for c in sites {
        let f = |k: &str| c[k].as_f64().unwrap();
        assert!(
            f("rank_min_s") <= f("rank_mean_s") && f("rank_mean_s") <= f("rank_max_s"),
            "{c}"
        );
        assert!(f("rank_cov") >= 0.0, "{c}");
    }

    let platform = cluster(tmp.path(), 4);
    let j = replay_json(&[
        dir.to_str().unwrap(),
        "--platform",
        platform.to_str().unwrap(),
    ]);
    let replayed: Vec<&serde_json::Value> = j["callsites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["function"] == "MPI_Sendrecv")
        .collect();
    assert_eq!(replayed.len(), 2, "{}", j["callsites"]);
    for c in replayed {
        let at = c["location"].as_str().unwrap_or("?");
        let want = report_sites.iter().find(|s| s.0 == at).map(|s| s.1);
        assert_eq!(c["calls"].as_u64(), want, "{at}: {c}");
        assert!(c["actions"].as_u64().unwrap() > 200, "{c}");
    }
}

#[test]
fn replay_of_a_recorded_run() {
    let _g = mpi_lock();
    let tmp = tempdir();
    let exe = build(Mpi::OpenMpi, "c/collectives.c", &[]);
    let (run, dir) = run_traced(Mpi::OpenMpi, 4, &exe, &[], &[], tmp.path());
    assert_eq!(run.code, Some(0), "traced run failed:\n{}", run.stderr);
    let platform = cluster(tmp.path(), 4);
    let d = dir.to_str().unwrap();
    let p = platform.to_str().unwrap();

    let j = replay_json(&[d, "--platform", p]);
    let makespan = j["makespan_s"].as_f64().expect("makespan_s");
    assert!(makespan > 0.0 && makespan < 60.0, "makespan {makespan}");
    assert_eq!(j["ranks"], 4);
    let per_rank = j["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), 4);
    for r in per_rank {
        let end = r["end_s"].as_f64().unwrap();
        assert!(end <= makespan + 1e-12, "{r}");
        assert!(r["compute_s"].as_f64().unwrap() >= 0.0);
        assert!(
            r["comm_s"].as_f64().unwrap() > 0.0,
            "every rank communicates: {r}"
        );
    }
    assert!(j["messages"].as_u64().unwrap() > 0);
    // Callsites are numbered across ranks and named by file and line.
    let sites = j["callsites"].as_array().unwrap();
    assert!(!sites.is_empty());
    assert!(
        sites.iter().any(|c| c["location"]
            .as_str()
            .unwrap_or("")
            .contains("collectives.c:")),
        "{sites:?}"
    );
    let ids: std::collections::BTreeSet<u64> = sites
        .iter()
        .map(|c| c["callsite"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), sites.len(), "one entry per callsite");

    // Deterministic: the same input gives the same simulated numbers.
    let again = replay_json(&[d, "--platform", p]);
    assert_eq!(j["makespan_s"], again["makespan_s"]);
    assert_eq!(j["per_rank"], again["per_rank"]);

    // The other models and selectors run the same trace.
    for extra in [
        &["--network", "loggp"][..],
        &["--collectives", "mpich"],
        &["--algorithm", "allreduce=lr", "--mapping", "round-robin"],
    ] {
        let mut a = vec![d, "--platform", p];
        a.extend_from_slice(extra);
        let j = replay_json(&a);
        assert!(j["makespan_s"].as_f64().unwrap() > 0.0, "{extra:?}: {j}");
    }

    // Human-readable report and a Perfetto timeline.
    let timeline = tmp.path().join("timeline.json");
    let o = replay(&[
        d,
        "--platform",
        p,
        "--quiet",
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    assert!(o.ok, "{}", o.stderr);
    assert!(o.stdout.contains("makespan"), "{}", o.stdout);
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&timeline).unwrap()).expect("timeline JSON");
    assert!(!t["traceEvents"].as_array().unwrap().is_empty());
}

#[test]
fn replay_of_ti_traces_matches_the_model() {
    let tmp = tempdir();
    let platform = cluster(tmp.path(), 4);
    let p = platform.to_str().unwrap();

    // One rendezvous transfer of 1e6 bytes: two links of 10 us, then the message and SMPI's
    // 16-byte envelope at 1 GB/s.
    let index = ti_trace(
        tmp.path(),
        &[
            "0 init\n0 send 1 0 1000000\n0 finalize\n",
            "1 init\n1 recv 0 0 1000000\n1 finalize\n",
        ],
    );
    let j = replay_json(&[index.to_str().unwrap(), "--platform", p]);
    let t = j["makespan_s"].as_f64().unwrap();
    assert!(close(t, 20e-6 + 1_000_016e-9, 1e-9), "single transfer: {t}");
    // SimGrid's SMPI model (smpirun's default): above 65,472 bytes the latency is multiplied
    // by 11.6436 and the bandwidth by 0.940694 (SimGrid 3.32 gives 0.001295933952 s).
    let j = replay_json(&[
        index.to_str().unwrap(),
        "--platform",
        p,
        "--network",
        "smpi",
    ]);
    let t = j["makespan_s"].as_f64().unwrap();
    assert!(
        close(t, 20e-6 * 11.6436 + 1_000_016.0 / 0.940694e9, 1e-9),
        "SMPI model: {t}"
    );
    let j = replay_json(&[
        index.to_str().unwrap(),
        "--platform",
        p,
        "--bw-factor",
        "0:0.5",
        "--lat-factor",
        "1000:2",
    ]);
    let t = j["makespan_s"].as_f64().unwrap();
    assert!(close(t, 40e-6 + 2_000_032e-9, 1e-9), "custom factors: {t}");

    // 1e9 flops on a 1 Gf host take one second.
    let d2 = tmp.path().join("compute");
    std::fs::create_dir(&d2).unwrap();
    let index = ti_trace(&d2, &["0 init\n0 compute 1000000000\n0 finalize\n"]);
    let j = replay_json(&[index.to_str().unwrap(), "--platform", p]);
    assert!(close(j["makespan_s"].as_f64().unwrap(), 1.0, 1e-9), "{j}");

    // Two ranks on one host (sequential:2) share its core: twice as long.
    let d3 = tmp.path().join("shared");
    std::fs::create_dir(&d3).unwrap();
    let index = ti_trace(
        &d3,
        &[
            "0 init\n0 compute 1000000000\n0 finalize\n",
            "1 init\n1 compute 1000000000\n1 finalize\n",
        ],
    );
    let i3 = index.to_str().unwrap();
    let j = replay_json(&[i3, "--platform", p, "--mapping", "sequential:2"]);
    assert!(close(j["makespan_s"].as_f64().unwrap(), 2.0, 1e-9), "{j}");
    let j = replay_json(&[i3, "--platform", p]);
    assert!(close(j["makespan_s"].as_f64().unwrap(), 1.0, 1e-9), "{j}");
}

#[test]
fn replay_reports_bad_input() {
    let tmp = tempdir();
    let platform = cluster(tmp.path(), 2);
    let p = platform.to_str().unwrap();

    // Missing input, missing platform.
    let missing = tmp.path().join("nope.txt");
    assert_clean_error(
        &replay(&[missing.to_str().unwrap(), "--platform", p]),
        &["nope.txt"],
    );
    let index = ti_trace(
        tmp.path(),
        &["0 init\n0 recv 1 0 8\n0 finalize\n", "1 init\n1 finalize\n"],
    );
    let i = index.to_str().unwrap();
    assert_clean_error(
        &replay(&[i, "--platform", "/nonexistent/platform.xml"]),
        &["/nonexistent/platform.xml"],
    );

    // A receive nobody sends: a deadlock naming the rank and what it waits for.
    assert_clean_error(&replay(&[i, "--platform", p]), &["deadlock", "rank 0"]);

    // A malformed line names its file and line.
    let d = tmp.path().join("bad");
    std::fs::create_dir(&d).unwrap();
    let bad = ti_trace(
        &d,
        &[
            "0 init\n0 send 1 zero 8\n0 finalize\n",
            "1 init\n1 recv 0 0 8\n1 finalize\n",
        ],
    );
    assert_clean_error(
        &replay(&[bad.to_str().unwrap(), "--platform", p]),
        &["rank0.txt", "2"],
    );

    // Bad options name the option.
    for (opt, val) in [
        ("--mapping", "spiral"),
        ("--network", "pigeon"),
        ("--collectives", "lam"),
        ("--algorithm", "bcast=nosuch"),
        ("--bw-factor", "1000:x"),
        ("--lat-factor", "0.5x"),
    ] {
        // Closed lists are clap's to check: a usage error.
        let usage = ["--network", "--collectives"].contains(&opt);
        assert_error_exit(
            &replay(&[i, "--platform", p, opt, val]),
            if usage { 2 } else { 1 },
            &[opt],
        );
    }

    // A platform with too few hosts for a hostfile entry.
    let hf = tmp.path().join("hosts");
    std::fs::write(&hf, "n0\nn7\n").unwrap();
    assert_clean_error(
        &replay(&[i, "--platform", p, "--hostfile", hf.to_str().unwrap()]),
        &["n7"],
    );
}

/// `--mapping sequential:2` with 4 ranks on a 1-host platform wraps around: the replay
/// says so on stderr and in its JSON's `warnings`; a placement that fits says nothing.
#[test]
fn a_mapping_that_wraps_says_so() {
    let tmp = tempdir();
    let platform = cluster(tmp.path(), 1);
    let bodies: Vec<String> = (0..4)
        .map(|r| format!("{r} init\n{r} compute 1000\n{r} finalize\n"))
        .collect();
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let index = ti_trace(tmp.path(), &refs);
    let (index, platform) = (index.to_str().unwrap(), platform.to_str().unwrap());
    let said = "mapping sequential:2: 4 ranks at 2 per host need 2 hosts, the platform has 1: \
                the placement wraps around to the first host, up to 4 ranks share a host";
    let o = replay(&[
        index,
        "--platform",
        platform,
        "--mapping",
        "sequential:2",
        "--quiet",
    ]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("mpiscope: warning: {said}")),
        "{}",
        o.stderr
    );
    let v = replay_json(&[index, "--platform", platform, "--mapping", "sequential:2"]);
    assert_eq!(v["warnings"], serde_json::json!([said]), "{v:#}");
    // Four ranks per host fit.
    let o = replay(&[
        index,
        "--platform",
        platform,
        "--mapping",
        "sequential:4",
        "--quiet",
    ]);
    assert!(o.ok && !o.stderr.contains("warning"), "{}", o.stderr);
    let v = replay_json(&[index, "--platform", platform, "--mapping", "sequential:4"]);
    assert_eq!(v["warnings"], serde_json::json!([]), "{v:#}");
}

/// SMPI's per-call costs: a test costs 1e-4 s (growing with each failed one) under
/// `--network smpi`, nothing under `flow` unless asked (`--cfg`, a platform's `<config>`,
/// `--simgrid-test-delays`); bad values are errors naming the option, options that change
/// nothing in a replay are warned about.
#[test]
fn smpi_costs_from_flags_and_platforms() {
    let tmp = tempdir();
    let platform = cluster(tmp.path(), 2);
    let p = platform.to_str().unwrap();
    // Rank 0 computes 1 ms, then sends 1 MB (20 us + 1.000016 ms) and 10 bytes on another
    // tag; rank 1 tests its receive four times, waits for both, computes 1 ms.
    let index = ti_trace(
        tmp.path(),
        &[
            "0 init\n0 compute 1000000\n0 send 1 0 1000000\n0 send 1 5 10\n0 finalize\n",
            "1 init\n1 irecv 0 5 10\n1 irecv 0 0 1000000\n1 test 0 1 0\n1 test 0 1 0\n\
             1 test 0 1 0\n1 test 0 1 0\n1 wait 0 1 0\n1 wait 0 1 5\n1 compute 1000000\n\
             1 finalize\n",
        ],
    );
    let i = index.to_str().unwrap();
    let t = |args: &[&str]| {
        let mut a = vec![i, "--platform", p];
        a.extend_from_slice(args);
        replay_json(&a)["makespan_s"].as_f64().unwrap()
    };
    // The 10 bytes arrive 20 us + 26 ns after the 1 MB.
    let flow = t(&[]);
    assert!(
        close(flow, 1e-3 + 1_020_016e-9 + 20_026e-9 + 1e-3, 1e-9),
        "{flow}"
    );
    // 1e-4 + 2e-4 + 3e-4 + 4e-4 s of tests end before the message does: no change...
    assert!(close(t(&["--simgrid-test-delays"]), flow, 1e-12));
    // ... but at 1.5 ms per test, growing, the second one finds it at 4.5 ms (the others
    // find nothing to test); without growth, the third at 4.5 ms.
    let slow = t(&["--cfg", "smpi/test:1.5e-3"]);
    assert!(close(slow, 4.5e-3 + 1e-3, 1e-9), "{slow}");
    let flat = t(&[
        "--cfg",
        "smpi/test:1.5e-3",
        "--cfg",
        "smpi/grow-injected-times:no",
    ]);
    assert!(close(flat, 3e-3 + 1e-3, 1e-9), "{flat}");
    // The same from the platform file, and under --network smpi by default.
    let with_config = tmp.path().join("costly.xml");
    let xml = std::fs::read_to_string(&platform).unwrap().replace(
        "<zone id=\"z\"",
        "<config><prop id=\"smpi/test\" value=\"1.5ms\"/></config><zone id=\"z\"",
    );
    std::fs::write(&with_config, xml).unwrap();
    let j = replay_json(&[i, "--platform", with_config.to_str().unwrap()]);
    assert!(close(j["makespan_s"].as_f64().unwrap(), slow, 1e-12), "{j}");
    let smpi = t(&["--network", "smpi"]);
    let smpi_free = t(&["--network", "smpi", "--cfg", "smpi/test:0"]);
    assert!(close(smpi, smpi_free, 1e-12), "{smpi} {smpi_free}");
    let smpi_slow = t(&["--network", "smpi", "--cfg", "smpi/test:1.5ms"]);
    assert!(smpi_slow > smpi + 1e-3, "{smpi_slow} {smpi}");

    let o = replay(&[i, "--platform", p, "--cfg", "smpi/test:soon"]);
    assert_clean_error(
        &o,
        &["or --cfg", "smpi/test `soon`: expected a non-negative time"],
    );
    let o = replay(&[i, "--platform", p, "--cfg", "smpi/test"]);
    assert_clean_error(&o, &["--cfg smpi/test: expected KEY:VALUE"]);
    let o = replay(&[i, "--platform", p, "--cfg", "smpi/host-speed:1Gf", "--json"]);
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("--cfg smpi/host-speed: option `smpi/host-speed` is SimGrid's")
            && o.stderr.contains("changes nothing in a replay"),
        "{}",
        o.stderr
    );
    let o = replay(&[i, "--platform", p, "--cfg", "smpi/tset:1", "--json"]);
    assert!(
        o.stderr
            .contains("unknown option `smpi/tset` (did you mean `smpi/test`?)"),
        "{}",
        o.stderr
    );
}

//! `mpiscope calibrate`: benchmark results in, a platform out that makes `mpiscope replay`
//! reproduce the measured point-to-point times (the loop of measure, calibrate, simulate).

use std::path::Path;
use std::process::Command;

use crate::common::{mpi_lock, mpiscope, tempdir};

/// One-way time of the synthetic machine: eager below 4 KiB, rendezvous above.
fn one_way(bytes: u64) -> f64 {
    let x = bytes as f64 + 16.0;
    if bytes <= 4096 {
        0.4e-6 + x / 3e9
    } else {
        2.5e-6 + x / 9e9
    }
}

/// `mpiscope-bench --json`-shaped results with SEND & RECV rows (round trips).
pub(crate) fn bench_json(sizes: &[u64]) -> String {
    let rows: Vec<serde_json::Value> = sizes
        .iter()
        .map(|&b| {
            serde_json::json!({
                "repeat": 1, "operation": "SEND & RECV", "key": "send_recv", "ints": b / 4,
                "bytes": 2 * b, "iterations": 100,
                "time": {"n": 100, "mean": 2.0 * one_way(b), "median": 2.0 * one_way(b)},
            })
        })
        .collect();
    serde_json::json!({"np": 2, "results": rows}).to_string()
}

/// Runs `mpiscope calibrate RESULTS -o PLATFORM ARGS`.
fn calibrate(results: &Path, platform: &Path, args: &[&str]) -> std::process::Output {
    Command::new(mpiscope())
        .arg("calibrate")
        .arg(results)
        .arg("-o")
        .arg(platform)
        .args(args)
        .output()
        .unwrap()
}

/// Writes a 2-rank ping-pong of `bytes` as a SimGrid time-independent trace; its index.
fn ping_pong(dir: &Path, bytes: u64) -> std::path::PathBuf {
    let d = dir.join(format!("pp{bytes}"));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("r0"),
        format!("0 init\n0 send 1 0 {bytes}\n0 recv 1 1 {bytes}\n0 finalize\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("r1"),
        format!("1 init\n1 recv 0 0 {bytes}\n1 send 0 1 {bytes}\n1 finalize\n"),
    )
    .unwrap();
    std::fs::write(d.join("index.txt"), "r0\nr1\n").unwrap();
    d.join("index.txt")
}

/// Replays a 2-rank ping-pong of `bytes` on `platform`; the makespan (one round trip).
fn replayed_round_trip(dir: &Path, platform: &Path, bytes: u64) -> f64 {
    let o = Command::new(mpiscope())
        .arg("replay")
        .arg(ping_pong(dir, bytes))
        .arg("--platform")
        .arg(platform)
        .args(["--mapping", "sequential:2", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    j["makespan_s"].as_f64().unwrap()
}

#[test]
fn calibrated_platform_reproduces_the_measurements() {
    let tmp = tempdir();
    let sizes: Vec<u64> = (0..18).map(|i| 8u64 << i).collect();
    let results = tmp.path().join("results.json");
    std::fs::write(&results, bench_json(&sizes)).unwrap();
    let platform = tmp.path().join("calibrated.toml");
    let o = calibrate(&results, &platform, &["--json", "--no-compute"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fit: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(fit["fit"]["pieces"].as_array().unwrap().len(), 2, "{fit}");
    assert!(fit["compute"].is_null(), "{fit}");
    let text = std::fs::read_to_string(&platform).unwrap();
    assert!(
        !text.contains("speed") && !text.contains("mpiscope/dgemm"),
        "{text}"
    );
    for &b in &sizes {
        let t = replayed_round_trip(tmp.path(), &platform, b);
        let want = 2.0 * one_way(b);
        assert!(
            (t - want).abs() <= 1e-3 * want,
            "{b} bytes: replay {t} s, measured {want} s"
        );
    }
}

/// With COLD SEND measured (here 3 GB/s from memory against the warm 9), the platform's
/// large messages replay at the cold rate and the small ones as measured warm.
#[test]
fn large_messages_take_the_cold_rate() {
    let tmp = tempdir();
    let sizes: Vec<u64> = (0..18).map(|i| 8u64 << i).collect();
    let mut j: serde_json::Value = serde_json::from_str(&bench_json(&sizes)).unwrap();
    let cold = |bytes: u64| 2.5e-6 + bytes as f64 / 3e9;
    for b in [1u64 << 16, 1 << 18, 1 << 20] {
        j["results"].as_array_mut().unwrap().push(serde_json::json!({
            "repeat": 1, "operation": "COLD SEND", "key": "cold_send", "ints": b / 4,
            "bytes": b, "iterations": 100, "time": {"n": 100, "mean": cold(b), "median": cold(b)},
        }));
    }
    let results = tmp.path().join("results.json");
    std::fs::write(&results, j.to_string()).unwrap();
    let platform = tmp.path().join("calibrated.toml");
    let o = calibrate(&results, &platform, &["--json", "--no-compute"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fit: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rate = fit["cold"]["bytes_per_second"].as_f64().unwrap();
    assert!((rate - 3e9).abs() < 3e6, "{fit}");
    let b = 1u64 << 20;
    let t = replayed_round_trip(tmp.path(), &platform, b);
    let want = 2.0 * (one_way(b) - b as f64 / 9e9 + b as f64 / 3e9);
    assert!(
        (t - want).abs() <= 0.02 * want,
        "{b} bytes: replay {t} s, want {want} s"
    );
    let small = 1024;
    let t = replayed_round_trip(tmp.path(), &platform, small);
    let want = 2.0 * one_way(small);
    assert!(
        (t - want).abs() <= 1e-3 * want,
        "{small} bytes: replay {t} s, want {want} s"
    );
}

/// With REDUCE LOCAL measured, the platform carries the operator's cost per byte
/// (`mpiscope/reduction`: the median over the sizes of at least 4 KiB), and the summary says it.
#[test]
fn reductions_take_the_measured_rate() {
    let tmp = tempdir();
    let sizes: Vec<u64> = (0..18).map(|i| 8u64 << i).collect();
    let mut j: serde_json::Value = serde_json::from_str(&bench_json(&sizes)).unwrap();
    // 30 GB/s from 4 KiB up; a call's fixed cost below (left out).
    for (b, t) in [
        (64u64, 2e-8),
        (4096, 4096.0 / 30e9),
        (65536, 65536.0 / 30e9),
    ] {
        j["results"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({
                "repeat": 1, "operation": "REDUCE LOCAL", "key": "reduce_local", "ints": b / 4,
                "bytes": b, "iterations": 100, "time": {"n": 100, "mean": t, "median": t},
            }));
    }
    let results = tmp.path().join("results.json");
    std::fs::write(&results, j.to_string()).unwrap();
    let platform = tmp.path().join("calibrated.toml");
    let o = calibrate(&results, &platform, &["--json", "--no-compute"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fit: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let per_byte = fit["reduction"]["seconds_per_byte"].as_f64().unwrap();
    assert!((per_byte * 30e9 - 1.0).abs() < 1e-9, "{fit}");
    assert_eq!(fit["reduction"]["samples"], 2, "{fit}");
    let text = std::fs::read_to_string(&platform).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("\"mpiscope/reduction\" = "))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(line.parse::<f64>().unwrap(), per_byte);
    let o = calibrate(&results, &tmp.path().join("again.toml"), &["--no-compute"]);
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(
        summary.contains("a reduction operator (REDUCE LOCAL) combines 30.00 GB/s"),
        "{summary}"
    );
    // An allreduce of 65,536 integers by recursive doubling: each rank combines the whole
    // vector once, on its own core, after the exchange; without the key it is free.
    let ti = tmp.path().join("allreduce");
    std::fs::create_dir_all(&ti).unwrap();
    for r in 0..2 {
        let actions = format!("{r} init\n{r} allreduce 65536 0 1\n{r} finalize\n");
        std::fs::write(ti.join(format!("r{r}")), actions).unwrap();
    }
    std::fs::write(ti.join("index.txt"), "r0\nr1\n").unwrap();
    let free = tmp.path().join("free.toml");
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("\"mpiscope/reduction\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&free, without).unwrap();
    let makespan = |platform: &Path| {
        let o = Command::new(mpiscope())
            .arg("replay")
            .arg(ti.join("index.txt"))
            .arg("--platform")
            .arg(platform)
            .args(["--mapping", "sequential:2", "--algorithm", "allreduce=rdb"])
            .arg("--json")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        j["makespan_s"].as_f64().unwrap()
    };
    let extra = makespan(&platform) - makespan(&free);
    let want = 262144.0 * per_byte;
    assert!(
        (extra - want).abs() <= 1e-3 * want,
        "{extra} s, want {want} s"
    );
}

#[test]
fn calibrate_a_real_benchmark_run() {
    let _g = mpi_lock();
    let tmp = tempdir();
    let results = tmp.path().join("results.json");
    let bench = mpiscope().with_file_name("mpiscope-bench");
    assert!(
        bench.is_file(),
        "{} is missing: cargo build --release -p mpiscope-bench",
        bench.display()
    );
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .args(["--mca", "mpi_yield_when_idle", "1"])
        .arg(&bench)
        .args([
            "--bytes",
            "m8",
            "M1048576",
            "K8",
            "--only",
            "send_recv,eager_send,message_rate",
            "--reps",
            "10",
        ])
        .args(["T30", "--json", "--output"])
        .arg(&results)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let platform = tmp.path().join("calibrated.toml");
    let o = calibrate(&results, &platform, &["--json", "--kernel-samples", "3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fit: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(fit["network"]["latency"].as_f64().unwrap() > 0.0, "{fit}");
    // This host's OpenBLAS was timed: every default shape, a dgemm speed a single core can
    // have (0.1 to 1000 Gflop/s), a model that explains most of the variation of the times
    // (a timer or kernel that does not scale with the work gives R^2 near 0), and the
    // speed written.
    let kernels = fit["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 58, "{fit}");
    // HPL's updates are timed in its layout (inside a larger matrix), and the dgemm model
    // says how far it is from them, beside the two-term model it replaces.
    assert_eq!(
        kernels
            .iter()
            .filter(|k| k["ld"].as_u64() > Some(0))
            .count(),
        20
    );
    let dgemm = &fit["compute"]["dgemm"];
    assert!(
        dgemm["max_error_in_matrix"].as_f64().unwrap() >= 0.0,
        "{dgemm}"
    );
    assert!(
        dgemm["seconds_per_a_element"].as_f64().unwrap() >= 0.0,
        "{dgemm}"
    );
    let two = &fit["compute"]["dgemm_two_term"];
    assert_eq!(two["seconds_per_a_element"].as_f64(), Some(0.0), "{two}");
    let flops = dgemm["flops"].as_f64().unwrap();
    assert!((1e8..1e12).contains(&flops), "{dgemm}");
    // (0.96-0.999 on a quiet machine; a busy one moves single shapes, hence the margin.)
    assert!(dgemm["r2"].as_f64().unwrap() > 0.5, "{dgemm}");
    assert!(
        fit["compute"]["dtrsm"]["flops"].as_f64().unwrap() > 1e7,
        "{fit}"
    );
    // The panel factorization is timed and fitted too, and written for the HPL skeleton.
    assert!(
        fit["compute"]["panel"]["flops"].as_f64().unwrap() > 1e7,
        "{fit}"
    );
    // So is the row gather of the row swaps (a rate in elements per second).
    assert!(
        fit["compute"]["laswp"]["flops"].as_f64().unwrap() > 1e6,
        "{fit}"
    );
    let text = std::fs::read_to_string(&platform).unwrap();
    // The written speed is the fitted one (compared as numbers: serde_json's default float
    // parsing may be one unit in the last place off the printed value).
    let written: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("speed = "))
        .unwrap_or_else(|| panic!("no speed in:\n{text}"))
        .trim()
        .parse()
        .unwrap();
    assert!(
        (written - flops).abs() <= 1e-12 * flops,
        "{written} vs {flops}\n{text}"
    );
    assert!(text.contains("\"mpiscope/dgemm\" = \""), "{text}");
    // The bench ran on 2 ranks: dgemm was timed with 1 and 2 cores busy, the first factor
    // is 1 by definition, and the platform carries them for the CPU model.
    let eff = fit["compute"]["core_efficiency"].as_array().unwrap();
    assert_eq!(eff.len(), 2, "{fit}");
    assert_eq!(eff[0].as_f64(), Some(1.0));
    assert!(eff[1].as_f64().unwrap() > 0.0, "{fit}");
    assert!(
        text.contains("\"mpiscope/core-efficiency\" = \"1.0000 "),
        "{text}"
    );
    assert!(text.contains("\"mpiscope/panel\" = \""), "{text}");
    assert!(text.contains("\"mpiscope/laswp\" = \""), "{text}");
    // The sender-side operations give LogGP's o and g; 8 B goes eagerly in Open MPI.
    let p = &fit["protocol"];
    assert!(p["largest_eager"].as_u64().unwrap() >= 8, "{p}");
    let (o, g) = (p["o"].as_f64().unwrap(), p["g"].as_f64().unwrap());
    assert!(o > 0.0 && o < 20e-6 && g > 0.0 && g < 20e-6, "{p}");
    assert!(text.contains("\"mpiscope/loggp\" = \""), "{text}");
    // The LogGP model replays with the calibrated parameters.
    let o = Command::new(mpiscope())
        .arg("replay")
        .arg(ping_pong(tmp.path(), 8))
        .arg("--platform")
        .arg(&platform)
        .args(["--mapping", "sequential:2", "--network", "loggp", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The platform loads and replays what the fit says for 8 B (whatever the machine's
    // noise made of the measurement): twice the first piece's latency + (8 + 16) / bandwidth.
    let piece = &fit["fit"]["pieces"][0];
    let (lat, bw) = (
        piece["latency"].as_f64().unwrap(),
        piece["bandwidth"].as_f64().unwrap(),
    );
    let want = 2.0 * (lat.max(1e-9) + 24.0 / bw);
    let t = replayed_round_trip(tmp.path(), &platform, 8);
    assert!(
        (t - want).abs() <= 1e-3 * want + 1e-12,
        "replayed {t} s, fit {want} s: {fit}"
    );

    // Bad input is named.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"np\": 2}").unwrap();
    let o = calibrate(&bad, &platform, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.json"));
}

/// `mpiscope bench --predict`: a real run measured, traced, replayed on a calibrated
/// platform, and every collective and SEND & RECV row matched to its predicted time.
#[test]
fn bench_predict_closes_the_loop() {
    let _g = mpi_lock();
    let tmp = tempdir();
    let results = tmp.path().join("results.json");
    let sizes: Vec<u64> = (0..18).map(|i| 8u64 << i).collect();
    std::fs::write(&results, bench_json(&sizes)).unwrap();
    let platform = tmp.path().join("calibrated.toml");
    let o = calibrate(&results, &platform, &["--no-compute"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let keep = tmp.path().join("loop");
    let o = Command::new(mpiscope())
        .args(["bench", "-np", "2", "--predict"])
        .arg(&platform)
        .arg("--keep")
        .arg(&keep)
        .args(["--bytes", "m8", "M4096", "K8", "T20", "--json"])
        .args([
            "--only",
            "allreduce,reduce,broadcast,gather,allgather,alltoall,send_recv",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 7 * 4, "{rows:?}");
    for r in rows {
        let p = r["predicted_s"].as_f64();
        assert!(
            p.is_some_and(|p| p > 0.0 && p < 1e-2),
            "unmatched or absurd: {r}"
        );
        // (The barrier-corrected median can be slightly negative on a loaded machine: the
        // correction is biased; only that it was measured is checked.)
        assert!(r["measured_median_s"].as_f64().unwrap().is_finite(), "{r}");
        // Each operation was also timed alone (the benchmark ran with --in-call).
        let alone = r["measured_in_call_s"].as_f64().unwrap();
        assert!(alone.is_finite() && r["error_in_call"].is_f64(), "{r}");
    }
    // (Predictions replay the traced run's own compute gaps, so on a loaded machine they
    // carry its noise: no ordering between sizes is asserted.)
    // The replay named the callsites' functions and sizes.
    let replay: serde_json::Value =
        serde_json::from_slice(&std::fs::read(keep.join("replay.json")).unwrap()).unwrap();
    let mut sizes: Vec<u64> = replay["callsites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["function"] == "MPI_Allreduce" && c["calls"].as_u64().unwrap() >= 40)
        .map(|c| c["bytes"].as_u64().unwrap())
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    assert_eq!(sizes, [8, 64, 512, 4096], "{replay}");
    assert!(keep.join("results.json").is_file() && keep.join("run").is_dir());

    // The replay's decision rules: Open MPI 4.1's as Open MPI runs them.
    let o = Command::new(mpiscope())
        .args(["bench", "-np", "2", "--predict"])
        .arg(&platform)
        .args(["--collectives", "openmpi4"])
        .args(["--bytes", "m8", "M4096", "K8", "T5", "--json"])
        .args(["--only", "broadcast,allreduce"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2 * 4, "{rows:?}");
    assert!(rows.iter().all(|r| r["predicted_s"].as_f64() > Some(0.0)));

    // The benchmark's own output options are refused: --predict writes the results.
    let o = Command::new(mpiscope())
        .args(["bench", "--predict"])
        .arg(&platform)
        .args(["m8", "otransfer.dat"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("otransfer.dat"));
}

//! End-to-end tests of `mpiscope plan`: a sweep over a hand-written SimGrid
//! time-independent trace whose times are known analytically, resumed, rerun point by
//! point, shared between two "launcher ranks", and bad studies.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{mpi_lock, mpiscope, tempdir, Mpi};

/// Rank 0 computes 1 Gflop then sends 100 MB to rank 1.
fn workload(dir: &Path) {
    std::fs::write(
        dir.join("rank0.txt"),
        "0 init\n0 compute 1e9\n0 send 1 0 100000000\n0 finalize\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("rank1.txt"),
        "1 init\n1 recv 0 0 100000000\n1 finalize\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("index.txt"),
        format!(
            "{}\n{}\n",
            dir.join("rank0.txt").display(),
            dir.join("rank1.txt").display()
        ),
    )
    .unwrap();
}

const STUDY: &str = r#"
name = "speed and bandwidth"
workload = { ti = "index.txt" }
[platform.cluster]
hosts = 2
speed = "1Gf"
bandwidth = "1GBps"
latency = "10us"
watts = "100:200"
[[axis]]
name = "speed"
set = "scale.speed"
values = [1, 10]
[[axis]]
name = "bandwidth"
set = "scale.bandwidth"
values = [1, 0.01]
[[figure]]
file = "time.svg"
x = "speed"
y = "time_s"
series = "bandwidth"
"#;

fn plan(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(mpiscope());
    c.arg("plan").args(args).current_dir(dir);
    for k in [
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMI_SIZE",
        "SLURM_PROCID",
        "SLURM_NTASKS",
    ] {
        c.env_remove(k);
    }
    c.envs(env.iter().copied());
    c.output().expect("launch mpiscope")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn rows(dir: &Path) -> Vec<serde_json::Value> {
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("study/results.json")).unwrap())
            .unwrap();
    j["rows"].as_array().unwrap().clone()
}

fn time(rows: &[serde_json::Value], speed: f64, bw: f64) -> f64 {
    rows.iter()
        .find(|r| r["speed"].as_f64() == Some(speed) && r["bandwidth"].as_f64() == Some(bw))
        .unwrap_or_else(|| panic!("no row speed={speed} bandwidth={bw}: {rows:?}"))["time_s"]
        .as_f64()
        .unwrap()
}

#[test]
fn plan_sweeps_resumes_and_shares_points() {
    let tmp = tempdir();
    let dir = tmp.path();
    workload(dir);
    std::fs::write(dir.join("study.toml"), STUDY).unwrap();

    let o = plan(dir, &["study.toml", "--quiet"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("4 point(s) simulated, 0 already finished"),
        "{}",
        text(&o)
    );
    let r = rows(dir);
    assert_eq!(r.len(), 4);
    // Ten times faster hosts: the 1 s computation takes 0.1 s, the transfer is unchanged.
    let d = time(&r, 1.0, 1.0) - time(&r, 10.0, 1.0);
    assert!((d - 0.9).abs() < 1e-6, "{d}");
    // A hundred times less bandwidth: 100 MB take about 10 s instead of 0.1 s (the flow
    // model's bandwidth factor stays within 0.9-1).
    let d = time(&r, 1.0, 0.01) - time(&r, 1.0, 1.0);
    assert!(d > 9.8 && d < 11.2, "{d}");
    // Energy: two hosts idle at 100 W over the run, plus 100 W more while rank 0 computes.
    for (speed, bw) in [(1.0, 1.0), (10.0, 0.01)] {
        let row = r
            .iter()
            .find(|x| x["speed"].as_f64() == Some(speed) && x["bandwidth"].as_f64() == Some(bw))
            .unwrap();
        let expected = 200.0 * time(&r, speed, bw) + 100.0 / speed;
        let e = row["energy_j"].as_f64().unwrap();
        assert!((e - expected).abs() < 1e-6 * expected, "{e} vs {expected}");
        assert!(row["sim_wall_s"].as_f64().is_some(), "{row}");
    }
    let csv = std::fs::read_to_string(dir.join("study/results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(
        csv.starts_with("point,speed,bandwidth,time_s,gflops,energy_j,sim_wall_s\n"),
        "{csv}"
    );
    let svg = std::fs::read_to_string(dir.join("study/time.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
    // Each point records its configuration and the command that reruns it.
    let p2: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("study/points/point-00002.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(p2["config"]["scale_speed"], 10.0);
    assert!(
        p2["command"].as_str().unwrap().ends_with("--point 2"),
        "{p2}"
    );
    assert!(
        p2["config"]["platform"]
            .as_str()
            .unwrap()
            .contains("[cluster]"),
        "{p2}"
    );

    // Resumed: nothing to simulate.
    let o = plan(dir, &["study.toml", "--quiet"], &[]);
    assert!(
        text(&o).contains("0 point(s) simulated, 4 already finished"),
        "{}",
        text(&o)
    );
    // One point again, alone.
    let o = plan(dir, &["study.toml", "--quiet", "--point", "2"], &[]);
    assert!(text(&o).contains("1 point(s) simulated"), "{}", text(&o));
    // A changed study reruns only what changed: a third speed adds two points.
    std::fs::write(
        dir.join("study.toml"),
        STUDY.replace("values = [1, 10]", "values = [1, 10, 100]"),
    )
    .unwrap();
    let o = plan(dir, &["study.toml", "--quiet"], &[]);
    assert!(
        text(&o).contains("2 point(s) simulated, 4 already finished"),
        "{}",
        text(&o)
    );

    // Shared between two launcher ranks: each simulates its half, the second completes.
    let out = dir.join("shared");
    let o = plan(
        dir,
        &["study.toml", "--quiet", "--out", "shared"],
        &[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")],
    );
    assert!(
        text(&o).contains("3 point(s) simulated") && text(&o).contains("share 0 of 2"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("3 of 6 points are another process's"),
        "{}",
        text(&o)
    );
    assert!(!out.join("results.csv").exists());
    let o = plan(
        dir,
        &["study.toml", "--quiet", "--out", "shared"],
        &[("PMI_RANK", "1"), ("PMI_SIZE", "2")],
    );
    assert!(text(&o).contains("3 point(s) simulated"), "{}", text(&o));
    assert!(!text(&o).contains("not finished"), "{}", text(&o));
    let shared = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(shared.lines().count(), 7);
}

/// Under real `mpirun` (Open MPI and MPICH's Hydra), each process takes its share of the
/// points and together they finish the study.
#[test]
fn plan_under_mpirun_shares_the_points() {
    for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
        let tmp = tempdir();
        let dir = tmp.path();
        workload(dir);
        std::fs::write(dir.join("study.toml"), STUDY).unwrap();
        let o = {
            let _guard = mpi_lock();
            let launcher = mpi.launcher(2);
            Command::new(&launcher[0])
                .args(&launcher[1..])
                .arg(mpiscope())
                .args(["plan", "study.toml", "--quiet", "--jobs", "1"])
                .current_dir(dir)
                .output()
                .expect("launch mpirun")
        };
        let t = text(&o);
        assert!(o.status.success(), "{}: {t}", mpi.name());
        assert!(
            t.contains("share 0 of 2") && t.contains("share 1 of 2"),
            "{}: {t}",
            mpi.name()
        );
        assert_eq!(
            t.matches("2 point(s) simulated").count(),
            2,
            "{}: {t}",
            mpi.name()
        );
        // Whoever finished last wrote the complete results (the other may have written a
        // partial table first; the final one has every point).
        let o = plan(dir, &["study.toml", "--quiet", "--report"], &[]);
        assert!(
            o.status.success() && !text(&o).contains("not finished"),
            "{}",
            text(&o)
        );
        assert_eq!(rows(dir).len(), 4, "{}", mpi.name());
    }
}

/// The shipped generic study runs over any trace given on the command line.
#[test]
fn plan_what_if_study_over_a_given_trace() {
    let tmp = tempdir();
    let dir = tmp.path();
    workload(dir);
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/studies/what-if.toml");
    let study = study.to_str().unwrap();
    let o = plan(
        dir,
        &[study, "--ti", "index.txt", "--out", "w", "--quiet"],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("w/results.json")).unwrap())
            .unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7, "{j}");
    let t = |varied: &str, value: f64| {
        rows.iter()
            .find(|r| r["varied"] == varied && r["value"].as_f64() == Some(value))
            .unwrap_or_else(|| panic!("{varied} {value}: {j}"))["time_s"]
            .as_f64()
            .unwrap()
    };
    // The fat tree's hosts compute at 10 Gf: 1 Gflop takes 0.1 s, 1 s at a tenth the speed.
    assert!((t("node speed", 0.1) - t("node speed", 1.0) - 0.9).abs() < 1e-6);
    assert!(
        t("bandwidth", 0.1) > t("node speed", 1.0) && t("bandwidth", 10.0) < t("node speed", 1.0)
    );
    assert!(t("latency", 10.0) > t("latency", 0.1));
    let svg = std::fs::read_to_string(dir.join("w/what-if.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
}

/// An HPL.dat as a study's workload: one row per configuration, HPL's labels and Gflops.
#[test]
fn plan_over_the_hpl_skeleton() {
    let tmp = tempdir();
    let dir = tmp.path();
    let dat = "HPLinpack benchmark input file\nInnovative Computing Laboratory\nHPL.out\n6\n\
               2 # of problems sizes (N)\n400 800 Ns\n1 # of NBs\n32 NBs\n0 PMAP\n\
               1 # of process grids\n2 Ps\n2 Qs\n16.0 threshold\n1 # of panel fact\n2 PFACTs\n\
               1 # of recursive stopping criterium\n4 NBMINs\n1 # of panels in recursion\n2 NDIVs\n\
               1 # of recursive panel fact.\n1 RFACTs\n1 # of broadcast\n1 BCASTs\n\
               1 # of lookahead depth\n1 DEPTHs\n2 SWAP\n64 swapping threshold\n0 L1\n0 U\n\
               1 Equilibration\n8 memory alignment\n";
    std::fs::write(dir.join("HPL.dat"), dat).unwrap();
    let study = r#"
workload = { hpl = "HPL.dat" }
[platform.cluster]
hosts = 4
speed = "1Gf"
bandwidth = "1GBps"
latency = "10us"
[[axis]]
name = "speed"
set = "scale.speed"
values = [1, 10]
[[figure]]
file = "gflops.svg"
x = "speed"
y = "gflops"
series = "n"
"#;
    std::fs::write(dir.join("hpl.toml"), study).unwrap();
    let o = plan(dir, &["hpl.toml", "--quiet"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("hpl/results.json")).unwrap())
            .unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{j}");
    for r in rows {
        assert_eq!(r["tv"], "WR11C2R4", "{r}");
        assert_eq!(
            (r["p"].as_u64(), r["q"].as_u64(), r["nb"].as_u64()),
            (Some(2), Some(2), Some(32))
        );
        // HPL's Gflops is its flop count over the time.
        let n = r["n"].as_f64().unwrap();
        let flops = 2.0 / 3.0 * n * n * n + 1.5 * n * n;
        let g = r["gflops"].as_f64().unwrap();
        assert!(
            (g - flops / r["time_s"].as_f64().unwrap() / 1e9).abs() < 1e-6 * g,
            "{r}"
        );
    }
    let g = |speed: f64, n: f64| {
        rows.iter()
            .find(|r| r["speed"].as_f64() == Some(speed) && r["n"].as_f64() == Some(n))
            .unwrap()["gflops"]
            .as_f64()
            .unwrap()
    };
    // Ten times faster nodes give more Gflop/s, less than ten times more (communication).
    for n in [400.0, 800.0] {
        assert!(
            g(10.0, n) > g(1.0, n) && g(10.0, n) < 10.0 * g(1.0, n),
            "{j}"
        );
    }
    let svg = std::fs::read_to_string(dir.join("hpl/gflops.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
}

#[test]
fn plan_reports_bad_studies() {
    let tmp = tempdir();
    let dir = tmp.path();
    workload(dir);
    let bad = [
        ("missing.toml", None, "missing.toml"),
        (
            "a.toml",
            Some(STUDY.replace("scale.speed", "scale.colour")),
            "scale.colour",
        ),
        (
            "b.toml",
            Some(STUDY.replace("y = \"time_s\"", "y = \"joy\"")),
            "joy",
        ),
        (
            "c.toml",
            Some(STUDY.replace("index.txt", "nowhere.txt")),
            "nowhere.txt",
        ),
    ];
    for (file, body, needle) in bad {
        if let Some(b) = body {
            std::fs::write(dir.join(file), b).unwrap();
        }
        let o = plan(dir, &[file, "--quiet"], &[]);
        assert_eq!(o.status.code(), Some(1), "{file}: {}", text(&o));
        assert!(text(&o).contains(needle), "{file}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{file}: {}", text(&o));
    }
}

//! The command-line conventions of docs/CLI.md, end to end: exit codes (1 for an error while
//! running, 2 for a usage error, the program's own for `trace`), an OS error said once with
//! its path, out-of-range selections named with the valid range, `--json` on every command
//! that prints a result (one parseable document with `schema`, JSON Lines for `dump`),
//! `--quiet`, and the completions and man pages made from the command tree.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{build, mpi_lock, mpiscope, run_traced, tempdir, Mpi};

fn mpiscope_with(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(mpiscope());
    for a in args {
        c.arg(a);
    }
    c.output().expect("run mpiscope")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// stdout as one JSON document with `"schema": 1`.
fn document(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}):\n{}",
            String::from_utf8_lossy(&o.stdout)
        )
    });
    assert_eq!(v["schema"], 1, "{v:#}");
    v
}

/// A 4-rank trace of the point-to-point program.
fn traced(dir: &Path) -> PathBuf {
    // Built under the lock: the tests that build it at once would write the same file.
    let _g = mpi_lock();
    let exe = build(Mpi::OpenMpi, "c/p2p_blocking.c", &[]);
    let (r, run) = run_traced(Mpi::OpenMpi, 4, &exe, &[], &[], dir);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    run
}

#[test]
fn errors_while_running_exit_1_and_usage_errors_exit_2() {
    let tmp = tempdir();
    let missing = tmp.path().join("no-such-run");
    for cmd in ["dump", "report", "structure"] {
        let o = mpiscope_with(&[&cmd, &missing]);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("mpiscope: error: "),
            "{}",
            stderr(&o)
        );
    }
    for usage in [
        &["dump"][..],
        &["frobnicate"][..],
        &["report", "x", "--no-such-flag"][..],
        &["report", "x", "--window", "soon"][..],
        &["replay", "x", "--platform", "p", "--network", "pigeon"][..],
        &["hpl", "x", "--platform", "p", "--pivots", "some"][..],
        &["overlap", "bench", "--kind", "nap"][..],
        &["overlap"][..],
    ] {
        let args: Vec<&dyn AsRef<std::ffi::OsStr>> = usage.iter().map(|a| a as _).collect();
        let o = mpiscope_with(&args);
        assert_eq!(o.status.code(), Some(2), "{usage:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("mpiscope: error"), "{}", stderr(&o));
    }
    // `--help` and `--version` are not errors.
    for ok in ["--help", "--version"] {
        let o = mpiscope_with(&[&ok]);
        assert_eq!(o.status.code(), Some(0), "{ok}");
        assert!(!o.stdout.is_empty());
    }
}

#[test]
fn an_os_error_is_said_once_with_its_path() {
    let tmp = tempdir();
    let missing = tmp.path().join("gone");
    let o = mpiscope_with(&[&"dump", &missing]);
    let e = stderr(&o);
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
    assert!(e.contains(&missing.display().to_string()), "{e}");
    // A directory that cannot be made: named, the OS error once.
    let out = tmp.path().join("a-file");
    std::fs::write(&out, "x").unwrap();
    let o = mpiscope_with(&[&"man", &out.join("pages"), &"--quiet"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert_eq!(e.matches("(os error").count(), 1, "{e}");
}

#[test]
fn selections_outside_the_run_are_errors_naming_the_range() {
    let tmp = tempdir();
    let run = traced(tmp.path());
    for cmd in ["dump", "structure"] {
        let o = mpiscope_with(&[&cmd, &run, &"--rank", &"9"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {e}");
        assert!(
            e.contains("--rank 9: the run has ranks 0 to 3"),
            "{cmd}: {e}"
        );
        assert!(o.stdout.is_empty(), "{cmd} printed something");
    }
    let o = mpiscope_with(&[&"report", &run, &"--window", &"1000:"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("--window 1000:") && e.contains("the run's calls enter from"),
        "{e}"
    );
    // An output beside which no temporary file can be created: the target named, the OS
    // error once (not again with the temporary file's name).
    let page = tmp.path().join("no-dir").join("r.html");
    let mut c = Command::new(mpiscope());
    c.arg("report").arg(&run).arg("--html").arg(&page);
    let o = c.output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.matches("(os error").count(), 1, "{e}");
    assert!(
        e.contains(&page.display().to_string()) && !e.contains(".mpiscope-"),
        "{e}"
    );
    // In range: fine.
    let o = mpiscope_with(&[&"dump", &run, &"--rank", &"3", &"--limit", &"1"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn every_result_has_json() {
    let tmp = tempdir();
    let run = traced(tmp.path());
    for cmd in ["report", "structure"] {
        let v = document(&mpiscope_with(&[&cmd, &run, &"--json"]));
        assert!(v.as_object().unwrap().len() > 1, "{cmd}: {v}");
    }
    let v = document(&mpiscope_with(&[&"compare", &run, &run, &"--json"]));
    assert!(v.is_object());

    // dump: JSON Lines, one object per line.
    let o = mpiscope_with(&[&"dump", &run, &"--json", &"--defs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let of = |t: &str| lines.iter().filter(|l| l["type"] == t).count();
    assert_eq!(of("rank"), 4);
    assert_eq!(of("end"), 4);
    assert!(of("event") > 20 && of("comm") >= 4 && of("callsite") > 0);
    assert!(lines.iter().all(|l| l["schema"] == 1));
    let send = lines
        .iter()
        .find(|l| l["call"] == "MPI_Send")
        .expect("an MPI_Send");
    assert!(
        send["args"]["peer"].is_i64() && send["duration_ns"].is_u64(),
        "{send}"
    );

    // export: the summary of what was written; nothing on stderr with --quiet.
    let out = tmp.path().join("chrome.json");
    let o = mpiscope_with(&[
        &"export",
        &run,
        &"--format",
        &"chrome",
        &"-o",
        &out,
        &"--json",
        &"--quiet",
    ]);
    let v = document(&o);
    assert_eq!(v["format"], "chrome");
    assert_eq!(v["ranks"], 4);
    assert_eq!(v["output"], out.display().to_string());
    assert!(out.is_file());
    assert!(!stderr(&o).contains("wrote"), "{}", stderr(&o));

    // trace: the summary after the program's own output.
    let t2 = tmp.path().join("again");
    let o = {
        let _g = mpi_lock();
        let exe = build(Mpi::OpenMpi, "c/p2p_blocking.c", &[]);
        let mut c = Command::new(mpiscope());
        c.args(["trace", "--json", "-q", "-o"])
            .arg(&t2)
            .arg("--preload")
            .arg(Mpi::OpenMpi.preload())
            .arg("--")
            .args(Mpi::OpenMpi.launcher(2))
            .arg(&exe);
        c.output().unwrap()
    };
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let start = text.find("{\n").expect("a JSON document");
    assert!(
        text[..start].contains("p2p_blocking"),
        "the program's output first: {text}"
    );
    let v: serde_json::Value = serde_json::from_str(&text[start..]).unwrap();
    assert_eq!(
        (
            v["schema"].as_u64(),
            v["ranks"].as_u64(),
            v["exit_status"].as_i64()
        ),
        (Some(1), Some(2), Some(0)),
        "{v}"
    );
    assert_eq!(v["traced"], true);
    assert!(!stderr(&o).contains("mpiscope: traced"), "{}", stderr(&o));
}

#[test]
fn plan_json_and_its_output_spellings() {
    let tmp = tempdir();
    let d = tmp.path();
    for (r, body) in [
        (
            "rank0.txt",
            "0 init\n0 compute 1e6\n0 send 1 0 1000\n0 finalize\n",
        ),
        ("rank1.txt", "1 init\n1 recv 0 0 1000\n1 finalize\n"),
    ] {
        std::fs::write(d.join(r), body).unwrap();
    }
    std::fs::write(
        d.join("index.txt"),
        format!(
            "{}\n{}\n",
            d.join("rank0.txt").display(),
            d.join("rank1.txt").display()
        ),
    )
    .unwrap();
    let study = d.join("study.toml");
    std::fs::write(
        &study,
        "name = \"s\"\nworkload = { ti = \"index.txt\" }\n[platform.cluster]\nhosts = 2\n\
         speed = \"1Gf\"\nbandwidth = \"1GBps\"\nlatency = \"10us\"\n[[axis]]\nname = \"speed\"\n\
         set = \"scale.speed\"\nvalues = [1, 10]\n",
    )
    .unwrap();
    let out = d.join("results");
    let o = mpiscope_with(&[&"plan", &study, &"--output", &out, &"--json", &"-q"]);
    let v = document(&o);
    assert_eq!(
        (
            v["points"].as_u64(),
            v["simulated"].as_u64(),
            v["reused"].as_u64()
        ),
        (Some(2), Some(2), Some(0)),
        "{v}"
    );
    assert_eq!(v["failed"], serde_json::json!([]));
    assert_eq!(v["output"], out.display().to_string());
    assert!(v["files"].as_array().unwrap().len() >= 2, "{v}");
    assert!(
        stderr(&o).contains("2 point(s) simulated"),
        "the summary stays: {}",
        stderr(&o)
    );
    // The earlier spelling still names the same directory: the points are reused.
    let v = document(&mpiscope_with(&[
        &"plan", &study, &"--out", &out, &"--json", &"-q",
    ]));
    assert_eq!(
        (v["simulated"].as_u64(), v["reused"].as_u64()),
        (Some(0), Some(2))
    );
}

#[test]
fn completions_and_man_pages() {
    for shell in ["bash", "zsh", "fish"] {
        let o = mpiscope_with(&[&"completions", &shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("mpiscope") && text.contains("replay"),
            "{shell}"
        );
    }
    assert_eq!(
        mpiscope_with(&[&"completions", &"tcsh"]).status.code(),
        Some(2)
    );
    let tmp = tempdir();
    let dir = tmp.path().join("man1");
    let v = document(&mpiscope_with(&[&"man", &dir, &"--json", &"-q"]));
    let pages = v["pages"].as_array().unwrap();
    assert!(pages.len() > 12, "{v}");
    for p in ["mpiscope.1", "mpiscope-trace.1", "mpiscope-overlap-bench.1"] {
        let text = std::fs::read_to_string(dir.join(p)).unwrap();
        assert!(text.contains(".TH mpiscope") && text.len() > 200, "{p}");
    }
    // Written again over its own pages; a file it did not write is kept.
    std::fs::write(dir.join("mpiscope-dump.1"), "my notes\n").unwrap();
    let o = mpiscope_with(&[&"man", &dir, &"-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("mpiscope-dump.1")).unwrap(),
        "my notes\n"
    );
    assert!(mpiscope_with(&[&"man", &dir, &"-q", &"--force"])
        .status
        .success());
}

#[test]
fn ranks_are_spelled_alike() {
    // `overlap bench` takes mpirun's `-np` as `--ranks`: a bad value is named as the option.
    let o = mpiscope_with(&[&"overlap", &"bench", &"-np", &"0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--ranks"), "{}", stderr(&o));
    let o = mpiscope_with(&[&"bench", &"--ranks", &"0"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--ranks 0"), "{}", stderr(&o));
}

//! Differential tests against SimGrid 3.32: the same time-independent traces replayed by
//! `smpirun -replay` (CM02 network model, Open MPI collective selector) and by our
//! simulator on the same platform must give the same makespan (within 1% for
//! point-to-point traces, 5% with collectives).
//!
//! Traces are recorded from our C programs (`tests/programs`) with `smpirun -trace-ti`.
//! SimGrid must be installed (`apt-get install simgrid libsimgrid-dev`); the tests fail
//! with that message otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use mpiscope_sim::platform::{self, HostId};
use mpiscope_sim::workload::ti;
use mpiscope_sim::{SimConfig, Simulation};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn need(tool: &str) {
    let ok = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().map(|o| o.status.success()).unwrap_or(false);
    assert!(ok, "{tool} is not installed: install SimGrid (Debian: apt-get install simgrid libsimgrid-dev)");
}

/// Records the TI trace of `program` at `np` ranks on `platform`; returns the index file.
fn record(dir: &Path, program: &str, np: u32, platform: &Path, hostfile: &Path) -> PathBuf {
    need("smpicc");
    need("smpirun");
    let exe = dir.join(program);
    let src = here().join("programs").join(format!("{program}.c"));
    let o = Command::new("smpicc").arg("-O1").arg("-o").arg(&exe).arg(&src).output().unwrap();
    assert!(o.status.success(), "smpicc {}: {}", src.display(), String::from_utf8_lossy(&o.stderr));
    let index = dir.join(format!("{program}-{np}.txt"));
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
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "smpirun -trace-ti {program}: {}", String::from_utf8_lossy(&o.stderr));
    index
}

/// SimGrid's replay time of `index`.
fn simgrid_time(dir: &Path, index: &Path, np: u32, platform: &Path, hostfile: &Path) -> f64 {
    let o = Command::new("smpirun")
        .arg("-replay")
        .arg(index)
        .arg("-np")
        .arg(np.to_string())
        .arg("-platform")
        .arg(platform)
        .arg("-hostfile")
        .arg(hostfile)
        .arg("--cfg=network/model:CM02")
        .arg("--cfg=smpi/coll-selector:ompi")
        .arg("--log=smpi_replay.fmt:[%.12d]%e%m%n")
        .current_dir(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "smpirun -replay failed:\n{text}");
    let line = text.lines().filter(|l| l.contains("Simulation time")).last().unwrap_or_else(|| panic!("no simulation time in:\n{text}"));
    let t = line.trim_start_matches('[').split(']').next().unwrap();
    t.parse().unwrap()
}

/// Our replay time of `index`.
fn our_time(index: &Path, platform: &Path, hostfile: &Path) -> f64 {
    let p = platform::load(platform).unwrap();
    let w = ti::load(index, ti::TiOptions { simgrid_test_delays: true }).unwrap();
    let names: Vec<String> = std::fs::read_to_string(hostfile).unwrap().lines().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect();
    let hosts: Vec<HostId> = (0..w.len()).map(|i| p.host_id(&names[i % names.len()]).unwrap()).collect();
    let sim = Simulation::new(&p, SimConfig::default(), hosts, w).unwrap();
    sim.run().unwrap().makespan_s
}

fn flat_cluster(dir: &Path, n: u32) -> (PathBuf, PathBuf) {
    let xml = dir.join("cluster.xml");
    std::fs::write(
        &xml,
        format!(
            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<zone id=\"AS0\" routing=\"Full\">\n<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\"/>\n</zone>\n</platform>\n",
            n - 1
        ),
    )
    .unwrap();
    let hf = dir.join("hosts");
    std::fs::write(&hf, (0..n).map(|i| format!("n{i}\n")).collect::<String>()).unwrap();
    (xml, hf)
}

fn compare(program: &str, np: u32, tolerance: f64) {
    let tmp = tempfile::tempdir().unwrap();
    let (xml, hf) = flat_cluster(tmp.path(), np.max(16));
    let index = record(tmp.path(), program, np, &xml, &hf);
    let theirs = simgrid_time(tmp.path(), &index, np, &xml, &hf);
    let ours = our_time(&index, &xml, &hf);
    let err = (ours - theirs).abs() / theirs;
    eprintln!("{program} np={np}: SimGrid {theirs:.9} s, ours {ours:.9} s, error {:.3}%", err * 100.0);
    assert!(err <= tolerance, "{program} np={np}: SimGrid {theirs} s vs ours {ours} s ({:.3}% > {:.1}%)", err * 100.0, tolerance * 100.0);
}

#[test]
fn p2p_flat_cluster_8() {
    compare("p2p_mix", 8, 0.01);
}

#[test]
fn p2p_flat_cluster_16() {
    compare("p2p_mix", 16, 0.01);
}

#[test]
fn collectives_flat_cluster_4() {
    compare("coll_mix", 4, 0.05);
}

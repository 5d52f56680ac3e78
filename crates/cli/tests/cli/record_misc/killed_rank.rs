//! A rank killed (SIGKILL) mid-run: the launcher's end is waited for (bounded), then `report`
//! and `dump` read what the killed rank wrote before the kill, without a trailer, with a
//! warning naming the rank and never a panic.

use crate::common;

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{alive, assert_no_panic, kill_group, mpiscope, of, rank_stats};
use crate::common::Mpi;
use mpiscope_trace::Slot;

fn killed_rank(mpi: Mpi) {
    let exe = common::build(mpi, "misc/forever.c", &[]);
    let tmp = common::tempdir();
    let trace = tmp.path().join("trace");
    let pidfile = tmp.path().join("pid");
    let mut c = Command::new(common::mpiscope());
    c.arg("trace")
        .arg("-o")
        .arg(&trace)
        .arg("--preload")
        .arg(mpi.preload())
        .args(["--buffer", "4K", "--"]);
    c.args(mpi.launcher(2)).arg(&exe).arg(&pidfile);
    use std::os::unix::process::CommandExt;
    c.process_group(0);
    c.stdout(Stdio::null())
        .stderr(File::create(tmp.path().join("stderr")).unwrap())
        .stdin(Stdio::null());
    let mut child = c.spawn().expect("spawn mpiscope trace");
    let pgid = child.id();

    // Wait for both ranks' pid files.
    let start = Instant::now();
    let read_pid = |r: u32| -> Option<u32> {
        std::fs::read_to_string(format!("{}.{r}", pidfile.display()))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let pids = loop {
        if let (Some(a), Some(b)) = (read_pid(0), read_pid(1)) {
            break Some((a, b));
        }
        if start.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let Some((pid0, pid1)) = pids else {
        kill_group(pgid);
        let _ = child.wait();
        panic!(
            "the ranks never started: {}",
            std::fs::read_to_string(tmp.path().join("stderr")).unwrap_or_default()
        );
    };
    std::thread::sleep(Duration::from_secs(2));
    let killed = Command::new("kill")
        .args(["-KILL", &pid1.to_string()])
        .status()
        .unwrap();
    assert!(killed.success(), "cannot kill rank 1 (pid {pid1})");

    // The launcher notices and ends the run; if it does not within 30 s, end it.
    let t = Instant::now();
    let mut forced = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t.elapsed() > Duration::from_secs(30) {
            forced = true;
            kill_group(pgid);
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive(pid0) {
        let _ = Command::new("kill")
            .args(["-KILL", &pid0.to_string()])
            .status();
    }
    if forced {
        eprintln!("note: the launcher did not exit within 30 s of the kill; it was killed");
    }

    let rep = mpiscope(&["report", trace.to_str().unwrap(), "--json"]);
    assert_no_panic("report", &rep);
    assert_eq!(
        rep.code,
        Some(0),
        "report of a run with a killed rank failed:\n{}",
        rep.stderr
    );
    let j: serde_json::Value = serde_json::from_str(&rep.stdout).unwrap();
    assert_eq!(j["ranks"], 2);
    let r1 = rank_stats(&j, 1);
    assert_eq!(r1["rank"], 1);
    assert_eq!(
        r1["complete"], false,
        "the killed rank cannot have a trailer: {r1}"
    );
    let n = r1["events"].as_u64().unwrap();
    assert!(
        n > 100,
        "the killed rank's blocks written before the kill must be read: {r1}"
    );
    assert!(
        j["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("rank 1")),
        "no warning about rank 1: {}",
        j["warnings"]
    );
    assert!(j["calls"]["MPI_Sendrecv"]["recorded"].as_u64().unwrap() > 0);

    // The killed rank's events read back one by one.
    let re = common::read_rank(&trace, 1);
    assert!(!re.complete);
    assert_eq!(re.events.len() as u64, n);
    for (name, _) in &re.events {
        assert!(
            [
                "MPI_Init",
                "MPI_Comm_rank",
                "MPI_Comm_size",
                "MPI_Iprobe",
                "MPI_Sendrecv"
            ]
            .contains(&name.as_str()),
            "unexpected event {name} in the killed rank's file"
        );
    }
    let sr = of(&re.events, "MPI_Sendrecv");
    assert!(sr
        .iter()
        .all(|e| e.args.get(Slot::Peer) == Some(0) && e.args.get(Slot::Bytes) == Some(4)));

    for args in [
        vec!["dump", trace.to_str().unwrap()],
        vec![
            "dump",
            trace.to_str().unwrap(),
            "--rank",
            "1",
            "--limit",
            "50",
        ],
    ] {
        let d = mpiscope(&args);
        assert_no_panic("dump", &d);
        assert_eq!(d.code, Some(0), "mpiscope {args:?} failed:\n{}", d.stderr);
        assert!(
            d.stdout.contains("MPI_Sendrecv"),
            "mpiscope {args:?} shows no events"
        );
    }
}

#[test]
fn killed_rank_openmpi() {
    let _g = common::mpi_lock();
    killed_rank(Mpi::OpenMpi);
}

#[test]
fn killed_rank_mpich() {
    let _g = common::mpi_lock();
    killed_rank(Mpi::Mpich);
}

//! `scripts/netlab.sh`, the emulated cluster network: a namespace of its own whose loopback
//! is shaped by tbf carries a 2-rank Open MPI run over TCP at about the rate set (0.5x to
//! 1.2x, measured by `mpiscope-bench`'s SEND & RECV), every byte of it through the shaper;
//! the namespace and its record are gone after `down`, also when a check fails; and `down`
//! refuses a namespace netlab.sh did not create, or one that replaced its own.
//!
//! A machine that cannot make namespaces or has no tbf (not root, no iproute2) makes
//! `netlab.sh up` exit 3 with the reason: the tests then pass only after writing it to
//! `target/netlab-unavailable.txt`. Any other failure fails them.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::mpi_lock;

/// The rate the test shapes to, in bits per second (`--rate 1gbit`).
const RATE: f64 = 1e9;

/// Bytes of the message whose round trips measure the bandwidth.
const MESSAGE: u64 = 2 * 1024 * 1024;

/// Round trips timed (each about 34 ms at 1 Gbit/s).
const ITERATIONS: u64 = 10;

fn script() -> PathBuf {
    common::root().join("scripts/netlab.sh")
}

fn netlab(args: &[&str]) -> Output {
    Command::new(script())
        .args(args)
        .output()
        .expect("run scripts/netlab.sh")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The namespaces `ip netns list` shows.
fn namespaces() -> Vec<String> {
    let o = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("run ip netns list");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// A namespace brought up by `netlab.sh up`, taken down (with `--kill`) when dropped, so a
/// failed check leaves nothing behind.
struct Lab {
    name: String,
}

impl Lab {
    /// `netlab.sh up NAME ARGS`, or the reason this machine cannot (exit 3).
    fn up(name: &str, args: &[&str]) -> Result<Lab, String> {
        let mut all = vec!["up", name];
        all.extend_from_slice(args);
        let o = netlab(&all);
        match o.status.code() {
            Some(0) => Ok(Lab { name: name.into() }),
            Some(3) => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
            _ => panic!("netlab.sh up {name} failed:\n{}", text(&o)),
        }
    }

    /// Takes the namespace down, checking that `down` succeeded and left nothing.
    fn down(mut self) {
        let name = std::mem::take(&mut self.name);
        let o = netlab(&["down", &name]);
        assert!(o.status.success(), "netlab.sh down {name}:\n{}", text(&o));
        let ns = format!("mpiscope-{name}");
        assert!(
            !namespaces().contains(&ns),
            "{ns} is still listed after down"
        );
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            let _ = netlab(&["down", &self.name, "--kill"]);
        }
    }
}

/// Runs a check that needs namespaces; `None` (after writing the reason) when this machine
/// cannot make them.
fn available<T>(r: Result<T, String>) -> Option<T> {
    let unavailable = common::profile_dir().join("../netlab-unavailable.txt");
    match r {
        Ok(v) => {
            let _ = std::fs::remove_file(&unavailable);
            Some(v)
        }
        Err(why) => {
            std::fs::write(&unavailable, &why).unwrap_or_else(|e| {
                panic!(
                    "netlab is unavailable here and {} cannot be written ({e}): {why}",
                    unavailable.display()
                )
            });
            eprintln!(
                "netlab cannot run on this machine; its tests did not run (reason in {}):\n{why}",
                unavailable.display()
            );
            None
        }
    }
}

/// Bytes the tbf qdisc of the namespace has sent (`tc -s qdisc show dev lo`).
fn shaped_bytes(name: &str) -> u64 {
    let o = netlab(&["run", name, "--", "tc", "-s", "qdisc", "show", "dev", "lo"]);
    assert!(o.status.success(), "tc in {name}:\n{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("qdisc tbf"),
        "no tbf qdisc on lo in {name}: {out}"
    );
    out.split_whitespace()
        .skip_while(|w| *w != "Sent")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in: {out}"))
}

#[test]
fn mpi_over_a_shaped_namespace_runs_at_the_rate() {
    let _g = mpi_lock();
    let bench = common::profile_dir().join("mpiscope-bench");
    assert!(
        bench.is_file(),
        "{} is missing: cargo build -p mpiscope-bench (same profile)",
        bench.display()
    );
    let name = format!("test{}", std::process::id());
    let Some(lab) = available(Lab::up(&name, &["--rate", "1gbit"])) else {
        return;
    };
    let before = shaped_bytes(&name);
    let size = MESSAGE.to_string();
    let iters = ITERATIONS.to_string();
    let bench = bench.to_string_lossy().into_owned();
    let o = netlab(&[
        "mpirun",
        &name,
        "--np",
        "2",
        "--progress-thread",
        "--",
        &bench,
        "--bytes",
        "--min",
        &size,
        "--max",
        &size,
        "--only",
        "send_recv",
        "--long-iters",
        &iters,
        "--warmup",
        "1",
        "--csv",
    ]);
    assert!(
        o.status.success(),
        "mpiscope-bench in {name}:\n{}",
        text(&o)
    );
    let csv = String::from_utf8_lossy(&o.stdout);
    let row: Vec<&str> = csv
        .lines()
        .find(|l| l.contains("\"SEND & RECV\""))
        .unwrap_or_else(|| panic!("no SEND & RECV row:\n{csv}"))
        .split(',')
        .collect();
    let median: f64 = row[6].parse().expect("median_s");
    let bits = (2 * MESSAGE * 8) as f64 / median;
    assert!(
        (0.5 * RATE..=1.2 * RATE).contains(&bits),
        "measured {:.3} Gbit/s over a 1 Gbit/s shaper (round trip {median} s):\n{csv}",
        bits / 1e9
    );
    // Every round trip, warm-ups included, went through the shaper: TCP, not shared memory.
    let through = shaped_bytes(&name) - before;
    let moved = 2 * MESSAGE * (ITERATIONS + 1);
    assert!(
        through >= moved,
        "the tbf qdisc sent {through} bytes, fewer than the {moved} the benchmark moved"
    );
    lab.down();
    let record = std::env::var_os("MPISCOPE_NETLAB_DIR")
        .map_or_else(|| PathBuf::from("/run/mpiscope-netlab"), PathBuf::from)
        .join(&name);
    assert!(!record.exists(), "{} left after down", record.display());
}

#[test]
fn down_refuses_what_netlab_did_not_create() {
    let _g = mpi_lock();
    let pid = std::process::id();
    // A namespace of another tool under a name netlab.sh would use.
    let foreign = format!("foreign{pid}");
    let ns = format!("mpiscope-{foreign}");
    let Some(mut lab) = available(Lab::up(&format!("own{pid}"), &["--rate", "unshaped"])) else {
        return;
    };
    let add = Command::new("ip").args(["netns", "add", &ns]).status();
    assert!(add.is_ok_and(|s| s.success()), "ip netns add {ns}");
    struct Foreign(String);
    impl Drop for Foreign {
        fn drop(&mut self) {
            let _ = Command::new("ip")
                .args(["netns", "delete", &self.0])
                .output();
        }
    }
    let _foreign = Foreign(ns.clone());
    let o = netlab(&["down", &foreign]);
    assert_eq!(o.status.code(), Some(2), "down {foreign}:\n{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("was not created by netlab.sh"),
        "down {foreign} said:\n{err}"
    );
    assert!(namespaces().contains(&ns), "down removed {ns}");
    let o = netlab(&["up", &foreign, "--rate", "1gbit"]);
    assert_eq!(o.status.code(), Some(2), "up over {ns}:\n{}", text(&o));
    // Its own namespace, deleted and made again by someone else under the same name: the
    // record's token is not on that namespace's loopback, so it is refused too.
    let own = format!("mpiscope-{}", lab.name);
    let _replaced = Foreign(own.clone());
    for args in [["netns", "delete", &own], ["netns", "add", &own]] {
        let s = Command::new("ip").args(args).status();
        assert!(s.is_ok_and(|s| s.success()), "ip {args:?}");
    }
    let o = netlab(&["down", &lab.name]);
    assert_eq!(o.status.code(), Some(2), "down {}:\n{}", lab.name, text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is not the one netlab.sh created"),
        "{}",
        text(&o)
    );
    assert!(
        namespaces().contains(&own),
        "down removed the replaced {own}"
    );
    // Clean up what this test made by hand; the record is then stale, and down removes it.
    let s = Command::new("ip").args(["netns", "delete", &own]).status();
    assert!(s.is_ok_and(|s| s.success()), "ip netns delete {own}");
    let o = netlab(&["down", &lab.name]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stale record"),
        "{}",
        text(&o)
    );
    lab.name.clear();
}

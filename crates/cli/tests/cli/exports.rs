//! `mpiscope export --format chrome|paraver` on traces of real runs: the files parse, every
//! message end is paired with its start, Paraver's records are sorted and complete; and
//! `--format simgrid-ti` of a run with zero-count collectives, replayed by SimGrid's
//! `smpirun -replay` and by `mpiscope replay` to the same time.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{mpi_lock, mpiscope, tempdir, Mpi};
use serde_json::Value;

fn traced(program: &str, args: &[&str], dir: &Path) -> PathBuf {
    let exe = common::build(Mpi::OpenMpi, program, &[]);
    let _g = mpi_lock();
    let (run, trace) = common::run_traced(Mpi::OpenMpi, 4, &exe, args, &[], dir);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    trace
}

fn export(trace: &Path, format: &str, out: &Path) {
    let o = Command::new(mpiscope())
        .arg("export")
        .arg(trace)
        .args(["--format", format, "-o"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The labels of the values of the `.pcf`'s event types: (type, value) -> label.
fn pcf_values(pcf: &str) -> HashMap<(u64, u64), String> {
    let mut labels = HashMap::new();
    for block in pcf.split("EVENT_TYPE\n").skip(1) {
        let mut lines = block.lines();
        let ty: u64 = lines
            .next()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(lines.next(), Some("VALUES"), "{block}");
        for l in lines.take_while(|l| !l.trim().is_empty()) {
            let (v, label) = l.split_once(' ').unwrap();
            labels.insert((ty, v.parse().unwrap()), label.trim().to_string());
        }
    }
    labels
}

/// (slices, message start ids, message end ids).
fn chrome(path: &Path) -> (usize, HashSet<u64>, Vec<u64>) {
    let j: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let ev = j["traceEvents"].as_array().unwrap();
    let ids = |ph: &str| -> Vec<u64> {
        ev.iter()
            .filter(|e| e["ph"] == ph)
            .map(|e| e["id"].as_u64().unwrap())
            .collect()
    };
    let starts: HashSet<u64> = ids("s").into_iter().collect();
    let ends: Vec<u64> = ids("f");
    (ev.iter().filter(|e| e["ph"] == "X").count(), starts, ends)
}

#[test]
fn chrome_and_paraver_of_lu() {
    let tmp = tempdir();
    // 12 iterations, 5 planes: 6 neighbour pairs x 12 x (5 + 1) messages.
    let trace = traced("npb/lu.c", &["12", "5", "4"], tmp.path());
    let json = tmp.path().join("lu.json");
    export(&trace, "chrome", &json);
    let (slices, starts, ends) = chrome(&json);
    assert_eq!((starts.len(), ends.len()), (432, 432));
    assert!(
        ends.iter().all(|e| starts.contains(e)),
        "an arrow ends where none starts"
    );
    let report = common::report_json(&trace);
    assert_eq!(slices as u64, report["events"].as_u64().unwrap());

    let base = tmp.path().join("lu");
    export(&trace, "paraver", &base);
    let prv = std::fs::read_to_string(base.with_extension("prv")).unwrap();
    let mut lines = prv.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("#Paraver (") && header.ends_with(":1(4):1:4(1:1,1:1,1:1,1:1)"),
        "{header}"
    );
    let pcf = std::fs::read_to_string(base.with_extension("pcf")).unwrap();
    let labels = pcf_values(&pcf);
    // Per task, the event type of the call under way; calls begun, by label.
    let mut open: HashMap<&str, u64> = HashMap::new();
    let mut begun: HashMap<String, u64> = HashMap::new();
    let (mut last, mut comms, mut events) = (0u64, 0, 0);
    for l in lines {
        let f: Vec<&str> = l.split(':').collect();
        let t: u64 = f[5].parse().unwrap();
        assert!(t >= last, "records out of order at {l}");
        last = t;
        match f[0] {
            "1" => assert_eq!(f.len(), 8, "{l}"),
            "2" => {
                assert_eq!(f.len(), 8, "{l}");
                let (ty, value): (u64, u64) = (f[6].parse().unwrap(), f[7].parse().unwrap());
                // Extrae's MPI types (or mpiscope's for the calls Extrae does not number).
                assert!(
                    (50_000_001..=50_000_005).contains(&ty) || ty == 50_000_099,
                    "{l}"
                );
                if value == 0 {
                    assert_eq!(open.remove(f[3]), Some(ty), "an end without its begin: {l}");
                } else {
                    let label = labels.get(&(ty, value));
                    let label = label.unwrap_or_else(|| panic!("{l}: value not in the .pcf"));
                    assert_eq!(open.insert(f[3], ty), None, "a call inside a call: {l}");
                    *begun.entry(label.clone()).or_default() += 1;
                }
                events += 1;
            }
            "3" => {
                assert_eq!(f.len(), 15, "{l}");
                assert_eq!(f[13], "2048", "{l}");
                let (from, to): (i64, i64) = (f[3].parse().unwrap(), f[9].parse().unwrap());
                assert_eq!((from - to).abs(), 1, "{l}");
                comms += 1;
            }
            other => panic!("record type {other}: {l}"),
        }
    }
    assert_eq!(comms, 432);
    // An entry and an exit event per call of the main threads, every call closed.
    assert_eq!(events, 2 * report["events"].as_u64().unwrap());
    assert!(open.is_empty(), "calls left open: {open:?}");
    // Each function of the report begins as many times as it was recorded, under its name.
    let calls = report["calls"].as_object().unwrap();
    for (name, stats) in calls {
        let recorded = stats["recorded"].as_u64().unwrap();
        assert_eq!(begun.get(name).copied().unwrap_or(0), recorded, "{name}");
    }
    assert_eq!(begun.len(), calls.len(), "{begun:?}");
    // Extrae's numbers of the calls LU makes (Extrae's MPI_EventEncoding.h).
    for (ty, value, name) in [
        (50_000_001, 1, "MPI_Send"),
        (50_000_001, 2, "MPI_Recv"),
        (50_000_002, 10, "MPI_Allreduce"),
        (50_000_003, 31, "MPI_Init"),
    ] {
        assert_eq!(labels.get(&(ty, value)).map(String::as_str), Some(name));
    }
    assert!(begun.contains_key("MPI_Send") && begun.contains_key("MPI_Recv"));
    let row = std::fs::read_to_string(base.with_extension("row")).unwrap();
    assert!(
        row.contains("LEVEL THREAD SIZE 4") && row.contains("THREAD 1.4.1"),
        "{row}"
    );
}

/// The OTF2 archive of the same kind of run reads back with `otf2-print` (Debian's
/// otf2-tools), without a warning, with every call and message, and each collective between
/// a begin and an end.
#[test]
fn otf2_reads_back_with_otf2_print() {
    let tmp = tempdir();
    let trace = traced("npb/lu.c", &["12", "5", "4"], tmp.path());
    let out = tmp.path().join("otf2");
    export(&trace, "otf2", &out);
    let o = Command::new("otf2-print")
        .arg(out.join("traces.otf2"))
        .output()
        .expect("otf2-print (apt-get install otf2-tools, or scripts/deps.sh)");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && stderr.trim().is_empty(), "{stderr}");
    let text = String::from_utf8_lossy(&o.stdout);
    let count = |what: &str| text.lines().filter(|l| l.starts_with(what)).count();
    // LU's receives are blocking or `Irecv` completed by `Wait`.
    let receives = count("MPI_RECV ") + count("MPI_IRECV ");
    assert_eq!((count("MPI_SEND "), receives), (432, 432));
    assert_eq!(count("MPI_IRECV_REQUEST "), count("MPI_IRECV "));
    let report = common::report_json(&trace);
    let events = report["events"].as_u64().unwrap() as usize;
    assert_eq!((count("ENTER "), count("LEAVE ")), (events, events));
    // Sends go to the neighbours, on MPI_COMM_WORLD.
    let send = text.lines().find(|l| l.starts_with("MPI_SEND ")).unwrap();
    assert!(send.contains("Communicator: \"MPI_COMM_WORLD\""), "{send}");
    let collectives = report["calls"]["MPI_Allreduce"]["recorded"]
        .as_u64()
        .unwrap() as usize
        + report["calls"]["MPI_Barrier"]["recorded"]
            .as_u64()
            .unwrap_or(0) as usize
        + report["calls"]["MPI_Bcast"]["recorded"]
            .as_u64()
            .unwrap_or(0) as usize;
    assert_eq!(count("MPI_COLLECTIVE_BEGIN "), collectives);
    assert_eq!(count("MPI_COLLECTIVE_END "), collectives);
    let defs = Command::new("otf2-print")
        .arg("-G")
        .arg(out.join("traces.otf2"))
        .output()
        .unwrap();
    let defs = String::from_utf8_lossy(&defs.stdout);
    assert_eq!(
        defs.lines()
            .filter(|l| l.starts_with("LOCATION_GROUP "))
            .count(),
        4,
        "{defs}"
    );
}

/// Every completion function, wildcards, probes and persistent requests: no arrow may end
/// where none started, and the messages with a known source and tag are all drawn.
#[test]
fn chrome_pairs_nonblocking_messages() {
    let tmp = tempdir();
    let trace = traced("c/p2p_nonblocking.c", &[], tmp.path());
    let json = tmp.path().join("nb.json");
    export(&trace, "chrome", &json);
    let (_, starts, ends) = chrome(&json);
    let unique: HashSet<u64> = ends.iter().copied().collect();
    assert_eq!(unique.len(), ends.len(), "a message received twice");
    assert!(
        ends.iter().all(|e| starts.contains(e)),
        "an arrow ends where none starts"
    );
    // Phases A-H, K, L, M: 1+4+3+2+1+1+2+2+1+1+1 = 19 messages per rank at least.
    assert!(
        ends.len() >= 4 * 19,
        "{} of {} messages drawn",
        ends.len(),
        starts.len()
    );

    // Bad format is named.
    let o = Command::new(mpiscope())
        .arg("export")
        .arg(&trace)
        .args(["--format", "vampir", "-o"])
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("'vampir'") && err.contains("--format"),
        "{err}"
    );
    // Every format is offered, from the one registry.
    assert!(err.contains("simgrid-ti, chrome, paraver, otf2"), "{err}");
}

/// Reads an OTF2 archive with OTF2's own reader (`python3-otf2`, through
/// `otf2_read.py`): entries per region, roles, collective pairs, communicators, events.
fn otf2_read(archive: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/otf2_read.py");
    // Debian's module is for Debian's interpreter, whatever python3 comes first on PATH.
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| !p.starts_with('/') || Path::new(p).exists())
        .unwrap();
    let o = Command::new(python)
        .arg(script)
        .arg(archive)
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "otf2_read.py (apt-get install python3-otf2, or scripts/deps.sh): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The OTF2 archive's regions are entered exactly as often as the report counts the calls,
/// and every region is left.
fn assert_enters_match_report(read: &Value, trace: &Path) {
    let report = common::report_json(trace);
    let calls = report["calls"].as_object().unwrap();
    let enters = read["enters"].as_object().unwrap();
    for (name, stats) in calls {
        assert_eq!(enters.get(name), Some(&stats["recorded"]), "{name}");
    }
    assert_eq!(enters.len(), calls.len(), "{enters:?}");
    let total: u64 = enters.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(read["leaves"].as_u64(), Some(total));
}

/// The bytes of the archive's send events (by the region that sent them) and of its
/// collectives, blocking or not (by the region that began them), are the report's bytes
/// sent and received per function.
fn assert_bytes_match_report(read: &Value, trace: &Path) {
    let report = common::report_json(trace);
    let calls = report["calls"].as_object().unwrap();
    let (p2p, colls) = (&read["sent_bytes"], &read["collective_bytes"]);
    for (name, stats) in calls {
        let (sent, received) = (&stats["bytes_sent"], &stats["bytes_received"]);
        if let Some(c) = colls.get(name) {
            assert_eq!((&c[0], &c[1]), (sent, received), "{name}");
        } else if sent.as_u64() != Some(0) {
            assert_eq!(&p2p[name], sent, "{name}");
        }
    }
    for (name, _) in colls.as_object().unwrap() {
        assert!(calls.contains_key(name), "{name}");
    }
}

/// OTF2's own reader takes the archive of a program that splits, duplicates and creates
/// communicators: every blocking collective is a begin/end pair naming its operation, its
/// communicator (as many as the program made, with their sizes) and its root in it; the
/// regions' roles are Score-P's.
#[test]
fn otf2_collectives_and_communicators_read_back_with_otf2s_reader() {
    let tmp = tempdir();
    let trace = traced("c/comms.c", &[], tmp.path());
    let out = tmp.path().join("otf2");
    export(&trace, "otf2", &out);
    let read = otf2_read(&out.join("traces.otf2"));
    assert_enters_match_report(&read, &trace);
    assert_bytes_match_report(&read, &trace);
    // otf2-print checks the definitions (groups, communicators) and the event references;
    // the anchor names the creator and its version, the clock is in nanoseconds.
    let o = Command::new("otf2-print")
        .arg("-A")
        .arg(out.join("traces.otf2"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && stderr.trim().is_empty(), "{stderr}");
    let all = String::from_utf8_lossy(&o.stdout);
    let creator = format!("mpiscope {}", env!("CARGO_PKG_VERSION"));
    assert!(all.contains(&creator), "{creator} not in the anchor");
    assert!(
        all.lines()
            .any(|l| l.starts_with("CLOCK_PROPERTIES") && l.contains("1000000000")),
        "no clock of 1 ns"
    );
    let ends = read["collective_ends"].as_array().unwrap();
    let collectives = ["MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather"];
    let enters = &read["enters"];
    let expected: u64 = collectives
        .iter()
        .map(|c| enters[c].as_u64().unwrap())
        .sum();
    assert_eq!(read["collective_begins"].as_u64(), Some(expected));
    assert_eq!(ends.len() as u64, expected);
    assert_eq!(read["unpaired_ends"], 0);
    for e in ends {
        let region = e["region"].as_str().unwrap();
        assert_eq!(
            e["op"].as_str(),
            Some(&region[4..].to_uppercase()[..]),
            "{e}"
        );
    }
    let has = |region: &str, size: u64, root: u64, sent: u64, received: u64| {
        ends.iter().any(|e| {
            e["region"] == region
                && e["comm_size"] == size
                && e["root"] == root
                && e["sent"] == sent
                && e["received"] == received
        })
    };
    let none = u64::from(u32::MAX);
    // Halves: Bcast 4 ints from half rank 1 (received by rank 0 of the half), Reduce to
    // half rank 0; rev (3 ranks): Gather 1 int to rank 2; the end: 2 longs on the world.
    assert!(has("MPI_Bcast", 2, 1, 0, 16), "{ends:?}");
    assert!(has("MPI_Bcast", 2, 1, 16, 0), "{ends:?}");
    assert!(has("MPI_Reduce", 2, 0, 4, 4), "{ends:?}");
    assert!(has("MPI_Gather", 3, 2, 4, 12), "{ends:?}");
    assert!(has("MPI_Allreduce", 4, none, 16, 16), "{ends:?}");
    assert!(has("MPI_Allreduce", 2, none, 4, 4), "{ends:?}");
    let comms = read["comms"].as_array().unwrap();
    let sizes: Vec<u64> = comms.iter().map(|c| c["size"].as_u64().unwrap()).collect();
    assert_eq!(comms[0]["name"], "MPI_COMM_WORLD");
    assert_eq!(sizes[0], 4);
    // Two halves, dup, rev, the merged and the cart communicators at least.
    for size in [2, 3] {
        assert!(sizes.contains(&size), "{comms:?}");
    }
    assert!(comms.len() >= 6, "{comms:?}");
    // The intercommunicator between the halves is one `InterComm` of both groups; its
    // messages name ranks of the remote group (world rank r talks to remote rank r / 2);
    // its broadcast's root is `MPI_ROOT` on world rank 0, `MPI_PROC_NULL` on rank 2 (which
    // moves nothing), rank 0 of the remote group on the odd ranks.
    let inter: Vec<&Value> = comms.iter().filter(|c| c["inter"] == true).collect();
    assert_eq!(inter.len(), 1, "{comms:?}");
    let loc = |r: u32| format!("rank {r} thread 0");
    assert_eq!(
        inter[0]["groups"],
        serde_json::json!([[loc(0), loc(2)], [loc(1), loc(3)]])
    );
    let inter_p2p = read["inter_p2p"].as_array().unwrap();
    assert_eq!(inter_p2p.len(), 8, "{inter_p2p:?}");
    for e in inter_p2p {
        let world: u64 = e["location"].as_str().unwrap()[5..6].parse().unwrap();
        assert_eq!(e["peer"], world / 2, "{e}");
        assert!(e["tag"] == 9 || e["tag"] == 10, "{e}");
    }
    let inter_name = inter[0]["name"].as_str().unwrap();
    let bcast = |r: u32| {
        ends.iter()
            .find(|e| e["comm"] == inter_name && e["location"] == loc(r).as_str())
            .map(|e| {
                (
                    e["root"].as_u64().unwrap(),
                    e["sent"].clone(),
                    e["received"].clone(),
                )
            })
    };
    assert_eq!(bcast(0), Some((none - 1, 12.into(), 0.into())));
    assert_eq!(bcast(2), Some((none - 2, 0.into(), 0.into())));
    assert_eq!(bcast(1), Some((0, 0.into(), 12.into())));
    assert_eq!(bcast(3), Some((0, 0.into(), 12.into())));
    // Each call site is a region of its own with the program's file and line (the test
    // programs are built with debug information): the Bcast on the halves is line 80.
    let sites = read["sites"].as_array().unwrap();
    assert!(
        sites.iter().any(|s| s["region"] == "MPI_Bcast"
            && s["file"].as_str().is_some_and(|f| f.ends_with("comms.c"))
            && s["line"] == 80),
        "{sites:?}"
    );
    let roles = &read["roles"];
    for (region, role) in [
        ("MPI_Bcast", "COLL_ONE2ALL"),
        ("MPI_Reduce", "COLL_ALL2ONE"),
        ("MPI_Gather", "COLL_ALL2ONE"),
        ("MPI_Allreduce", "COLL_ALL2ALL"),
        ("MPI_Send", "POINT2POINT"),
        ("MPI_Comm_split", "FUNCTION"),
    ] {
        assert_eq!(roles[region], role, "{region}");
    }
}

/// OTF2's own reader takes the archive of non-blocking messages: each `MPI_Isend` is an
/// `MpiIsend` completed by an `MpiIsendComplete`, each `MPI_Irecv` an `MpiIrecvRequest`,
/// completed by an `MpiIrecv` when its status says whence the message came.
#[test]
fn otf2_requests_read_back_with_otf2s_reader() {
    let tmp = tempdir();
    let trace = traced("c/p2p_nonblocking.c", &[], tmp.path());
    let out = tmp.path().join("otf2");
    export(&trace, "otf2", &out);
    let read = otf2_read(&out.join("traces.otf2"));
    assert_enters_match_report(&read, &trace);
    assert_bytes_match_report(&read, &trace);
    let (p2p, enters) = (&read["p2p"], &read["enters"]);
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    // The program's persistent pair: each rank starts its send once per `MPI_Start` pair
    // and once per `MPI_Startall` (of the receive and the send).
    let persistent_sends = n(&enters["MPI_Start"]) / 2 + n(&enters["MPI_Startall"]);
    assert!(persistent_sends > 0, "{enters}");
    assert_eq!(
        n(&p2p["MpiIsend"]),
        n(&enters["MPI_Isend"]) + persistent_sends,
        "{p2p}"
    );
    assert_eq!(n(&p2p["MpiIsendComplete"]), n(&p2p["MpiIsend"]), "{p2p}");
    assert_eq!(
        n(&p2p["MpiIrecvRequest"]),
        n(&enters["MPI_Irecv"]) + n(&enters["MPI_Imrecv"]) + persistent_sends,
        "{p2p}"
    );
    // Every request is completed (a `Test` that finds it unfinished does not complete it),
    // and every message is received once: by a blocking receive or a completed request.
    assert_eq!(n(&p2p["MpiIrecv"]), n(&p2p["MpiIrecvRequest"]), "{p2p}");
    assert_eq!(
        n(&p2p["MpiIrecv"]) + n(&p2p["MpiRecv"]),
        n(&p2p["MpiIsend"]) + n(&p2p["MpiSend"]),
        "{p2p}"
    );
    assert_eq!(read["unpaired_ends"], 0);
}

/// OTF2's own reader takes the archive of non-blocking collectives: each is a
/// `NonBlockingCollectiveRequest` in the call that starts it and a
/// `NonBlockingCollectiveComplete` in the `Wait` or `Test` that completes it, with its
/// operation, communicator, root and bytes (the report's, per function, as for the
/// blocking collectives of the same program).
#[test]
fn otf2_nonblocking_collectives_read_back_with_otf2s_reader() {
    let tmp = tempdir();
    let trace = traced("c/collectives.c", &[], tmp.path());
    let out = tmp.path().join("otf2");
    export(&trace, "otf2", &out);
    let read = otf2_read(&out.join("traces.otf2"));
    assert_enters_match_report(&read, &trace);
    assert_bytes_match_report(&read, &trace);
    let enters = read["enters"].as_object().unwrap();
    let started: u64 = enters
        .iter()
        .filter(|(name, _)| {
            [
                "MPI_Ibarrier",
                "MPI_Ibcast",
                "MPI_Iallreduce",
                "MPI_Ialltoall",
                "MPI_Igatherv",
            ]
            .contains(&name.as_str())
        })
        .map(|(_, v)| v.as_u64().unwrap())
        .sum();
    let nbc = read["nbc"].as_array().unwrap();
    assert!(started >= 20, "{enters:?}");
    assert_eq!(nbc.len() as u64, started, "{nbc:?}");
    assert_eq!(read["unmatched_nbc"], 0);
    for e in nbc {
        let region = e["region"].as_str().unwrap();
        assert_eq!(
            e["op"].as_str(),
            Some(&region[5..].to_uppercase()[..]),
            "{e}"
        );
        let done = e["completed_in"].as_str().unwrap();
        assert!(
            done.starts_with("MPI_Wait") || done.starts_with("MPI_Test"),
            "{e}"
        );
        assert_eq!(e["comm"], "MPI_COMM_WORLD", "{e}");
    }
    // The Igatherv to rank 0: its root is rank 0, which receives 1 + 2 + 3 + 4 ints.
    assert!(
        nbc.iter().any(|e| e["region"] == "MPI_Igatherv"
            && e["location"] == "rank 0 thread 0"
            && e["root"] == 0
            && e["received"] == 40),
        "{nbc:?}"
    );
    // Blocking collectives are still begin/end pairs, and only they.
    assert_eq!(read["unpaired_ends"], 0);
    let ends = read["collective_ends"].as_array().unwrap();
    assert!(ends
        .iter()
        .all(|e| !e["region"].as_str().unwrap().starts_with("MPI_I")));
}

/// A real viewer opens the archive: ViTE (Debian's `vite`) on a virtual screen (Xvfb)
/// reads it and exports its view as SVG, with a row per rank and an arrow per message (the
/// program's messages are all on `MPI_COMM_WORLD`: ViTE does not read communicator
/// groups). `export --json` counts what the archive holds.
#[test]
fn otf2_opens_in_vite() {
    let tmp = tempdir();
    let trace = traced("c/p2p_nonblocking.c", &[], tmp.path());
    let out = tmp.path().join("otf2");
    let o = Command::new(mpiscope())
        .arg("export")
        .arg(&trace)
        .args(["--format", "otf2", "--json", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let counts = &summary["counts"];
    assert_eq!(counts["ranks"], 4, "{summary}");
    let sends = counts["sends"].as_u64().unwrap();
    assert!(
        sends > 0 && counts["events"].as_u64().unwrap() > sends,
        "{summary}"
    );
    let read = otf2_read(&out.join("traces.otf2"));
    let p2p = &read["p2p"];
    let n = |k: &str| p2p[k].as_u64().unwrap_or(0);
    assert_eq!(sends, n("MpiSend") + n("MpiIsend"), "{summary} {p2p}");
    assert_eq!(
        counts["receives"].as_u64(),
        Some(n("MpiRecv") + n("MpiIrecv"))
    );
    let svg = tmp.path().join("vite.svg");
    let o = Command::new("xvfb-run")
        .args(["-a", "timeout", "120", "vite", "-f"])
        .arg(out.join("traces.otf2"))
        .arg("-e")
        .arg(&svg)
        .output()
        .expect("xvfb-run and vite (apt-get install xvfb xauth vite, or scripts/deps.sh)");
    let log = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    assert!(
        log.contains("0 errors and 0 warnings were found during parsing"),
        "{log}"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(svg.matches("<line").count() as u64, sends, "{log}");
    for r in 0..4 {
        assert!(svg.contains(&format!("rank {r} thread 0")), "rank {r}");
    }
}

/// GROMACS mdrun broadcasts zero elements, and SimGrid 3.32 dies of SIGFPE on `bcast 0 0 6`
/// at 2 ranks (and aborts or deadlocks on other zero-count collectives). The export leaves
/// the collectives that move nothing out, with a note; SimGrid then replays the export of
/// `tests/programs/c/zero_count.c` to the time `mpiscope replay` gives it.
#[test]
fn simgrid_replays_an_export_with_zero_count_collectives_as_mpiscope_does() {
    let exe = common::build(Mpi::OpenMpi, "c/zero_count.c", &[]);
    for np in [2u32, 4] {
        let tmp = tempdir();
        let trace = {
            let _g = mpi_lock();
            let (run, trace) = common::run_traced(Mpi::OpenMpi, np, &exe, &["4"], &[], tmp.path());
            assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
            trace
        };
        let ti = tmp.path().join("ti");
        let o = Command::new(mpiscope())
            .arg("export")
            .arg(&trace)
            .args(["--format", "simgrid-ti", "--json", "-o"])
            .arg(&ti)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
        let notes: Vec<&str> = summary["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        // Four rounds on every rank; the zero-count alltoallv and gatherv are kept.
        let calls = 4 * np;
        for f in [
            "MPI_Bcast",
            "MPI_Reduce",
            "MPI_Allreduce",
            "MPI_Alltoall",
            "MPI_Allgather",
            "MPI_Gather",
            "MPI_Scatter",
            "MPI_Allgatherv",
            "MPI_Reduce_scatter",
            "MPI_Scan",
            "MPI_Exscan",
        ] {
            let note = format!("{f}: {calls} calls: zero-count collective");
            assert!(
                notes.iter().any(|n| n.starts_with(&note)),
                "no {note:?} in {notes:#?}"
            );
        }
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("note: MPI_Bcast: "),
            "the notes are said on stderr"
        );
        for rank in 0..np {
            let text = std::fs::read_to_string(ti.join(format!("rank-{rank}.txt"))).unwrap();
            let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
            assert_eq!(count(&format!("{rank} bcast 256 0 0")), 4, "{text}");
            assert_eq!(count(&format!("{rank} bcast 0 ")), 0, "{text}");
            assert_eq!(count(&format!("{rank} allreduce 1 0 0")), 4, "{text}");
            assert_eq!(count(&format!("{rank} alltoallv 0 ")), 4, "{text}");
        }
        let (platform, hosts) = common::cluster(tmp.path(), np);
        let index = ti.join("index.txt");
        let simgrid = common::smpirun_replay(tmp.path(), &index, np, &platform, &hosts);
        let o = Command::new(mpiscope())
            .arg("replay")
            .arg(&index)
            .arg("--platform")
            .arg(&platform)
            .arg("--hostfile")
            .arg(&hosts)
            .args(["--json", "--quiet"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let ours = serde_json::from_slice::<Value>(&o.stdout).unwrap()["makespan_s"]
            .as_f64()
            .unwrap();
        eprintln!("zero_count.c at {np} ranks: SimGrid {simgrid:.9} s, mpiscope {ours:.9} s");
        // Four rounds of at least 2 ms of computation on rank 0.
        assert!(ours > 0.008, "{ours}");
        // SimGrid rounds dates to 1e-9 s at each event: a few of those on a short run.
        assert!(
            (ours - simgrid).abs() <= 1e-6 * simgrid || (ours - simgrid).abs() <= 1e-8,
            "SimGrid {simgrid} s, mpiscope {ours} s"
        );
    }
}

//! `mpiscope structure` on traces of our programs that mimic NPB EP, IS and LU
//! (`tests/programs/npb`), run with a real `mpirun` (Open MPI and MPICH): every loop of the
//! program comes back with its exact iteration count, nested as in the source, and ranks
//! fall into the classes their roles give them.

use crate::common;

use std::path::Path;
use std::process::Command;

use crate::common::{mpi_lock, mpiscope, tempdir, Mpi};
use serde_json::Value;

/// Traces `program args` on 4 ranks; returns `mpiscope structure --json` of the run.
fn structure_of(mpi: Mpi, program: &str, args: &[&str], extra: &[&str], dir: &Path) -> Value {
    let exe = common::build(mpi, &format!("npb/{program}.c"), &[]);
    let (run, trace) = {
        let _g = mpi_lock();
        common::run_traced(mpi, 4, &exe, args, &[], dir)
    };
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!("{program}:")),
        "{}",
        run.stdout
    );
    let o = Command::new(mpiscope())
        .arg("structure")
        .arg(&trace)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The functions of a node's direct items, `CPU` for bursts, `loop[n]` for loops.
fn items(s: &Value, node: &Value) -> Vec<String> {
    let body = node["body"]
        .as_array()
        .or(node["items"].as_array())
        .unwrap();
    body.iter()
        .map(|i| match i["kind"].as_str().unwrap() {
            "leaf" => {
                let sym = &s["symbols"][i["sym"].as_u64().unwrap() as usize];
                sym["function"].as_str().unwrap_or("CPU").to_string()
            }
            "loop" => format!("loop[{}]", i["count"]),
            other => other.to_string(),
        })
        .collect()
}

fn loops(nodes: &Value) -> Vec<&Value> {
    nodes
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "loop")
        .collect()
}

fn ranks(class: &Value) -> Vec<u64> {
    class["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect()
}

fn ep(mpi: Mpi) {
    let tmp = tempdir();
    let s = structure_of(mpi, "ep", &["7"], &[], tmp.path());
    // One SPMD class; Bcast and Barrier once, then (CPU + Allreduce)[7].
    assert_eq!(s["classes"].as_array().unwrap().len(), 1, "{s}");
    let c = &s["classes"][0];
    assert_eq!(ranks(c), [0, 1, 2, 3]);
    let l = loops(&c["nodes"]);
    assert_eq!(l.len(), 1, "{s}");
    assert_eq!(l[0]["count"], 7);
    assert_eq!(items(&s, l[0]), ["CPU", "MPI_Allreduce"]);
    let leaves: Vec<String> = items(&s, &serde_json::json!({"body": c["nodes"]}));
    assert_eq!(
        leaves,
        ["CPU", "MPI_Bcast", "CPU", "MPI_Barrier", "loop[7]"],
        "{s}"
    );
    // [Grosclaude 2012]'s algorithm finds the same loop.
    let tmp = tempdir();
    let s = structure_of(mpi, "ep", &["5"], &["--algorithm", "seed"], tmp.path());
    let l = loops(&s["classes"][0]["nodes"]);
    assert_eq!(l.len(), 1, "{s}");
    assert_eq!(l[0]["count"], 5);
}

fn is(mpi: Mpi) {
    let tmp = tempdir();
    let s = structure_of(mpi, "is", &["9"], &[], tmp.path());
    // Rank 0 only sends the boundary key, the last rank only receives it: three classes.
    let classes = s["classes"].as_array().unwrap();
    let r: Vec<Vec<u64>> = classes.iter().map(ranks).collect();
    assert_eq!(r, [vec![0], vec![1, 2], vec![3]], "{s}");
    for c in classes {
        let l = loops(&c["nodes"]);
        assert_eq!(l.len(), 1, "{s}");
        assert_eq!(l[0]["count"], 9);
        assert_eq!(
            items(&s, l[0]),
            [
                "CPU",
                "MPI_Allreduce",
                "CPU",
                "MPI_Alltoall",
                "CPU",
                "MPI_Alltoallv"
            ]
        );
    }
    let middle = items(&s, &serde_json::json!({"body": classes[1]["nodes"]}));
    assert_eq!(
        middle,
        [
            "CPU",
            "MPI_Bcast",
            "loop[9]",
            "CPU",
            "MPI_Reduce",
            "CPU",
            "MPI_Send",
            "CPU",
            "MPI_Recv",
            "CPU",
            "MPI_Reduce"
        ]
    );
}

fn lu(mpi: Mpi) {
    let tmp = tempdir();
    // 12 SSOR iterations, 5 planes per sweep, a norm every 4 iterations.
    let s = structure_of(mpi, "lu", &["12", "5", "4"], &[], tmp.path());
    let classes = s["classes"].as_array().unwrap();
    let r: Vec<Vec<u64>> = classes.iter().map(ranks).collect();
    assert_eq!(r, [vec![0], vec![1, 2], vec![3]], "{s}");
    let middle = &classes[1]["nodes"];
    let top = loops(middle);
    // (CPU + Bcast)[10], then ((sweeps and halo)[4] + CPU + Allreduce)[3].
    assert_eq!(top.len(), 2, "{s}");
    assert_eq!(top[0]["count"], 10);
    assert_eq!(items(&s, top[0]), ["CPU", "MPI_Bcast"]);
    assert_eq!(top[1]["count"], 3);
    assert_eq!(items(&s, top[1]), ["loop[4]", "CPU", "MPI_Allreduce"]);
    let iteration = &top[1]["body"][0];
    let inner = items(&s, iteration);
    assert_eq!(&inner[..2], ["loop[5]", "loop[5]"], "{inner:?}");
    assert_eq!(inner.last().unwrap(), "MPI_Waitall");
    // Lower sweep: receive from the previous rank, send to the next.
    assert_eq!(
        items(&s, &iteration["body"][0]),
        ["CPU", "MPI_Recv", "CPU", "MPI_Send"]
    );
    // Rank 0 has nobody before it: its lower sweep only sends.
    let first = loops(&classes[0]["nodes"]);
    let it0 = &first[1]["body"][0];
    assert_eq!(items(&s, &it0["body"][0]), ["CPU", "MPI_Send"]);

    // The statistics of the same run, exact where the program fixes them.
    let o = Command::new(mpiscope())
        .arg("report")
        .arg(tmp.path().join("trace"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    // Neighbours exchange 5 planes per sweep and one halo per iteration: 12 x 6 messages of
    // 256 doubles each way; nobody else talks.
    let pairs = r["p2p"].as_array().unwrap();
    assert_eq!(pairs.len(), 6, "{r}");
    for t in pairs {
        let (from, to) = (t["from"].as_i64().unwrap(), t["to"].as_i64().unwrap());
        assert_eq!((from - to).abs(), 1, "{t}");
        assert_eq!(t["messages"], 72, "{t}");
        assert_eq!(t["bytes"], 72 * 2048, "{t}");
    }
    // One burst between consecutive calls of each rank.
    let events = r["events"].as_u64().unwrap();
    assert_eq!(r["bursts"]["count"].as_u64().unwrap(), events - 4);
    let hm = r["bursts"]["harmonic_mean_s"].as_f64().unwrap();
    let mean = r["bursts"]["mean_s"].as_f64().unwrap();
    assert!(hm > 0.0 && hm <= mean, "{}", r["bursts"]);
    // The lower sweep's send (lu.c:34) on the 3 ranks that have a next one, 60 times each.
    let site = r["callsites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["location"]
                .as_str()
                .is_some_and(|l| l.ends_with("lu.c:34"))
        })
        .unwrap_or_else(|| panic!("{}", r["callsites"]));
    assert_eq!(
        (
            site["function"].as_str(),
            site["ranks"].as_u64(),
            site["count"].as_u64()
        ),
        (Some("MPI_Send"), Some(3), Some(180))
    );
    // Sizes: every send is of 2 KiB; percentiles are ordered.
    let send = &r["calls"]["MPI_Send"];
    assert_eq!(send["sizes"]["2KiB"], 6 * 72, "{send}");
    let (m, p99) = (
        send["median_s"].as_f64().unwrap(),
        send["p99_s"].as_f64().unwrap(),
    );
    assert!(m > 0.0 && m <= p99, "{send}");
}

#[test]
fn npb_patterns_open_mpi() {
    ep(Mpi::OpenMpi);
    is(Mpi::OpenMpi);
    lu(Mpi::OpenMpi);
}

#[test]
fn npb_patterns_mpich() {
    ep(Mpi::Mpich);
    is(Mpi::Mpich);
    lu(Mpi::Mpich);
}

/// `mpiscope report --html`: a self-contained page that Chromium renders with its figures
/// (blue compute, orange for the busiest function, the message matrix).
#[test]
fn html_report_renders_in_chromium() {
    let tmp = tempdir();
    let exe = common::build(Mpi::OpenMpi, "npb/lu.c", &[]);
    let (run, trace) = {
        let _g = mpi_lock();
        common::run_traced(Mpi::OpenMpi, 4, &exe, &["6", "3", "3"], &[], tmp.path())
    };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let page = tmp.path().join("report.html");
    let html = common::html_report(&trace, &page);
    assert_eq!(
        html.matches("<svg").count(),
        7,
        "seven figures (three communication matrices); the timeline is a canvas"
    );
    assert!(html.contains("id=\"tl-canvas\""), "timeline");
    assert!(
        !html.contains("src=\"http") && !html.contains("src=\"/"),
        "not self-contained"
    );
    assert!(
        html.contains("Loop structure") && html.contains("lu.c:"),
        "structure and callsites"
    );
    let shot = common::render_html(&page, 1000, 4000);
    assert_eq!((shot.width, shot.height), (1000, 4000));
    let blue = shot.share_of([0x48, 0x78, 0xa8], 6);
    let orange = shot.share_of([0xe0, 0x80, 0x30], 6);
    let matrix = shot.share_of([8, 48, 107], 6);
    assert!(
        blue > 0.002 && orange > 0.002 && matrix > 0.0005,
        "blue {blue}, orange {orange}, matrix {matrix}"
    );
}

/// Wait states of known size (`tests/programs/npb/late.c`): a late sender of 50 ms and a
/// barrier whose last rank is 30 ms late.
#[test]
fn balance_finds_known_wait_states() {
    let tmp = tempdir();
    let exe = common::build(Mpi::OpenMpi, "npb/late.c", &[]);
    let (run, trace) = {
        let _g = mpi_lock();
        common::run_traced(Mpi::OpenMpi, 4, &exe, &[], &[], tmp.path())
    };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let o = Command::new(mpiscope())
        .arg("report")
        .arg(&trace)
        .args(["--json", "--ranks-per-node", "2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &r["balance"];
    let first = &b["waits"][0];
    assert_eq!(
        (first["waiter"].as_u64(), first["on"].as_u64()),
        (Some(1), Some(0)),
        "{b}"
    );
    assert_eq!(first["kind"], "late sender");
    // Exactly the time from rank 1 entering its receive to rank 0 entering its send (rank 1
    // may reach its receive a little after rank 0 starts its 50 ms of work, when the ranks
    // share cores): read both from the trace.
    let ls = first["seconds"].as_f64().unwrap();
    let enter = |rank: u32, name: &str| {
        let e = common::read_rank(&trace, rank);
        e.events.iter().find(|(n, _)| n == name).unwrap().1.t_enter
    };
    let want = (enter(0, "MPI_Send") - enter(1, "MPI_Recv")) as f64 * 1e-9;
    assert!(
        (ls - want).abs() < 1e-9,
        "late sender {ls} s, trace says {want} s"
    );
    assert!(
        (0.02..0.5).contains(&ls),
        "late sender {ls} s, expected about 0.05"
    );
    let barrier = b["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["function"] == "MPI_Barrier")
        .unwrap();
    assert_eq!(barrier["instances"], 3);
    // Second barrier: ranks 2 and 3 wait about 50 ms for rank 0. Third: ranks 0-2 wait
    // about 30 ms for rank 3. About 190 ms in all.
    let cw = barrier["seconds"].as_f64().unwrap();
    assert!((0.15..1.0).contains(&cw), "collective wait {cw} s");
    let wait = |r: usize| b["per_rank"][r]["collective_wait_s"].as_f64().unwrap();
    assert!((0.025..0.5).contains(&wait(0)), "{b}");
    assert!((0.07..0.6).contains(&wait(2)), "{b}");
    // Rank 3 waits about 50 ms in the second barrier, less the time it takes to reach it
    // on a shared core (44.97 ms seen in CI).
    assert!((0.035..0.5).contains(&wait(3)), "{b}");
    assert!(b["compute_imbalance_pct"].as_f64().unwrap() > 30.0, "{b}");
    assert_eq!(b["placement"]["ranks_per_node"], 2);
}

/// `mpiscope compare`: the same program at 2 and 4 ranks, given in any order; its
/// `--html` page draws the scaling curves (checked in headless Chromium).
#[test]
fn compare_runs_at_two_scales() {
    let tmp = tempdir();
    let exe = common::build(Mpi::OpenMpi, "npb/ep.c", &[]);
    let mut dirs = Vec::new();
    for np in [4u32, 2] {
        let d = tmp.path().join(format!("np{np}"));
        std::fs::create_dir_all(&d).unwrap();
        let (run, trace) = {
            let _g = mpi_lock();
            common::run_traced(Mpi::OpenMpi, np, &exe, &["3"], &[], &d)
        };
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        dirs.push(trace);
    }
    let page = tmp.path().join("scaling.html");
    let o = Command::new(mpiscope())
        .arg("compare")
        .args(&dirs)
        .arg("--json")
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: Value = serde_json::from_slice(&o.stdout).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    // Time, speedup, efficiency and bursts against ranks, then calls, bytes and MPI time per
    // function.
    for id in [
        "fig-time",
        "fig-speedup",
        "fig-efficiency",
        "fig-bursts",
        "fig-calls",
        "fig-bytes",
        "fig-mpi",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no figure {id}");
    }
    assert_eq!(html.matches("<svg").count(), 7, "seven curve figures");
    assert!(
        html.contains("<title>MPI_Allreduce at 2 ranks: 3</title>")
            && html.contains("<title>MPI_Allreduce at 4 ranks: 3</title>"),
        "calls per rank drawn at both scales: {:?}",
        html.match_indices("<title>MPI_Allreduce at")
            .map(|(i, _)| &html[i..(i + 60).min(html.len())])
            .collect::<Vec<_>>()
    );
    assert!(html.contains("<title>harmonic mean at 4 ranks: "));
    let shot = common::render_html(&page, 1000, 1600);
    // The first two curve colours (harmonic mean, mean; the busiest functions): at least
    // a few hundred pixels of 3-pixel lines and 10-pixel dots each.
    let first = shot.share_of([72, 120, 168], 8);
    let second = shot.share_of([224, 128, 48], 8);
    assert!(
        first > 4e-4 && second > 4e-4,
        "curves not drawn: {first} {second}"
    );
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(
        (runs[0]["ranks"].as_u64(), runs[1]["ranks"].as_u64()),
        (Some(2), Some(4))
    );
    for r in runs {
        // Every rank calls MPI_Allreduce once per round, whatever the scale.
        assert_eq!(r["calls_per_rank"]["MPI_Allreduce"], 3.0, "{r}");
        assert_eq!(r["bytes_per_call"]["MPI_Allreduce"], 16.0, "{r}");
        assert!(r["burst_harmonic_mean_s"].as_f64().unwrap() > 0.0);
    }
    let o = Command::new(mpiscope())
        .arg("compare")
        .arg(&dirs[0])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "one run is not a comparison");
}

#[test]
fn text_output_and_bad_rank() {
    let tmp = tempdir();
    let exe = common::build(Mpi::OpenMpi, "npb/ep.c", &[]);
    let (run, trace) = {
        let _g = mpi_lock();
        common::run_traced(Mpi::OpenMpi, 2, &exe, &["3"], &[], tmp.path())
    };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let o = Command::new(mpiscope())
        .arg("structure")
        .arg(&trace)
        .args(["--rank", "1", "--detail", "high"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // `(CPU2: 1.23 + Allreduce2(8B): 4.56)[3]: 17`, callsites named by file and line.
    let line = text
        .lines()
        .find(|l| l.contains("[3]: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("+ Allreduce2(8B): ") && line.contains("(CPU2: "),
        "{text}"
    );
    assert!(text.contains("MPI_Allreduce at main ep.c:"), "{text}");
    let o = Command::new(mpiscope())
        .arg("structure")
        .arg(&trace)
        .args(["--rank", "9"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--rank 9"));
}

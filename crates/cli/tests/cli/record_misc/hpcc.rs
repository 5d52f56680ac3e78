//! A real application: Debian's HPC Challenge (`/usr/bin/hpcc`: HPL, PTRANS, FFT,
//! RandomAccess, ...) on 4 ranks under Open MPI with `MPI_Iprobe` sampled; the trailer's
//! counts, the sampling, `report --window` over the HPL section, and the structure and HTML
//! report of the whole run; and under T-NBC, every collective overlapped, its checks pass.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{run_limited, scan_rank};
use crate::common::Mpi;

const HPCC_INPUT: &str = "\
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
800          Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
";

/// Debian's HPC Challenge (real HPL, PTRANS, FFT, RandomAccess, ...) on 4 ranks under the
/// recorder, with `MPI_Iprobe` sampled.
#[test]
fn hpcc_openmpi() {
    let _g = common::mpi_lock();
    let hpcc = Path::new("/usr/bin/hpcc");
    assert!(
        hpcc.is_file(),
        "/usr/bin/hpcc is missing: install it with `apt-get install hpcc` (CI installs it)"
    );
    let mpi = Mpi::OpenMpi;
    let tmp = common::tempdir();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("hpccinf.txt"), HPCC_INPUT).unwrap();
    let trace = tmp.path().join("trace");
    let mut c = Command::new(common::mpiscope());
    c.current_dir(&work);
    c.arg("trace")
        .arg("-o")
        .arg(&trace)
        .arg("--preload")
        .arg(mpi.preload())
        .args(["--sample", "MPI_Iprobe=1000", "--"]);
    c.args(mpi.launcher(4)).arg(hpcc);
    let t0 = Instant::now();
    let (run, timed_out) = run_limited(c, tmp.path(), "hpcc", Duration::from_secs(240));
    assert!(
        !timed_out,
        "hpcc under the recorder did not finish in 240 s:\n{}",
        run.stderr
    );
    assert_eq!(
        run.code,
        Some(0),
        "hpcc failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    eprintln!("hpcc traced in {:.1} s", t0.elapsed().as_secs_f64());

    let out =
        std::fs::read_to_string(work.join("hpccoutf.txt")).expect("hpcc wrote no hpccoutf.txt");
    assert!(!out.contains("FAILED"), "hpcc reports a failure:\n{out}");
    assert!(
        out.lines().any(
            |l| l.starts_with("||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=")
                && l.ends_with("PASSED")
        ),
        "no passed HPL residual check in hpccoutf.txt:\n{out}"
    );
    assert!(
        out.contains("1 tests completed and passed residual checks"),
        "HPL residual check not passed"
    );
    assert!(out.contains("0 tests completed and failed residual checks"));
    assert!(
        out.lines().any(|l| l == "Success=1"),
        "hpcc summary without Success=1"
    );
    assert!(
        out.lines().any(|l| l == "HPL_N=800"),
        "hpcc did not read our hpccinf.txt"
    );
    assert!(out.lines().any(|l| l == "CommWorldProcs=4"));

    let rep = common::report_json(&trace);
    assert_eq!(rep["ranks"], 4);
    for pr in rep["per_rank"].as_array().unwrap() {
        assert_eq!(pr["complete"], true, "{pr}");
        assert_eq!(pr["end"], "finalize", "{pr}");
    }
    assert!(
        rep["warnings"].as_array().unwrap().is_empty(),
        "warnings: {}",
        rep["warnings"]
    );
    let calls = rep["calls"].as_object().unwrap();
    let mut by_count: Vec<(u64, &String)> = calls
        .iter()
        .map(|(n, s)| (s["count"].as_u64().unwrap(), n))
        .collect();
    by_count.sort_by(|a, b| b.cmp(a));
    eprintln!(
        "hpcc: most frequent calls {:?}",
        &by_count[..by_count.len().min(5)]
    );
    // Only MPI_Iprobe is sampled: every other function is recorded in full.
    for (n, s) in calls {
        if n != "MPI_Iprobe" {
            assert_eq!(
                s["recorded"], s["count"],
                "{n} is not sampled but has unrecorded calls: {s}"
            );
        }
    }
    let ip = &rep["calls"]["MPI_Iprobe"];
    let total = ip["count"].as_u64().unwrap();
    assert!(
        total >= 1000,
        "hpcc made only {total} MPI_Iprobe calls: {ip}"
    );
    // Per rank: the 1000th, 2000th, ... calls are recorded, each after 999 skipped ones.
    let mut recorded = 0;
    for r in 0..4u32 {
        let (mut probes, mut bad) = (0u64, 0u64);
        let t = scan_rank(&trace, r, |name, e| {
            if name == "MPI_Iprobe" {
                probes += 1;
                bad += u64::from(e.skipped != 999);
            }
        });
        let count: u64 = t
            .calls
            .iter()
            .filter(|c| c.name == "MPI_Iprobe")
            .map(|c| c.count)
            .sum();
        assert_eq!(
            probes,
            count / 1000,
            "rank {r}: {count} MPI_Iprobe calls, sampled 1 in 1000"
        );
        assert_eq!(
            bad, 0,
            "rank {r}: sampled MPI_Iprobe events with skipped != 999"
        );
        recorded += probes;
    }
    assert_eq!(ip["recorded"], recorded);

    // [Polivanov 2012] found MPI_Iprobe the most frequent call of HPL. Over the whole of hpcc that is
    // MPI_Testany (MPIRandomAccess polls with it); within the HPL section, which comes last
    // and starts by building its process grid (MPI_Comm_split), it must be MPI_Iprobe.
    let mut hpl_start = None;
    scan_rank(&trace, 0, |name, e| {
        if name == "MPI_Comm_split" {
            hpl_start = Some(e.t_enter);
        }
    });
    let hpl_start = hpl_start.expect("no MPI_Comm_split on rank 0: HPL builds its grid with it");
    let o = Command::new(common::mpiscope())
        .arg("report")
        .arg(&trace)
        .arg("--json")
        .arg("--window")
        .arg(format!("{}:", hpl_start as f64 / 1e9))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "report --window failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let hpl: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let top = hpl["calls"]
        .as_object()
        .unwrap()
        .iter()
        .max_by_key(|(_, s)| s["count"].as_u64().unwrap())
        .map(|(n, s)| (n.clone(), s["count"].as_u64().unwrap()))
        .unwrap();
    eprintln!(
        "hpcc: HPL section from {:.3} s, most frequent call {top:?}",
        hpl_start as f64 / 1e9
    );
    // Whether MPI_Iprobe leads depends on how long each broadcast makes the others poll
    // (timing: on a loaded machine MPI_Get_address, 2,760 calls, can come first), so the
    // test checks what the recorder guarantees: its
    // counts are exactly the events entered after `hpl_start` (sampled probes count 1000
    // each; a rank that probed fewer than 1000 times in the window contributes none).
    let ip = hpl["calls"]["MPI_Iprobe"]["count"].as_u64().unwrap_or(0);
    assert_eq!(
        ip % 1000,
        0,
        "MPI_Iprobe in the HPL section: {ip} (sampled 1 in 1000)"
    );
    let mut after: std::collections::BTreeMap<String, u64> = Default::default();
    for r in 0..4u32 {
        scan_rank(&trace, r, |name, e| {
            if e.t_enter >= hpl_start {
                *after.entry(name.to_string()).or_default() += 1 + e.skipped;
            }
        });
    }
    for name in [
        "MPI_Send",
        "MPI_Recv",
        "MPI_Irecv",
        "MPI_Wait",
        "MPI_Iprobe",
    ] {
        assert_eq!(
            hpl["calls"][name]["count"].as_u64().unwrap_or(0),
            after.get(name).copied().unwrap_or(0),
            "{name} in the HPL window"
        );
    }

    // Understand: the structure and the HTML report of the whole run complete, and the page
    // renders ([Polivanov 2012]'s calls-per-function figure, compute and MPI per rank).
    let o = Command::new(common::mpiscope())
        .arg("structure")
        .arg(&trace)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let classes = st["classes"].as_array().unwrap();
    let ranks: usize = classes
        .iter()
        .map(|c| c["ranks"].as_array().unwrap().len())
        .sum();
    assert_eq!(ranks, 4, "every rank in one class");
    assert!(
        classes.iter().all(|c| c["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "loop")),
        "loops found in every class"
    );
    let page = tmp.path().join("hpcc.html");
    let html = common::html_report(&trace, &page);
    assert!(html.contains("MPI_Iprobe") && html.contains("Loop structure"));
    // Tall enough for two charts of 30 functions and the per-rank figure.
    let shot = common::render_html(&page, 1000, 2600);
    assert!(
        shot.share_of([0x48, 0x78, 0xa8], 6) > 0.01,
        "no bars rendered"
    );
    assert!(
        shot.share_of([0xe0, 0x80, 0x30], 6) > 0.001,
        "no MPI time rendered"
    );
}

/// The same HPC Challenge under T-NBC (`mpiscope overlap`) with every eligible collective
/// overlapped, whatever its size (HPL's broadcasts, PTRANS, FFT's and RandomAccess's
/// all-to-alls): every check hpcc makes still passes.
#[test]
fn hpcc_under_tnbc_passes_its_checks() {
    let _g = common::mpi_lock();
    let hpcc = Path::new("/usr/bin/hpcc");
    assert!(hpcc.is_file(), "/usr/bin/hpcc is missing (CI installs it)");
    let lib = common::profile_dir().join("libmpiscope_overlap_openmpi.so");
    assert!(lib.is_file(), "{} missing", lib.display());
    let tmp = common::tempdir();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("hpccinf.txt"), HPCC_INPUT).unwrap();
    let mut c = Command::new(common::mpiscope());
    c.current_dir(&work)
        .args(["overlap", "--preload"])
        .arg(&lib)
        .args(["--policy", "always", "--min-bytes", "1", "--stats", "--"])
        .args(Mpi::OpenMpi.launcher(4))
        .arg(hpcc);
    let t0 = Instant::now();
    let (run, timed_out) = run_limited(c, tmp.path(), "hpcc-tnbc", Duration::from_secs(300));
    assert!(
        !timed_out,
        "hpcc under T-NBC did not finish in 300 s:\n{}",
        run.stderr
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let out =
        std::fs::read_to_string(work.join("hpccoutf.txt")).expect("hpcc wrote no hpccoutf.txt");
    assert!(!out.contains("FAILED"), "hpcc reports a failure:\n{out}");
    for line in ["Success=1", "HPL_N=800", "MPIRandomAccess_Errors=0"] {
        assert!(
            out.lines().any(|l| l == line),
            "no {line} in hpccoutf.txt:\n{out}"
        );
    }
    assert!(out.contains("0 tests completed and failed residual checks"));
    let overlapped = common::tnbc_overlapped(&run.stderr);
    assert_eq!(overlapped.len(), 4, "{}", run.stderr);
    assert!(overlapped.iter().all(|&n| n > 100), "{overlapped:?}");
    eprintln!(
        "hpcc under T-NBC in {:.1} s, {overlapped:?} collectives overlapped",
        t0.elapsed().as_secs_f64()
    );
}

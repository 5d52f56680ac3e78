//! A real application under the recorder: a short GROMACS `mdrun` (Debian's `gmx_mpi`, a
//! small box of SPC water with PME, 200 steps, 2 ranks), untraced and traced. Tracing must
//! change no result (the energy file, byte for byte, with `-reprod`); the trace must hold
//! the PME 3D-FFT's `MPI_Alltoall`s that `md.log` counts; `report` and `structure` read it;
//! and its SimGrid TI export replays under `smpirun -replay` to the time `mpiscope replay`
//! gives the same export. Under T-NBC (`mpiscope overlap`), every Alltoall overlapped or as
//! the adaptive policy decides, the energies stay the same, byte for byte. The heavier measurements (1, 2 and 4 ranks, LAMMPS, overhead,
//! replay against the measured time) are `scripts/bench-apps.sh`'s.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::common::{self, mpi_lock, mpiscope, tempdir, Mpi};
use serde_json::Value;

/// MD steps of the run.
const STEPS: u32 = 200;

/// `gmx_mpi`, installed with Debian's `gromacs` when missing (scripts/deps.sh installs it);
/// `None`, saying why, when it is missing and cannot be installed.
fn gmx_mpi() -> Option<PathBuf> {
    let find = || {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("gmx_mpi"))
                .find(|f| f.is_file())
        })
    };
    if let Some(g) = find() {
        return Some(g);
    }
    let installed = Command::new("apt-get")
        .args(["install", "-y", "-qq", "gromacs"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output();
    match (installed, find()) {
        (_, Some(g)) => Some(g),
        (Ok(o), None) => {
            eprintln!(
                "skipped: gmx_mpi is missing and `apt-get install gromacs` did not provide it:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            None
        }
        (Err(e), None) => {
            eprintln!("skipped: gmx_mpi is missing and apt-get cannot run: {e}");
            None
        }
    }
}

/// Runs `gmx_mpi args` in `dir` (one process, no launcher); panics with its output on failure.
fn gmx(gmx: &Path, dir: &Path, args: &[&str]) {
    let o = Command::new(gmx)
        .current_dir(dir)
        .arg("-quiet")
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gmx_mpi {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Writes the run input `dir/topol.tpr`: 510 SPC waters in a 2.5 nm box (`solvate -cs
/// spc216`), minimized, then `STEPS` steps of NVE MD with PME.
fn inputs(g: &Path, dir: &Path) -> PathBuf {
    gmx(
        g,
        dir,
        &[
            "solvate", "-cs", "spc216", "-box", "2.5", "2.5", "2.5", "-o", "conf.gro",
        ],
    );
    let conf = std::fs::read_to_string(dir.join("conf.gro")).unwrap();
    let atoms: usize = conf.lines().nth(1).unwrap().trim().parse().unwrap();
    assert_eq!(atoms % 3, 0, "{atoms} atoms are not whole waters");
    std::fs::write(
        dir.join("topol.top"),
        format!(
            "#include \"oplsaa.ff/forcefield.itp\"\n#include \"oplsaa.ff/spc.itp\"\n\n\
             [ system ]\nwater\n\n[ molecules ]\nSOL {}\n",
            atoms / 3
        ),
    )
    .unwrap();
    let common = "cutoff-scheme = Verlet\ncoulombtype = PME\nrcoulomb = 0.9\nrvdw = 0.9\n";
    std::fs::write(
        dir.join("em.mdp"),
        format!("integrator = steep\nnsteps = 100\nemtol = 1000\n{common}"),
    )
    .unwrap();
    std::fs::write(
        dir.join("md.mdp"),
        format!(
            "integrator = md\ndt = 0.002\nnsteps = {STEPS}\n{common}nstcalcenergy = 10\n\
             nstenergy = 10\nnstlog = 100\ntcoupl = no\npcoupl = no\ngen-vel = yes\n\
             gen-temp = 300\ngen-seed = 1\n"
        ),
    )
    .unwrap();
    let grompp = |mdp: &str, conf: &str, tpr: &str| {
        gmx(
            g,
            dir,
            &[
                "grompp",
                "-f",
                mdp,
                "-c",
                conf,
                "-p",
                "topol.top",
                "-o",
                tpr,
            ],
        );
    };
    grompp("em.mdp", "conf.gro", "em.tpr");
    gmx(
        g,
        dir,
        &[
            "mdrun", "-s", "em.tpr", "-ntomp", "1", "-nb", "cpu", "-deffnm", "em",
        ],
    );
    grompp("md.mdp", "em.gro", "topol.tpr");
    dir.join("topol.tpr")
}

/// The `mdrun` arguments for `tpr`, output files `prefix.*`.
fn mdrun_args(tpr: &Path, prefix: &Path) -> Vec<String> {
    [
        "-quiet", "mdrun", "-s", "TPR", "-ntomp", "1", "-reprod", "-nb", "cpu", "-deffnm", "PREFIX",
    ]
    .iter()
    .map(|a| match *a {
        "TPR" => tpr.display().to_string(),
        "PREFIX" => prefix.display().to_string(),
        a => a.to_string(),
    })
    .collect()
}

/// The last energies block of an `md.log` (names and values), for the messages.
fn last_energies(log: &str) -> String {
    let start = log
        .rfind("   Energies (kJ/mol)")
        .expect("no energies in md.log");
    log[start..].lines().take(5).collect::<Vec<_>>().join("\n")
}

/// md.log's `PME 3D-FFT Comm.` count (per rank), when it prints one.
fn pme_fft_comm(log: &str) -> Option<u64> {
    let line = log
        .lines()
        .find(|l| l.trim_start().starts_with("PME 3D-FFT Comm."))?;
    // Name, ranks, threads, count, seconds, giga-cycles, percent.
    let fields: Vec<&str> = line.split_whitespace().collect();
    fields.get(fields.len().checked_sub(4)?)?.parse().ok()
}

#[test]
fn mdrun_traced_gives_the_same_energies_and_its_export_replays_under_smpirun() {
    let Some(g) = gmx_mpi() else { return };
    let started = Instant::now();
    let tmp = tempdir();
    let dir = tmp.path();
    let tpr = inputs(&g, dir);
    let args = mdrun_args(&tpr, &dir.join("plain"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let traced_args = mdrun_args(&tpr, &dir.join("traced"));
    let traced_args: Vec<&str> = traced_args.iter().map(String::as_str).collect();
    let trace = {
        let _g = mpi_lock();
        let run = common::run_plain(Mpi::OpenMpi, 2, &g, &args);
        assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
        let (run, trace) = common::run_traced(Mpi::OpenMpi, 2, &g, &traced_args, &[], dir);
        assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
        trace
    };

    // With -reprod, the same energies at every step, to the bit.
    let (plain_log, traced_log) = (
        std::fs::read_to_string(dir.join("plain.log")).unwrap(),
        std::fs::read_to_string(dir.join("traced.log")).unwrap(),
    );
    let energies = last_energies(&plain_log);
    assert_eq!(energies, last_energies(&traced_log));
    let edr = |name: &str| std::fs::read(dir.join(name)).unwrap();
    assert!(
        edr("plain.edr") == edr("traced.edr"),
        "the traced run's energy file differs from the untraced run's"
    );
    eprintln!("mdrun, {STEPS} steps, untraced and traced:\n{energies}");

    // Every PME step transposes the 3D-FFT's grid with MPI_Alltoall: as many per rank as
    // md.log counts, the same on both ranks.
    let alltoalls: Vec<u64> = (0..2)
        .map(|rank| {
            let r = common::read_rank(&trace, rank);
            assert!(r.complete, "rank {rank}: {:?}", r.stopped);
            r.events.iter().filter(|(n, _)| n == "MPI_Alltoall").count() as u64
        })
        .collect();
    assert!(alltoalls[0] > u64::from(STEPS), "{alltoalls:?}");
    assert_eq!(alltoalls[0], alltoalls[1]);
    if let Some(n) = pme_fft_comm(&traced_log) {
        assert_eq!(alltoalls[0], n, "md.log counts {n} PME 3D-FFT Comm.");
    }

    let report = common::report_json(&trace);
    assert_eq!(report["ranks"], 2);
    assert_eq!(
        report["calls"]["MPI_Alltoall"]["count"].as_u64(),
        Some(alltoalls[0] * 2)
    );
    let o = Command::new(mpiscope())
        .arg("structure")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let structure = String::from_utf8_lossy(&o.stdout);
    assert!(structure.contains("MPI_Alltoall"), "{structure}");
    // The time-step loop is found in spite of its energy, neighbour-search and
    // load-balancing steps, in one class of ranks, on one screen.
    assert!(structure.lines().count() <= 70, "{structure}");
    assert!(structure.contains("loop ["), "{structure}");
    let o = Command::new(mpiscope())
        .args(["structure", "--json"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let classes = s["approximate"]["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 1, "{}", s["approximate"]);
    assert_eq!(classes[0]["ranks"], serde_json::json!([0, 1]));
    let main = classes[0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "loop")
        .max_by_key(|p| p["count"].as_u64().unwrap() * p["body_len"].as_u64().unwrap())
        .expect("a loop");
    // Its iterations hold every PME step: iterations times the body's Alltoalls is the
    // rank's count, within the steps before and after the loop.
    let alltoall_in_body = body_symbols(&main["body"])
        .iter()
        .filter(|&&sym| s["symbols"][sym as usize]["function"] == "MPI_Alltoall")
        .count() as u64;
    let in_loop = main["count"].as_u64().unwrap() * alltoall_in_body;
    assert!(
        in_loop * 10 >= alltoalls[0] * 9 && in_loop <= alltoalls[0],
        "{in_loop} of {} Alltoalls in the loop: {main}",
        alltoalls[0]
    );

    // --phase loop: each rank's range is the time-step loop, which holds the Alltoalls
    // the structure's main loop holds and fewer bursts than the whole run.
    let o = Command::new(mpiscope())
        .args(["report", "--json", "--phase", "loop"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(lp["phase"], "loop");
    assert_eq!(lp["phase_ranges"].as_array().map(Vec::len), Some(2));
    let loop_alltoalls = lp["calls"]["MPI_Alltoall"]["count"].as_u64().unwrap();
    assert!(
        loop_alltoalls >= in_loop * 2 && loop_alltoalls <= alltoalls[0] * 2,
        "{loop_alltoalls} Alltoalls in the loops, {in_loop} per rank in the structure's"
    );
    assert!(lp["bursts"]["count"].as_u64() < report["bursts"]["count"].as_u64());

    let (simgrid, ours) = replay_export(&trace, dir);
    eprintln!(
        "TI export: SimGrid {simgrid:.9} s, mpiscope {ours:.9} s; test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(ours > 0.0);
    assert!(
        (ours - simgrid).abs() <= 1e-6 * simgrid,
        "SimGrid {simgrid} s, mpiscope {ours} s"
    );
}

/// The symbols of a structure's nodes (JSON), expanded.
fn body_symbols(nodes: &serde_json::Value) -> Vec<u64> {
    let mut out = Vec::new();
    for n in nodes.as_array().unwrap() {
        match n["kind"].as_str().unwrap() {
            "leaf" => out.push(n["sym"].as_u64().unwrap()),
            "seq" => out.extend(body_symbols(&n["items"])),
            _ => {
                let inner = body_symbols(&n["body"]);
                for _ in 0..n["count"].as_u64().unwrap() {
                    out.extend_from_slice(&inner);
                }
            }
        }
    }
    out
}

/// Exports `trace` as SimGrid TI into `dir/ti` and replays it with `smpirun -replay` and
/// `mpiscope replay` on one cluster: (SimGrid's time, mpiscope's).
fn replay_export(trace: &Path, dir: &Path) -> (f64, f64) {
    let ti = dir.join("ti");
    let o = Command::new(mpiscope())
        .arg("export")
        .arg(trace)
        .args(["--format", "simgrid-ti", "--json", "-o"])
        .arg(&ti)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["ranks"], 2);
    let (platform, hosts) = common::cluster(dir, 2);
    let index = ti.join("index.txt");
    let simgrid = common::smpirun_replay(dir, &index, 2, &platform, &hosts);
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
    (simgrid, ours)
}

/// T-NBC on a real application: mdrun's PME transposes the 3D-FFT's grid with
/// `MPI_Alltoall` at every step. Under `mpiscope overlap`, every one of them overlapped
/// (`--policy always`, every size) and as the default, adaptive policy decides, the energy
/// file must be the untraced run's, byte for byte (`-reprod`).
#[test]
fn mdrun_under_tnbc_gives_the_same_energies() {
    let Some(g) = gmx_mpi() else { return };
    let tmp = tempdir();
    let dir = tmp.path();
    let tpr = inputs(&g, dir);
    let lib = common::profile_dir().join("libmpiscope_overlap_openmpi.so");
    assert!(lib.is_file(), "{} missing", lib.display());
    let _g = mpi_lock();
    let args = mdrun_args(&tpr, &dir.join("plain"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::run_plain(Mpi::OpenMpi, 2, &g, &args);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let plain = std::fs::read(dir.join("plain.edr")).unwrap();
    for (name, policy) in [("always", "always"), ("adaptive", "adaptive")] {
        let args = mdrun_args(&tpr, &dir.join(name));
        let o = Command::new(mpiscope())
            .args(["overlap", "--preload"])
            .arg(&lib)
            .args(["--policy", policy, "--min-bytes", "1", "--stats", "--"])
            .args(Mpi::OpenMpi.launcher(2))
            .arg(&g)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{policy}:\n{err}");
        assert!(
            std::fs::read(dir.join(format!("{name}.edr"))).unwrap() == plain,
            "{policy}: the energy file differs from the run without T-NBC"
        );
        let overlapped = common::tnbc_overlapped(&err);
        assert_eq!(overlapped.len(), 2, "{err}");
        if policy == "always" {
            // Every PME step's transposes.
            assert!(overlapped.iter().all(|&n| n > STEPS as usize), "{err}");
        }
        eprintln!("mdrun under T-NBC ({policy}): {overlapped:?} collectives overlapped");
    }
}

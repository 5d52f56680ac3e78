//! T-NBC (`libmpiscope_overlap_<flavour>.so`) under real mpirun: randomized Alltoalls stay
//! bit-identical to arithmetic expectations, and genuine segfaults still kill with SIGSEGV.

mod common;

use common::{build, mpi_lock, profile_dir, Mpi};
use std::process::Command;

fn overlap_lib(mpi: Mpi) -> std::path::PathBuf {
    let p = profile_dir().join(format!("libmpiscope_overlap_{}.so", mpi.name()));
    assert!(
        p.is_file(),
        "{} missing: build mpiscope-overlap-{}",
        p.display(),
        mpi.name()
    );
    p
}

/// Runs `exe args` on `np` ranks with the overlap library preloaded and statistics on.
fn run(mpi: Mpi, np: u32, exe: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let lib = overlap_lib(mpi);
    let mut l = mpi.launcher(np);
    let mut c = Command::new(l.remove(0));
    c.args(l);
    match mpi {
        Mpi::OpenMpi => {
            c.arg("-x").arg(format!("LD_PRELOAD={}", lib.display()));
            c.args(["-x", "MPISCOPE_OVERLAP_STATS=1"]);
        }
        Mpi::Mpich => {
            c.arg("-env").arg("LD_PRELOAD").arg(&lib);
            c.args(["-env", "MPISCOPE_OVERLAP_STATS", "1"]);
        }
    }
    let o = c.arg(exe).args(args).output().expect("launch");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The number of overlapped Alltoalls each rank reported.
fn overlapped(stderr: &str) -> Vec<usize> {
    // Lines of two ranks may interleave: take the digits after each marker.
    stderr
        .split("overlapped ")
        .skip(1)
        .map(|r| {
            let d: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
            d.parse()
                .unwrap_or_else(|_| panic!("bad statistics line: {r}"))
        })
        .collect()
}

fn randomized(mpi: Mpi, np: u32, seed: &str) -> Vec<usize> {
    randomized_program(mpi, np, "overlap/alltoall_random.c", seed)
}

/// Runs a randomized correctness program (it prints "OK <bytes>" when every received byte is
/// right) under T-NBC; returns how many collectives each rank overlapped.
fn randomized_program(mpi: Mpi, np: u32, program: &str, seed: &str) -> Vec<usize> {
    let exe = build(mpi, program, &["-lpthread"]);
    let _g = mpi_lock();
    let (code, out, err) = run(mpi, np, &exe, &["24", seed]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("OK "), "stdout:\n{out}\nstderr:\n{err}");
    let n = overlapped(&err);
    assert_eq!(n.len(), np as usize, "stderr:\n{err}");
    n
}

#[test]
fn openmpi_alltoall_random_2_ranks() {
    let n = randomized(Mpi::OpenMpi, 2, "11");
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

#[test]
fn openmpi_alltoall_random_4_ranks() {
    let n = randomized(Mpi::OpenMpi, 4, "12");
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

#[test]
fn openmpi_alltoall_random_8_ranks() {
    let n = randomized(Mpi::OpenMpi, 8, "15");
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

#[test]
fn mpich_alltoall_random_2_ranks() {
    let n = randomized(Mpi::Mpich, 2, "13");
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

#[test]
fn mpich_alltoall_random_4_ranks() {
    let n = randomized(Mpi::Mpich, 4, "14");
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

#[test]
fn mpich_alltoall_random_8_ranks() {
    let n = randomized(Mpi::Mpich, 8, "16");
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

/// MPI_Bcast (random roots, sizes, sub-communicators) and MPI_Alltoallv (random counts with
/// zeros, tiling displacements, and gapped ones that take the blocking path).
fn bcast_alltoallv(mpi: Mpi, np: u32) {
    let n = randomized_program(mpi, np, "overlap/bcast_alltoallv_random.c", &np.to_string());
    assert!(n.iter().all(|&k| k > 0), "nothing overlapped: {n:?}");
}

#[test]
fn openmpi_bcast_alltoallv_random_2_3_4_8_ranks() {
    for np in [2, 3, 4, 8] {
        bcast_alltoallv(Mpi::OpenMpi, np);
    }
}

#[test]
fn mpich_bcast_alltoallv_random_2_3_4_8_ranks() {
    for np in [2, 3, 4, 8] {
        bcast_alltoallv(Mpi::Mpich, np);
    }
}

#[test]
fn openmpi_genuine_segfault_still_crashes() {
    let exe = build(Mpi::OpenMpi, "overlap/segfault.c", &[]);
    let _g = mpi_lock();
    let (code, out, err) = run(Mpi::OpenMpi, 2, &exe, &[]);
    assert!(!out.contains("ALIVE"), "survived a NULL write:\n{out}");
    assert_ne!(code, Some(0));
    assert!(
        err.contains("Segmentation fault (11)") || err.contains("signal 11"),
        "stderr:\n{err}"
    );
    assert!(overlapped(&err).is_empty(), "reached MPI_Finalize:\n{err}");
}

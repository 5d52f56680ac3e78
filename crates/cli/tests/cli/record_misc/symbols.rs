//! The set of wrapped symbols: the preload library defines an `MPI_` C wrapper for every
//! `PMPI_` function of the MPI library (no more, no fewer, no `PMPI_` of its own) and the
//! Fortran bindings.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::common::Mpi;

/// Defined dynamic function symbols of a shared object (`nm -D --defined-only`).
fn defined_functions(so: &Path) -> BTreeSet<String> {
    let o = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(so)
        .output()
        .expect("run nm (binutils)");
    assert!(
        o.status.success(),
        "nm {} failed: {}",
        so.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace().rev();
            let name = f.next()?;
            let kind = f.next()?;
            matches!(kind, "T" | "W" | "i").then(|| name.split('@').next().unwrap().to_owned())
        })
        .collect()
}

/// A C binding name: `MPI_` then a capital and at least one lower-case letter (Fortran
/// names such as `MPI_SEND` are all capitals).
fn is_c_name(n: &str) -> bool {
    let Some(rest) = n.strip_prefix("MPI_") else {
        return false;
    };
    rest.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && rest.chars().any(|c| c.is_ascii_lowercase())
}

fn wrapped_symbols(mpi: Mpi, lib: &str) {
    let lib = Path::new(lib);
    assert!(
        lib.is_file(),
        "{} is missing (install the {} development package)",
        lib.display(),
        mpi.name()
    );
    let want: BTreeSet<String> = defined_functions(lib)
        .iter()
        .filter_map(|n| n.strip_prefix("PMPI_"))
        .map(|n| format!("MPI_{n}"))
        .collect();
    let ours = defined_functions(&mpi.preload());
    let got: BTreeSet<String> = ours.iter().filter(|n| is_c_name(n)).cloned().collect();
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{}: {} PMPI_ functions in {}, {} MPI_ C wrappers; not wrapped: {missing:?}; wrapped without a PMPI_: {extra:?}",
        mpi.name(),
        want.len(),
        lib.display(),
        got.len()
    );
    assert!(
        want.len() > 300,
        "only {} PMPI_ functions found in {}",
        want.len(),
        lib.display()
    );
    let pmpi: Vec<_> = ours.iter().filter(|n| n.starts_with("PMPI_")).collect();
    assert!(
        pmpi.is_empty(),
        "the preload library must not define PMPI_ functions: {pmpi:?}"
    );
    // The Fortran bindings are there too.
    for f in [
        "MPI_SEND",
        "mpi_send_",
        "mpi_waitall_",
        "mpi_init_",
        "mpi_finalize_",
    ] {
        assert!(
            ours.contains(f),
            "{}: no {f} in the preload library",
            mpi.name()
        );
    }
}

#[test]
fn wrapped_symbols_openmpi() {
    let _g = common::mpi_lock();
    wrapped_symbols(Mpi::OpenMpi, "/usr/lib/x86_64-linux-gnu/libmpi.so.40");
}

#[test]
fn wrapped_symbols_mpich() {
    let _g = common::mpi_lock();
    wrapped_symbols(Mpi::Mpich, "/usr/lib/x86_64-linux-gnu/libmpich.so.12");
}

//! Finding an installed MPI: its compiler wrapper's flags, its header, its libraries.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::GenError;

/// The MPI implementation families we build for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Open MPI (Debian: `mpicc.openmpi`, `libmpi.so.40`).
    OpenMpi,
    /// MPICH (Debian: `mpicc.mpich`, `libmpich.so.12`).
    Mpich,
}

impl Flavour {
    /// `openmpi` or `mpich`.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "openmpi",
            Flavour::Mpich => "mpich",
        }
    }

    /// The flavour called `name`.
    pub fn from_name(name: &str) -> Option<Flavour> {
        match name {
            "openmpi" => Some(Flavour::OpenMpi),
            "mpich" => Some(Flavour::Mpich),
            _ => None,
        }
    }

    fn default_cc(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "mpicc.openmpi",
            Flavour::Mpich => "mpicc.mpich",
        }
    }

    fn default_fc(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "mpifort.openmpi",
            Flavour::Mpich => "mpifort.mpich",
        }
    }

    fn c_lib_names(self) -> &'static [&'static str] {
        match self {
            Flavour::OpenMpi => &["mpi"],
            Flavour::Mpich => &["mpich", "mpi"],
        }
    }

    fn fortran_lib_names(self) -> &'static [&'static str] {
        match self {
            Flavour::OpenMpi => &["mpi_mpifh"],
            Flavour::Mpich => &["mpichfort", "mpifort"],
        }
    }

    /// Environment variable that overrides the C compiler wrapper.
    pub fn cc_env(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "MPISCOPE_OPENMPI_CC",
            Flavour::Mpich => "MPISCOPE_MPICH_CC",
        }
    }

    /// Environment variable that overrides the Fortran compiler wrapper.
    pub fn fc_env(self) -> &'static str {
        match self {
            Flavour::OpenMpi => "MPISCOPE_OPENMPI_FC",
            Flavour::Mpich => "MPISCOPE_MPICH_FC",
        }
    }
}

/// What we need to know about an installed MPI.
#[derive(Debug, Clone)]
pub struct MpiInstall {
    /// Which implementation.
    pub flavour: Flavour,
    /// The C compiler wrapper used.
    pub cc: String,
    /// Include directories (`-I`).
    pub include_dirs: Vec<PathBuf>,
    /// Library directories (`-L`).
    pub lib_dirs: Vec<PathBuf>,
    /// The C library (`libmpi.so`), symlinks resolved.
    pub c_lib: PathBuf,
    /// Name to link (`mpi`, `mpich`).
    pub c_lib_name: String,
    /// The Fortran library (`libmpi_mpifh.so`), when installed.
    pub fortran_lib: Option<PathBuf>,
    /// `mpi.h`.
    pub header: PathBuf,
}

fn show(wrapper: &str) -> Result<Vec<String>, GenError> {
    let out = Command::new(wrapper)
        .arg("-show")
        .output()
        .map_err(|e| GenError::Discover(format!("cannot run `{wrapper} -show`: {e}")))?;
    if !out.status.success() {
        return Err(GenError::Discover(format!(
            "`{wrapper} -show` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect())
}

fn find_lib(dirs: &[PathBuf], names: &[&str]) -> Option<(PathBuf, String)> {
    let mut search: Vec<PathBuf> = dirs.to_vec();
    search.push("/usr/lib/x86_64-linux-gnu".into());
    search.push("/usr/lib64".into());
    search.push("/usr/lib".into());
    search.push("/usr/local/lib".into());
    for name in names {
        for d in &search {
            let p = d.join(format!("lib{name}.so"));
            if p.exists() {
                return Some((std::fs::canonicalize(&p).unwrap_or(p), (*name).to_owned()));
            }
        }
    }
    None
}

/// Finds the installed MPI of a flavour through its compiler wrappers (overridable with
/// `MPISCOPE_OPENMPI_CC` / `MPISCOPE_MPICH_CC` and the `_FC` counterparts).
pub fn discover(flavour: Flavour) -> Result<MpiInstall, GenError> {
    let cc = std::env::var(flavour.cc_env()).unwrap_or_else(|_| flavour.default_cc().to_owned());
    let words = show(&cc)?;
    let mut include_dirs = Vec::new();
    let mut lib_dirs = Vec::new();
    for w in &words {
        if let Some(d) = w.strip_prefix("-I") {
            include_dirs.push(PathBuf::from(d));
        } else if let Some(d) = w.strip_prefix("-L") {
            lib_dirs.push(PathBuf::from(d));
        }
    }
    let header = include_dirs
        .iter()
        .map(|d| d.join("mpi.h"))
        .find(|p| p.exists())
        .ok_or_else(|| {
            GenError::Discover(format!(
                "`{cc} -show` names no include directory holding mpi.h"
            ))
        })?;
    let (c_lib, c_lib_name) = find_lib(&lib_dirs, flavour.c_lib_names()).ok_or_else(|| {
        GenError::Discover(format!(
            "no {} library found in {:?}",
            flavour.c_lib_names().join("/"),
            lib_dirs
        ))
    })?;
    let fc = std::env::var(flavour.fc_env()).unwrap_or_else(|_| flavour.default_fc().to_owned());
    let mut f_dirs = lib_dirs.clone();
    if let Ok(fw) = show(&fc) {
        f_dirs.extend(
            fw.iter()
                .filter_map(|w| w.strip_prefix("-L"))
                .map(PathBuf::from),
        );
    }
    let fortran_lib = find_lib(&f_dirs, flavour.fortran_lib_names()).map(|(p, _)| p);
    Ok(MpiInstall {
        flavour,
        cc,
        include_dirs,
        lib_dirs,
        c_lib,
        c_lib_name,
        fortran_lib,
        header,
    })
}

/// Names of the dynamic symbols a shared library defines.
pub fn exported_symbols(lib: &Path) -> Result<std::collections::BTreeSet<String>, GenError> {
    use object::{Object, ObjectSymbol};
    let data =
        std::fs::read(lib).map_err(|e| GenError::Discover(format!("{}: {e}", lib.display())))?;
    let file = object::File::parse(&*data)
        .map_err(|e| GenError::Discover(format!("{}: {e}", lib.display())))?;
    let mut out = std::collections::BTreeSet::new();
    for s in file.dynamic_symbols() {
        if s.is_definition() {
            if let Ok(n) = s.name() {
                out.insert(n.to_owned());
            }
        }
    }
    Ok(out)
}

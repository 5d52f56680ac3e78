//! Generates the mpiscope preload library's wrappers from an installed MPI.
//!
//! The list of functions is never kept by hand: it is every `PMPI_` function that the
//! installed `mpi.h` declares and the installed library exports, read with bindgen
//! ([`model`]) and filtered by the library's dynamic symbols ([`discover`]). For each one
//! the generator writes a C wrapper and, when the Fortran library exports the function, the
//! Fortran wrappers; what each wrapper records comes from [`rules`]. The preload crates'
//! build scripts call [`generate`].

pub mod discover;
pub mod emit;
pub mod model;
pub mod rules;

use std::path::Path;

pub use discover::{discover, Flavour, MpiInstall};

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// The MPI installation could not be found or read.
    #[error("MPI installation: {0}")]
    Discover(String),
    /// bindgen failed on `mpi.h`.
    #[error("bindgen: {0}")]
    Bindgen(String),
    /// Writing the output failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The system error.
        source: std::io::Error,
    },
}

/// What was generated.
#[derive(Debug)]
pub struct Summary {
    /// The installation used.
    pub install: MpiInstall,
    /// `PMPI_` functions declared in `mpi.h`.
    pub declared: usize,
    /// `PMPI_` functions exported by the library.
    pub exported: usize,
    /// C functions wrapped (declared and exported, with an `MPI_` twin).
    pub wrapped: usize,
    /// Fortran symbols defined.
    pub fortran_symbols: usize,
    /// Fortran parameters recorded as absent.
    pub notes: Vec<String>,
}

fn write(path: &Path, text: &str) -> Result<(), GenError> {
    std::fs::write(path, text).map_err(|source| GenError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Generates only `bindings.rs`, `consts.rs` and `consts.c` in `out_dir` (for libraries that
/// call PMPI directly, such as the T-NBC overlap library, and need no recording wrappers).
pub fn generate_bindings(flavour: Flavour, out_dir: &Path) -> Result<MpiInstall, GenError> {
    let install = discover(flavour)?;
    let api = model::read_api(&install)?;
    write(&out_dir.join("bindings.rs"), &api.bindings)?;
    let handles = emit::present_handles(&api.bindings);
    write(&out_dir.join("consts.rs"), &emit::consts_rust(&handles))?;
    write(&out_dir.join("consts.c"), &emit::c_shim(&handles))?;
    Ok(install)
}

/// Generates `bindings.rs`, `wrappers.rs`, `consts.rs` and `consts.c` in `out_dir`.
pub fn generate(flavour: Flavour, out_dir: &Path) -> Result<Summary, GenError> {
    let install = discover(flavour)?;
    let api = model::read_api(&install)?;
    let c_syms = discover::exported_symbols(&install.c_lib)?;
    let f_syms = match &install.fortran_lib {
        Some(l) => discover::exported_symbols(l)?,
        None => Default::default(),
    };
    let api_bindings = api.bindings.clone();
    let exported = c_syms.iter().filter(|s| s.starts_with("PMPI_")).count();
    let declared = api.functions.len();
    let functions: Vec<model::Function> = api
        .functions
        .into_iter()
        .filter(|f| c_syms.contains(&format!("P{}", f.name)) && c_syms.contains(&f.name))
        .collect();
    let fortran: Vec<Option<emit::FortranEntry>> = functions
        .iter()
        .map(|f| emit::fortran_entry(&f.name, &f_syms, flavour == Flavour::OpenMpi))
        .collect();
    let out = emit::emit(
        &functions,
        &fortran,
        flavour.name(),
        &install.header.display().to_string(),
    );
    write(&out_dir.join("bindings.rs"), &api_bindings)?;
    write(&out_dir.join("wrappers.rs"), &out.rust)?;
    let handles = emit::present_handles(&api_bindings);
    write(&out_dir.join("consts.rs"), &emit::consts_rust(&handles))?;
    write(&out_dir.join("consts.c"), &emit::c_shim(&handles))?;
    Ok(Summary {
        install,
        declared,
        exported,
        wrapped: out.c_wrapped,
        fortran_symbols: out.fortran_symbols,
        notes: out.notes,
    })
}

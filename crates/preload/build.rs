//! Build script shared by the preload crates: generates the wrappers for the MPI flavour named
//! by the package (`mpiscope-preload-openmpi`, `mpiscope-preload-mpich`), compiles the
//! constants shim with that MPI's headers and links its C library.

use std::path::PathBuf;

use mpiscope_preload_gen::{generate, Flavour};

fn main() {
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap();
    let flavour_name = pkg.rsplit('-').next().unwrap();
    let flavour = Flavour::from_name(flavour_name).expect("package name ends with the MPI flavour");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=../build.rs");
    println!("cargo:rerun-if-env-changed={}", flavour.cc_env());
    println!("cargo:rerun-if-env-changed={}", flavour.fc_env());
    let summary = match generate(flavour, &out) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "error: cannot generate the {flavour_name} preload library: {e}\n\
                 Install it (Debian: `apt-get install {}`), or leave this crate out with \
                 `cargo build --workspace --exclude {pkg}`.",
                match flavour {
                    Flavour::OpenMpi => "openmpi-bin libopenmpi-dev",
                    Flavour::Mpich => "mpich libmpich-dev",
                }
            );
            std::process::exit(1);
        }
    };
    println!(
        "cargo:rerun-if-changed={}",
        summary.install.header.display()
    );
    println!("cargo:rerun-if-changed={}", summary.install.c_lib.display());
    let mut b = cc::Build::new();
    b.file(out.join("consts.c"))
        .warnings(false)
        .flag_if_supported("-w");
    for d in &summary.install.include_dirs {
        b.include(d);
    }
    b.compile("mpiscope_consts");
    for d in &summary.install.lib_dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
    }
    if let Some(dir) = summary.install.c_lib.parent() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib={}", summary.install.c_lib_name);
    println!("cargo:rustc-link-lib=dylib=dl");
    println!("cargo:rustc-env=MPISCOPE_FLAVOUR={flavour_name}");
    println!("cargo:rustc-env=MPISCOPE_WRAPPED={}", summary.wrapped);
    println!(
        "cargo:rustc-env=MPISCOPE_PMPI_EXPORTED={}",
        summary.exported
    );
    println!(
        "cargo:rustc-env=MPISCOPE_MPI_LIB={}",
        summary.install.c_lib.display()
    );
    std::fs::write(
        out.join("summary.txt"),
        format!(
            "flavour {flavour_name}\nheader {}\nlibrary {}\nfortran {}\ndeclared {}\nexported {}\nwrapped {}\nfortran_symbols {}\n{}\n",
            summary.install.header.display(),
            summary.install.c_lib.display(),
            summary.install.fortran_lib.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            summary.declared,
            summary.exported,
            summary.wrapped,
            summary.fortran_symbols,
            summary.notes.join("\n")
        ),
    )
    .unwrap();
}

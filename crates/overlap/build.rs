//! Build script shared by the overlap crates: bindings and the constants shim for the MPI flavour
//! named by the package (`mpiscope-overlap-openmpi`, `mpiscope-overlap-mpich`), through
//! mpiscope-preload-gen, and the link to that MPI's C library.

use std::path::PathBuf;

use mpiscope_preload_gen::{generate_bindings, Flavour};

fn main() {
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap();
    let name = pkg.rsplit('-').next().unwrap();
    let flavour = Flavour::from_name(name).expect("package name ends with the MPI flavour");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=../build.rs");
    println!("cargo:rerun-if-env-changed={}", flavour.cc_env());
    let install = match generate_bindings(flavour, &out) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: cannot find {name} for the overlap library: {e}");
            std::process::exit(1);
        }
    };
    println!("cargo:rerun-if-changed={}", install.header.display());
    let mut b = cc::Build::new();
    b.file(out.join("consts.c"))
        .warnings(false)
        .flag_if_supported("-w");
    for d in &install.include_dirs {
        b.include(d);
    }
    b.compile("mpiscope_overlap_consts");
    for d in &install.lib_dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
    }
    if let Some(dir) = install.c_lib.parent() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib={}", install.c_lib_name);
    println!("cargo:rustc-link-lib=dylib=dl");
    println!("cargo:rustc-env=MPISCOPE_OVERLAP_FLAVOUR={name}");
}

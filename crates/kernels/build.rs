//! Links Debian's OpenBLAS (`libopenblas-dev`), which provides the CBLAS interface.
fn main() {
    println!("cargo:rustc-link-lib=openblas");
}

//! The MPI C API as declared by an installed `mpi.h`, read through bindgen.

use proc_macro2::TokenStream;
use quote::ToTokens;

use crate::discover::{Flavour, MpiInstall};
use crate::GenError;

/// One parameter of a C function.
#[derive(Debug, Clone)]
pub struct Param {
    /// Name as declared in `mpi.h` (`type` becomes `type_`).
    pub name: String,
    /// Rust type tokens, as bindgen wrote them.
    pub ty: TokenStream,
    /// The type as compact text with `::std::os::raw::` removed: `c_int`, `*mut MPI_Status`.
    pub ty_text: String,
}

impl Param {
    /// True for `*mut T` or `*const T`.
    pub fn is_pointer(&self) -> bool {
        self.ty_text.starts_with('*')
    }

    /// The pointee of a pointer type, as text.
    pub fn pointee(&self) -> Option<&str> {
        self.ty_text
            .strip_prefix("*mut ")
            .or_else(|| self.ty_text.strip_prefix("*const "))
    }
}

/// One MPI function.
#[derive(Debug, Clone)]
pub struct Function {
    /// The C name without the profiling prefix: `MPI_Send`.
    pub name: String,
    /// Parameters, in order.
    pub params: Vec<Param>,
    /// Return type tokens (`None` for `void`).
    pub ret: Option<TokenStream>,
    /// Return type as text (`c_int`, `f64`, `MPI_Aint`, ...).
    pub ret_text: String,
    /// Declared with `...` (only `MPI_Pcontrol`).
    pub variadic: bool,
}

impl Function {
    /// The parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// True when the function returns an MPI error code.
    pub fn returns_error_code(&self) -> bool {
        self.ret_text == "c_int"
    }
}

/// Everything read from the header.
pub struct Api {
    /// Bindgen's output: types, constants, `PMPI_` declarations.
    pub bindings: String,
    /// Every `PMPI_` function declared, sorted by name (as `MPI_` names).
    pub functions: Vec<Function>,
}

fn compact(ts: &TokenStream) -> String {
    let s = ts
        .to_string()
        .replace(":: std :: os :: raw :: ", "")
        .replace("::std::os::raw::", "");
    s.replace("* mut ", "*mut ")
        .replace("* const ", "*const ")
        .replace(" ,", ",")
        .trim()
        .to_owned()
}

/// Runs bindgen over `mpi.h` and collects the `PMPI_` functions.
pub fn read_api(install: &MpiInstall) -> Result<Api, GenError> {
    let mut b = bindgen::Builder::default()
        .header(install.header.to_string_lossy())
        .allowlist_function("PMPI_.*")
        .allowlist_var("MPI_.*")
        .allowlist_type("MPI_.*")
        .layout_tests(false)
        .generate_comments(false)
        .derive_debug(false)
        .prepend_enum_name(false);
    for d in &install.include_dirs {
        b = b.clang_arg(format!("-I{}", d.display()));
    }
    if install.flavour == Flavour::OpenMpi {
        // Declare the MPI-1 functions removed from MPI-3 that Open MPI 4 still exports.
        b = b.clang_arg("-DOMPI_OMIT_MPI1_COMPAT_DECLS=0");
    }
    let mut bindings = b
        .generate()
        .map_err(|e| GenError::Bindgen(e.to_string()))?
        .to_string();
    if !bindings.contains("pub type MPI_Fint") {
        // Open MPI defines MPI_Fint as a macro; both implementations make it a C int.
        bindings.push_str("\npub type MPI_Fint = ::std::os::raw::c_int;\n");
    }
    let file = syn::parse_file(&bindings)
        .map_err(|e| GenError::Bindgen(format!("cannot parse bindgen output: {e}")))?;
    let mut functions = Vec::new();
    for item in &file.items {
        let syn::Item::ForeignMod(fm) = item else {
            continue;
        };
        for fi in &fm.items {
            let syn::ForeignItem::Fn(f) = fi else {
                continue;
            };
            let name = f.sig.ident.to_string();
            let Some(bare) = name.strip_prefix('P') else {
                continue;
            };
            let mut params = Vec::new();
            for (i, input) in f.sig.inputs.iter().enumerate() {
                let syn::FnArg::Typed(pt) = input else {
                    continue;
                };
                let pname = match &*pt.pat {
                    syn::Pat::Ident(id) => id.ident.to_string(),
                    _ => format!("arg{i}"),
                };
                let ty = pt.ty.to_token_stream();
                params.push(Param {
                    name: pname,
                    ty_text: compact(&ty),
                    ty,
                });
            }
            let (ret, ret_text) = match &f.sig.output {
                syn::ReturnType::Default => (None, "()".to_owned()),
                syn::ReturnType::Type(_, t) => {
                    let ts = t.to_token_stream();
                    let text = compact(&ts);
                    (Some(ts), text)
                }
            };
            functions.push(Function {
                name: bare.to_owned(),
                params,
                ret,
                ret_text,
                variadic: f.sig.variadic.is_some(),
            });
        }
    }
    functions.sort_by(|a, b| a.name.cmp(&b.name));
    functions.dedup_by(|a, b| a.name == b.name);
    Ok(Api {
        bindings,
        functions,
    })
}

//! Opens an optional system library at run time, so that the `mpiscope` binary starts on a
//! machine without it: OpenBLAS (only `calibrate` times kernels) and libotf2 (only
//! `export --format otf2` writes OTF2) are looked up when a command first needs them, not by
//! the dynamic loader at start-up.
//!
//! A [`Wanted`] names the library, the command that needs it, its sonames (versioned first:
//! the ABI the caller was written for, then the unversioned name a development package or a
//! module adds) and what to install. [`Library::open`] tries each soname in turn
//! (`dlopen`, through `libloading`), or only the file or soname its environment variable
//! names when that is set (a site whose OpenBLAS has another name, a test that makes it
//! missing); [`Library::get`] resolves one symbol to a function
//! pointer. Each failure is a [`LoadError`] whose message says which command needs which
//! library and how to get it, so that a login node without OpenBLAS runs every other
//! command and refuses `calibrate` with a sentence, not a loader error at start-up.
//!
//! No MPI, no file output; callers keep the opened library for the life of the process (in
//! a `OnceLock`), since the function pointers they resolved are valid only while it is open.
#![warn(missing_docs)]

/// An optional library a command needs, and how to get it.
#[derive(Debug, Clone, Copy)]
pub struct Wanted {
    /// The library's common name (`OpenBLAS`).
    pub library: &'static str,
    /// The command that needs it (`mpiscope calibrate`).
    pub needed_by: &'static str,
    /// The sonames to try, in order: the versioned one first.
    pub sonames: &'static [&'static str],
    /// What to install, for the error message (`libopenblas0 (Debian, Ubuntu) ...`).
    pub install: &'static str,
    /// The environment variable that, when set and not empty, names the one file or
    /// soname to open instead (`MPISCOPE_OPENBLAS`).
    pub env: &'static str,
}

/// A library that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// No soname could be opened.
    #[error(
        "{needed_by} needs {library} ({sonames}), which cannot be loaded ({reason}): install \
         {install}, or add the directory that holds it to LD_LIBRARY_PATH, or name the file \
         in {env}"
    )]
    Missing {
        /// The command that needs it.
        needed_by: &'static str,
        /// The library's common name.
        library: &'static str,
        /// The sonames tried, comma separated (or the file named by `env`).
        sonames: String,
        /// The environment variable that names the file to open.
        env: &'static str,
        /// The loader's message for the first soname tried.
        reason: String,
        /// What to install.
        install: &'static str,
    },
    /// The library opened but lacks a symbol (another version or another library of the
    /// same name).
    #[error(
        "{needed_by} needs {library}, but {soname} has no symbol `{symbol}` ({reason}): install \
         {install}"
    )]
    Symbol {
        /// The command that needs it.
        needed_by: &'static str,
        /// The library's common name.
        library: &'static str,
        /// The soname that was opened.
        soname: String,
        /// The missing symbol.
        symbol: &'static str,
        /// The loader's message.
        reason: String,
        /// What to install.
        install: &'static str,
    },
}

/// An opened library (closed on drop: keep it as long as any pointer taken from it).
#[derive(Debug)]
pub struct Library {
    lib: libloading::Library,
    wanted: Wanted,
    soname: String,
}

impl Library {
    /// Opens the first of `wanted.sonames` the dynamic loader finds (usual search: the
    /// loader's cache, `LD_LIBRARY_PATH`, the system directories), or only the name in the
    /// environment variable `wanted.env` when it is set and not empty.
    pub fn open(wanted: Wanted) -> Result<Library, LoadError> {
        let chosen = std::env::var(wanted.env).ok().filter(|v| !v.is_empty());
        let names: Vec<&str> = match &chosen {
            Some(v) => vec![v.as_str()],
            None => wanted.sonames.to_vec(),
        };
        let mut first_reason = None;
        for soname in names {
            // SAFETY: opening a shared library runs its initializers; the libraries named by
            // mpiscope's `Wanted`s (OpenBLAS, libotf2) are ordinary C libraries whose
            // initializers have no requirement on the caller.
            match unsafe { libloading::Library::new(soname) } {
                Ok(lib) => {
                    return Ok(Library {
                        lib,
                        wanted,
                        soname: soname.to_owned(),
                    })
                }
                Err(e) => {
                    first_reason.get_or_insert_with(|| e.to_string());
                }
            }
        }
        Err(LoadError::Missing {
            needed_by: wanted.needed_by,
            library: wanted.library,
            sonames: match &chosen {
                Some(v) => format!("{v}, from {}", wanted.env),
                None => wanted.sonames.join(", "),
            },
            env: wanted.env,
            reason: first_reason.unwrap_or_else(|| "no soname to try".to_owned()),
            install: wanted.install,
        })
    }

    /// The soname (or file) that was opened.
    pub fn soname(&self) -> &str {
        &self.soname
    }

    /// The address of `symbol` as a `T`, a function pointer type.
    ///
    /// # Safety
    /// `T` must be the symbol's true type (an `unsafe extern "C" fn` with the C
    /// declaration's arguments and result), and the pointer must not be called after this
    /// `Library` is dropped.
    pub unsafe fn get<T: Copy>(&self, symbol: &'static str) -> Result<T, LoadError> {
        let name = format!("{symbol}\0");
        // SAFETY: the caller vouches for `T`; the copy outlives the `Symbol` borrow, which the
        // caller's keeping of `self` makes sound.
        match unsafe { self.lib.get::<T>(name.as_bytes()) } {
            Ok(s) => Ok(*s),
            Err(e) => Err(LoadError::Symbol {
                needed_by: self.wanted.needed_by,
                library: self.wanted.library,
                soname: self.soname.clone(),
                symbol,
                reason: e.to_string(),
                install: self.wanted.install,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWHERE: Wanted = Wanted {
        library: "NoSuchLib",
        needed_by: "mpiscope frobnicate",
        sonames: &[
            "libmpiscope-no-such-library.so.7",
            "libmpiscope-no-such-library.so",
        ],
        install: "libnosuchlib7 (Debian)",
        env: "MPISCOPE_TEST_NO_SUCH_LIBRARY",
    };

    /// A library that is nowhere: the message names the command, the library, every
    /// soname tried, the loader's reason and the package.
    #[test]
    fn a_missing_library_names_itself_and_its_package() {
        let e = Library::open(NOWHERE).unwrap_err();
        let msg = e.to_string();
        for part in [
            "mpiscope frobnicate needs NoSuchLib",
            "libmpiscope-no-such-library.so.7, libmpiscope-no-such-library.so",
            "install libnosuchlib7 (Debian)",
            "LD_LIBRARY_PATH",
            "MPISCOPE_TEST_NO_SUCH_LIBRARY",
        ] {
            assert!(msg.contains(part), "`{part}` not in: {msg}");
        }
        match e {
            LoadError::Missing { reason, .. } => {
                assert!(
                    reason.contains("libmpiscope-no-such-library.so.7"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    /// The first soname that opens is used (here the second: the first is missing), its
    /// symbols resolve to callable functions, and a missing symbol names itself.
    #[test]
    fn later_sonames_are_tried_and_symbols_resolve() {
        let libc = Wanted {
            library: "the C library",
            needed_by: "this test",
            sonames: &["libmpiscope-no-such-library.so.7", "libc.so.6"],
            install: "libc6",
            env: "MPISCOPE_TEST_LIBC",
        };
        let lib = Library::open(libc).unwrap();
        assert_eq!(lib.soname(), "libc.so.6");
        type Strlen = unsafe extern "C" fn(*const std::ffi::c_char) -> usize;
        // SAFETY: strlen's C type; called while `lib` is open, on a NUL-terminated string.
        let n = unsafe {
            let strlen: Strlen = lib.get("strlen").unwrap();
            strlen(c"mpiscope".as_ptr())
        };
        assert_eq!(n, 8);
        // SAFETY: never called.
        let e = unsafe { lib.get::<Strlen>("mpiscope_no_such_symbol") }.unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("libc.so.6 has no symbol `mpiscope_no_such_symbol`")
                && msg.contains("install libc6"),
            "{msg}"
        );
    }

    /// The environment variable replaces the sonames: the file it names is the only one
    /// tried, and the error says where the name came from.
    #[test]
    fn the_environment_names_the_one_file_to_open() {
        let libc = Wanted {
            library: "the C library",
            needed_by: "this test",
            sonames: &["libc.so.6"],
            install: "libc6",
            env: "MPISCOPE_TEST_DYNLIB_FILE",
        };
        // Only this test reads this variable.
        std::env::set_var(libc.env, "/nonexistent/libc.so.6");
        let msg = Library::open(libc).unwrap_err().to_string();
        assert!(
            msg.contains("(/nonexistent/libc.so.6, from MPISCOPE_TEST_DYNLIB_FILE)"),
            "{msg}"
        );
        std::env::set_var(libc.env, "libm.so.6");
        assert_eq!(Library::open(libc).unwrap().soname(), "libm.so.6");
        std::env::set_var(libc.env, "");
        assert_eq!(Library::open(libc).unwrap().soname(), "libc.so.6");
        std::env::remove_var(libc.env);
    }
}

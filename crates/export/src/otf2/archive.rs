//! libotf2's archive and writer handles, wrapped so that the export's steps are safe code:
//! [`Archive`] (opened for writing, closed on drop), [`EvtWriter`] (a location's event
//! writer) and [`GlobalDefs`] (the global definition writer), and the check that turns an
//! OTF2 error code into an [`ExportError`] naming the output.

use std::ffi::CString;
use std::path::Path;

use super::ffi;
use crate::ExportError;

/// An open archive; closed (and freed) on drop.
pub(super) struct Archive {
    pub(super) lib: &'static ffi::Otf2,
    pub(super) ptr: *mut ffi::OTF2_Archive,
    out: std::path::PathBuf,
}

impl Archive {
    /// Opens the archive `traces` in `dir` for writing, with mpiscope as its creator and
    /// its event files open; errors name `out`.
    pub(super) fn open(
        lib: &'static ffi::Otf2,
        dir: &Path,
        out: &Path,
    ) -> Result<Archive, ExportError> {
        let path = cstring(&dir.display().to_string());
        let name = cstring("traces");
        // SAFETY: valid C strings; the returned archive is owned by `Archive`.
        let ptr = unsafe {
            (lib.OTF2_Archive_Open)(
                path.as_ptr(),
                name.as_ptr(),
                ffi::FILEMODE_WRITE,
                1 << 20,
                4 << 20,
                ffi::SUBSTRATE_POSIX,
                ffi::COMPRESSION_NONE,
            )
        };
        if ptr.is_null() {
            return Err(write_error(out, "OTF2_Archive_Open failed"));
        }
        let a = Archive {
            lib,
            ptr,
            out: out.to_path_buf(),
        };
        // The name first: `outputs` recognises mpiscope's archives by it.
        let creator = cstring(&format!(
            "{} {}",
            crate::outputs::CREATOR,
            env!("CARGO_PKG_VERSION")
        ));
        // SAFETY: the callbacks are static; the archive is open for writing; OTF2 copies the
        // creator string.
        unsafe {
            a.check(
                (lib.OTF2_Archive_SetCreator)(a.ptr, creator.as_ptr()),
                "creator",
            )?;
            a.check(
                (lib.OTF2_Archive_SetFlushCallbacks)(
                    a.ptr,
                    &ffi::FLUSH_CALLBACKS,
                    std::ptr::null_mut(),
                ),
                "flush callbacks",
            )?;
            a.check(
                (lib.OTF2_Archive_SetSerialCollectiveCallbacks)(a.ptr),
                "collective callbacks",
            )?;
            a.check(
                (lib.OTF2_Archive_OpenEvtFiles)(a.ptr),
                "opening event files",
            )?;
        }
        Ok(a)
    }

    /// The event writer of location `loc` (the event files must be open).
    pub(super) fn evt_writer(&self, loc: u64) -> Result<EvtWriter, ExportError> {
        let lib = self.lib;
        // SAFETY: the archive is open; the writer is closed by `close_evt_writer`.
        let w = unsafe { (lib.OTF2_Archive_GetEvtWriter)(self.ptr, loc) };
        if w.is_null() {
            return Err(write_error(&self.out, "OTF2_Archive_GetEvtWriter failed"));
        }
        Ok(EvtWriter(w))
    }

    /// Closes an event writer of this archive.
    pub(super) fn close_evt_writer(&self, w: EvtWriter) -> Result<(), ExportError> {
        let lib = self.lib;
        // SAFETY: `w` is a live writer of this archive, consumed here: closed once.
        unsafe {
            self.check(
                (lib.OTF2_Archive_CloseEvtWriter)(self.ptr, w.0),
                "closing a writer",
            )
        }
    }

    /// The global definition writer (after the local definitions are closed).
    pub(super) fn global_defs(&self) -> Result<GlobalDefs<'_>, ExportError> {
        let lib = self.lib;
        // SAFETY: the global writer belongs to the archive, which outlives its use.
        let g = unsafe { (lib.OTF2_Archive_GetGlobalDefWriter)(self.ptr) };
        if g.is_null() {
            return Err(write_error(
                &self.out,
                "OTF2_Archive_GetGlobalDefWriter failed",
            ));
        }
        Ok(GlobalDefs { a: self, g })
    }

    pub(super) fn check(&self, code: ffi::OTF2_ErrorCode, what: &str) -> Result<(), ExportError> {
        if code == 0 {
            return Ok(());
        }
        let lib = self.lib;
        // SAFETY: OTF2_Error_GetName returns a static string for any code.
        let name = unsafe { std::ffi::CStr::from_ptr((lib.OTF2_Error_GetName)(code)) };
        Err(ExportError::Write {
            path: self.out.clone(),
            source: std::io::Error::other(format!("{what}: {}", name.to_string_lossy())),
        })
    }
}

/// A live event writer of an [`Archive`] (non-null, not yet closed).
pub(super) struct EvtWriter(pub(super) *mut ffi::OTF2_EvtWriter);

impl Drop for Archive {
    fn drop(&mut self) {
        let lib = self.lib;
        // SAFETY: `ptr` came from OTF2_Archive_Open and is closed exactly once.
        unsafe {
            (lib.OTF2_Archive_Close)(self.ptr);
        }
    }
}

pub(super) fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// A failure of libotf2 that returns no error code, as an error naming `out`.
pub(super) fn write_error(out: &Path, what: &str) -> ExportError {
    ExportError::Write {
        path: out.to_path_buf(),
        source: std::io::Error::other(what.to_owned()),
    }
}

/// The global definition writer of an archive (non-null; the archive outlives it). Every
/// string id its methods write refers to a string [`GlobalDefs::clock_and_strings`]
/// wrote first.
pub(super) struct GlobalDefs<'a> {
    pub(super) a: &'a Archive,
    pub(super) g: *mut ffi::OTF2_GlobalDefWriter,
}

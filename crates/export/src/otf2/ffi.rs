//! The part of libotf2's C interface (OTF2 3.0, Debian's `libopen-trace-format2-10`) the
//! exporter calls: archive, event and definition writers, and the flush callbacks OTF2
//! requires. Constants are OTF2's enum values (`otf2/OTF2_GeneralDefinitions.h`,
//! `OTF2_Definitions.h`); error codes are C enums, so `i32`.
//!
//! Nothing links libotf2: [`otf2`] opens it at run time, on the first OTF2 export, and
//! resolves every function below into [`Otf2`], a table of function pointers named as the C
//! functions. So the `mpiscope` binary starts without libotf2, and only `export --format
//! otf2` asks for it, with an error that says what to install when it is missing.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

use mpiscope_dynlib::{Library, LoadError, Wanted};

/// An archive (opaque).
pub type OTF2_Archive = c_void;
/// A location's event writer (opaque).
pub type OTF2_EvtWriter = c_void;
/// A location's local definition writer (opaque).
pub type OTF2_DefWriter = c_void;
/// The archive's global definition writer (opaque).
pub type OTF2_GlobalDefWriter = c_void;
/// An enum in C: an int.
pub type OTF2_ErrorCode = i32;

/// What OTF2 calls around the flush of a buffer.
#[repr(C)]
pub struct OTF2_FlushCallbacks {
    pub pre: extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8,
    pub post: extern "C" fn(*mut c_void, u8, u64) -> u64,
}

pub const FILEMODE_WRITE: u8 = 0;
pub const SUBSTRATE_POSIX: u8 = 1;
pub const COMPRESSION_NONE: u8 = 1;
pub const FLUSH: u8 = 1;
pub const PARADIGM_MPI: u8 = 4;
pub const ROLE_FUNCTION: u8 = 1;
pub const ROLE_BARRIER: u8 = 15;
pub const ROLE_COLL_ONE2ALL: u8 = 23;
pub const ROLE_COLL_ALL2ONE: u8 = 24;
pub const ROLE_COLL_ALL2ALL: u8 = 25;
pub const ROLE_COLL_OTHER: u8 = 26;
pub const ROLE_POINT2POINT: u8 = 28;
pub const LOCATION_GROUP_PROCESS: u8 = 1;
pub const LOCATION_CPU_THREAD: u8 = 1;
pub const GROUP_COMM_LOCATIONS: u8 = 4;
pub const GROUP_COMM_GROUP: u8 = 5;
pub const UNDEFINED_U32: u32 = u32::MAX;
/// `OTF2_COLLECTIVE_ROOT_SELF`: `MPI_ROOT` in an intercommunicator's collective.
pub const COLLECTIVE_ROOT_SELF: u32 = u32::MAX - 1;
/// `OTF2_COLLECTIVE_ROOT_THIS_GROUP`: `MPI_PROC_NULL` in the root's group.
pub const COLLECTIVE_ROOT_THIS_GROUP: u32 = u32::MAX - 2;
pub const UNDEFINED_U64: u64 = u64::MAX;

/// Declares the table [`Otf2`] of the C functions listed (each a field of its C name and
/// type) and its resolution from an opened library.
macro_rules! functions {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        /// libotf2's functions, resolved from the opened library, which the table keeps open
        /// (for the life of the process: the one table lives in a `static`).
        #[derive(Debug)]
        pub struct Otf2 {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg: $ty),*) -> $ret,
            )*
            _lib: Library,
        }

        impl Otf2 {
            /// Resolves every function of `lib` (any missing one is an error).
            fn resolve(lib: Library) -> Result<Otf2, LoadError> {
                // SAFETY: each field's type is the function's declaration in OTF2 3.0's
                // headers; the pointers are kept beside `lib`, so never called after it
                // closes.
                unsafe {
                    Ok(Otf2 {
                        $($name: lib.get(stringify!($name))?,)*
                        _lib: lib,
                    })
                }
            }
        }
    };
}

functions! {
    fn OTF2_Archive_Open(
        path: *const c_char,
        name: *const c_char,
        mode: u8,
        chunk_events: u64,
        chunk_defs: u64,
        substrate: u8,
        compression: u8,
    ) -> *mut OTF2_Archive;
    fn OTF2_Archive_SetFlushCallbacks(
        a: *mut OTF2_Archive,
        cb: *const OTF2_FlushCallbacks,
        data: *mut c_void,
    ) -> OTF2_ErrorCode;
    fn OTF2_Archive_SetSerialCollectiveCallbacks(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    fn OTF2_Archive_SetCreator(a: *mut OTF2_Archive, creator: *const c_char) -> OTF2_ErrorCode;
    fn OTF2_Archive_OpenEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    fn OTF2_Archive_GetEvtWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_EvtWriter;
    fn OTF2_Archive_CloseEvtWriter(
        a: *mut OTF2_Archive,
        w: *mut OTF2_EvtWriter,
    ) -> OTF2_ErrorCode;
    fn OTF2_Archive_CloseEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    fn OTF2_Archive_OpenDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    fn OTF2_Archive_GetDefWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_DefWriter;
    fn OTF2_Archive_CloseDefWriter(
        a: *mut OTF2_Archive,
        w: *mut OTF2_DefWriter,
    ) -> OTF2_ErrorCode;
    fn OTF2_Archive_CloseDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    fn OTF2_Archive_GetGlobalDefWriter(a: *mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;
    fn OTF2_Archive_Close(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_Enter(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        region: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_Leave(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        region: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiSend(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        receiver: u32,
        comm: u32,
        tag: u32,
        length: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiRecv(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        sender: u32,
        comm: u32,
        tag: u32,
        length: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiIsend(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        receiver: u32,
        comm: u32,
        tag: u32,
        length: u64,
        request: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiIsendComplete(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        request: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiIrecvRequest(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        request: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiIrecv(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        sender: u32,
        comm: u32,
        tag: u32,
        length: u64,
        request: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiCollectiveBegin(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_MpiCollectiveEnd(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_NonBlockingCollectiveRequest(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        request: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_EvtWriter_NonBlockingCollectiveComplete(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
        request: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteClockProperties(
        w: *mut OTF2_GlobalDefWriter,
        resolution: u64,
        offset: u64,
        length: u64,
        realtime: u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteString(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        s: *const c_char,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteRegion(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        canonical: u32,
        description: u32,
        role: u8,
        paradigm: u8,
        flags: u32,
        file: u32,
        begin: u32,
        end: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        class: u32,
        parent: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteLocationGroup(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        kind: u8,
        parent: u32,
        creator: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteLocation(
        w: *mut OTF2_GlobalDefWriter,
        id: u64,
        name: u32,
        kind: u8,
        events: u64,
        group: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteGroup(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        kind: u8,
        paradigm: u8,
        flags: u32,
        members: u32,
        list: *const u64,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteComm(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        group: u32,
        parent: u32,
        flags: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_GlobalDefWriter_WriteInterComm(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        group_a: u32,
        group_b: u32,
        common: u32,
        flags: u32,
    ) -> OTF2_ErrorCode;
    fn OTF2_Error_GetName(code: OTF2_ErrorCode) -> *const c_char;
}

/// Before a buffer flush: always flush.
extern "C" fn pre_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    FLUSH
}

/// After a flush: no timestamp to record.
extern "C" fn post_flush(_: *mut c_void, _: u8, _: u64) -> u64 {
    0
}

/// The flush callbacks every archive is given.
pub static FLUSH_CALLBACKS: OTF2_FlushCallbacks = OTF2_FlushCallbacks {
    pre: pre_flush,
    post: post_flush,
};

/// libotf2 as Debian 12 ships it (OTF2 3.0, ABI 10), as an upstream or module build names
/// it, then the unversioned development links.
pub const OTF2: Wanted = Wanted {
    library: "libotf2 (OTF2 3)",
    needed_by: "mpiscope export --format otf2",
    sonames: &[
        "libopen-trace-format2.so.10",
        "libotf2.so.10",
        "libopen-trace-format2.so",
        "libotf2.so",
    ],
    install: "libopen-trace-format2-10 (Debian 12; Ubuntu) or load an OTF2 3 module (Score-P's \
              otf2)",
    env: "MPISCOPE_LIBOTF2",
};

/// libotf2, opened on the first call (later calls return the same table, or the same
/// error).
pub fn otf2() -> Result<&'static Otf2, LoadError> {
    static OTF2_LIB: OnceLock<Result<Otf2, LoadError>> = OnceLock::new();
    OTF2_LIB
        .get_or_init(|| Library::open(OTF2).and_then(Otf2::resolve))
        .as_ref()
        .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where libotf2 is missing, the error names the command, the library and the package.
    #[test]
    fn a_missing_libotf2_says_what_to_install() {
        let nowhere = Wanted {
            sonames: &["libotf2-mpiscope-absent.so.10"],
            ..OTF2
        };
        let msg = Library::open(nowhere).unwrap_err().to_string();
        for part in [
            "mpiscope export --format otf2 needs libotf2",
            "(libotf2-mpiscope-absent.so.10)",
            "install libopen-trace-format2-10 (Debian 12",
        ] {
            assert!(msg.contains(part), "`{part}` not in: {msg}");
        }
    }

    /// Debian's versioned soname opens here and every function resolves.
    #[test]
    fn libotf2_opens_by_its_versioned_soname() {
        let lib = otf2().unwrap();
        assert_eq!(lib._lib.soname(), "libopen-trace-format2.so.10");
    }
}

//! The part of libotf2's C interface (OTF2 3.0, Debian's `libotf2-trace-dev`) the exporter
//! calls: archive, event and definition writers, and the flush callbacks OTF2 requires.
//! Constants are OTF2's enum values (`otf2/OTF2_GeneralDefinitions.h`,
//! `OTF2_Definitions.h`); error codes are C enums, so `i32`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

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
pub const ROLE_COLL_ALL2ALL: u8 = 25;
pub const ROLE_POINT2POINT: u8 = 28;
pub const LOCATION_GROUP_PROCESS: u8 = 1;
pub const LOCATION_CPU_THREAD: u8 = 1;
pub const GROUP_COMM_LOCATIONS: u8 = 4;
pub const GROUP_COMM_GROUP: u8 = 5;
pub const UNDEFINED_U32: u32 = u32::MAX;
pub const UNDEFINED_U64: u64 = u64::MAX;

#[link(name = "otf2")]
extern "C" {
    pub fn OTF2_Archive_Open(
        path: *const c_char,
        name: *const c_char,
        mode: u8,
        chunk_events: u64,
        chunk_defs: u64,
        substrate: u8,
        compression: u8,
    ) -> *mut OTF2_Archive;
    pub fn OTF2_Archive_SetFlushCallbacks(
        a: *mut OTF2_Archive,
        cb: *const OTF2_FlushCallbacks,
        data: *mut c_void,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetSerialCollectiveCallbacks(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetCreator(a: *mut OTF2_Archive, creator: *const c_char) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_OpenEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetEvtWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_EvtWriter;
    pub fn OTF2_Archive_CloseEvtWriter(
        a: *mut OTF2_Archive,
        w: *mut OTF2_EvtWriter,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_CloseEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_OpenDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetDefWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_DefWriter;
    pub fn OTF2_Archive_CloseDefWriter(
        a: *mut OTF2_Archive,
        w: *mut OTF2_DefWriter,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_CloseDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetGlobalDefWriter(a: *mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;
    pub fn OTF2_Archive_Close(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_Enter(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        region: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_Leave(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        region: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiSend(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        receiver: u32,
        comm: u32,
        tag: u32,
        length: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiRecv(
        w: *mut OTF2_EvtWriter,
        attrs: *mut c_void,
        t: u64,
        sender: u32,
        comm: u32,
        tag: u32,
        length: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteClockProperties(
        w: *mut OTF2_GlobalDefWriter,
        resolution: u64,
        offset: u64,
        length: u64,
        realtime: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteString(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        s: *const c_char,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteRegion(
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
    pub fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        class: u32,
        parent: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocationGroup(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        kind: u8,
        parent: u32,
        creator: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocation(
        w: *mut OTF2_GlobalDefWriter,
        id: u64,
        name: u32,
        kind: u8,
        events: u64,
        group: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteGroup(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        kind: u8,
        paradigm: u8,
        flags: u32,
        members: u32,
        list: *const u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteComm(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        group: u32,
        parent: u32,
        flags: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Error_GetName(code: OTF2_ErrorCode) -> *const c_char;
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

//! Callsites: return addresses interned to small ids, defined with the object file they
//! belong to so that they can be resolved to symbol and line off-line.

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use mpiscope_trace::{CallsiteDef, Definition, Frame, ModuleDef};

/// Frames recorded per callsite (1: the return address only).
pub static DEPTH: AtomicU32 = AtomicU32::new(1);

struct Table {
    by_key: HashMap<u64, u32>,
    modules: HashMap<usize, u32>,
    next: u32,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

fn module_of(t: &mut Table, addr: usize, defs: &mut Vec<Definition>) -> (u32, u64) {
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads the link map.
    if unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } == 0
        || info.dli_fbase.is_null()
    {
        return (0, addr as u64);
    }
    let base = info.dli_fbase as usize;
    let next = t.modules.len() as u32 + 1;
    let id = *t.modules.entry(base).or_insert_with(|| {
        let name = if info.dli_fname.is_null() {
            String::new()
        } else {
            // SAFETY: dladdr returns a NUL-terminated path.
            unsafe { CStr::from_ptr(info.dli_fname) }
                .to_string_lossy()
                .into_owned()
        };
        let path = if name.is_empty() || !name.starts_with('/') {
            // The main program: its name in the link map is empty or relative.
            std::fs::read_link("/proc/self/exe")
                .map(|p| p.display().to_string())
                .unwrap_or(name)
        } else {
            name
        };
        defs.push(Definition::Module(ModuleDef {
            id: next,
            base: base as u64,
            path,
        }));
        next
    });
    (id, (addr - base) as u64)
}

fn intern_frames(frames: &[usize]) -> u32 {
    let mut key = 0xcbf29ce484222325u64;
    for &f in frames {
        key = (key ^ f as u64).wrapping_mul(0x100000001b3);
    }
    let mut defs = Vec::new();
    // The definition is written under the table lock: no thread can use the id before it is
    // in the file.
    let mut guard = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    let id = {
        let t = guard.get_or_insert_with(|| Table {
            by_key: HashMap::new(),
            modules: HashMap::new(),
            next: 1,
        });
        if let Some(&id) = t.by_key.get(&key) {
            return id;
        }
        let id = t.next;
        t.next += 1;
        t.by_key.insert(key, id);
        let mut out = Vec::with_capacity(frames.len());
        for &f in frames {
            let (module, offset) = module_of(t, f, &mut defs);
            out.push(Frame { module, offset });
        }
        defs.push(Definition::Callsite(CallsiteDef { id, frames: out }));
        id
    };
    crate::defs::define(&defs);
    drop(guard);
    id
}

extern "C" {
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
}

/// The callsite id of return address `ra` (and, with a deeper setting, of the stack above it).
pub fn intern(ra: usize) -> u32 {
    let depth = DEPTH.load(Ordering::Relaxed) as usize;
    if depth <= 1 {
        return intern_frames(&[ra]);
    }
    let mut buf = [core::ptr::null_mut::<libc::c_void>(); 72];
    // SAFETY: buffer of 72 entries.
    let n =
        unsafe { backtrace(buf.as_mut_ptr(), (depth + 8).min(72) as libc::c_int) }.max(0) as usize;
    // Skip the recorder's own frames: everything up to the return address of the wrapper.
    let start = buf[..n].iter().position(|&p| p as usize == ra).unwrap_or(0);
    let frames: Vec<usize> = buf[start..n]
        .iter()
        .take(depth)
        .map(|&p| p as usize)
        .collect();
    if frames.is_empty() {
        return intern_frames(&[ra]);
    }
    intern_frames(&frames)
}

/// Loads the unwinder so the first deep callsite does not pay for it.
pub fn warm_up() {
    if DEPTH.load(Ordering::Relaxed) > 1 {
        let mut buf = [core::ptr::null_mut::<libc::c_void>(); 4];
        // SAFETY: buffer of 4 entries.
        unsafe { backtrace(buf.as_mut_ptr(), 4) };
    }
}

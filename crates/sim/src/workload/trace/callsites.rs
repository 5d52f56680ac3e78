//! Callsites of all ranks under one numbering.
//!
//! Ranks number their callsites in their own order, so the same source line has different
//! ids in different rank files. A callsite is a call stack and the MPI function called there
//! (and the message size, with [`super::TraceOptions::callsites_by_size`]); the table gives
//! each distinct one a global id, shared by the ranks of a replay. Id 0 is unknown; global
//! id `g` is the `g`-th callsite interned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The callsites of a replay's ranks, by global id (a handle shared by the ranks).
#[derive(Debug, Default, Clone)]
pub struct Callsites {
    inner: Arc<Mutex<CallsiteTable>>,
}

/// What makes a callsite.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct CallsiteKey {
    /// Frames as (module path, offset), innermost first.
    pub(super) frames: Vec<(String, u64)>,
    /// The MPI function called.
    pub(super) function: String,
    /// The message size, when callsites are split by size.
    pub(super) bytes: Option<u64>,
}

#[derive(Debug, Default)]
struct CallsiteTable {
    by_key: HashMap<CallsiteKey, u32>,
    sites: Vec<CallsiteKey>,
}

impl Callsites {
    fn site<T>(&self, id: u32, f: impl FnOnce(&CallsiteKey) -> Option<T>) -> Option<T> {
        let t = self.inner.lock().ok()?;
        f(t.sites.get((id as usize).checked_sub(1)?)?)
    }

    /// The innermost frame of global callsite `id`: (object file, file-relative address).
    pub fn innermost(&self, id: u32) -> Option<(String, u64)> {
        self.site(id, |k| k.frames.first().cloned())
    }

    /// The MPI function called at callsite `id`.
    pub fn function(&self, id: u32) -> Option<String> {
        self.site(id, |k| Some(k.function.clone()))
    }

    /// The message size of callsite `id`, when callsites are split by size.
    pub fn bytes(&self, id: u32) -> Option<u64> {
        self.site(id, |k| k.bytes)
    }

    /// The global id of `key`, given a new one if it is new (0 if the table is poisoned).
    pub(super) fn intern(&self, key: CallsiteKey) -> u32 {
        let Ok(mut t) = self.inner.lock() else {
            return 0;
        };
        if let Some(&g) = t.by_key.get(&key) {
            return g;
        }
        t.sites.push(key.clone());
        let g = t.sites.len() as u32;
        t.by_key.insert(key, g);
        g
    }
}

//! Values by a small integer id from the trace (call, callsite, communicator, rank), as the
//! per-rank passes keep them: a vector for small ids, a hash map above.

use std::collections::HashMap;

/// Values by a small integer id from the trace (call, callsite, communicator, rank): a
/// vector for ids below 2^16, a hash map above, so a corrupt id cannot allocate gigabytes.
pub(crate) struct ById<T> {
    dense: Vec<Option<T>>,
    sparse: HashMap<u32, T>,
}

impl<T> Default for ById<T> {
    fn default() -> Self {
        ById {
            dense: Vec::new(),
            sparse: HashMap::new(),
        }
    }
}

impl<T> ById<T> {
    const DENSE: u32 = 1 << 16;

    #[inline]
    pub(crate) fn get(&self, id: u32) -> Option<&T> {
        if id < Self::DENSE {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(&id)
        }
    }

    #[inline]
    pub(crate) fn get_or_insert_with(&mut self, id: u32, make: impl FnOnce() -> T) -> &mut T {
        if id >= Self::DENSE {
            return self.sparse.entry(id).or_insert_with(make);
        }
        let i = id as usize;
        if self.dense.len() <= i {
            self.dense.resize_with(i + 1, || None);
        }
        self.dense[i].get_or_insert_with(make)
    }

    pub(crate) fn into_iter(self) -> impl Iterator<Item = (u32, T)> {
        self.dense
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i as u32, v)))
            .chain(self.sparse)
    }
}

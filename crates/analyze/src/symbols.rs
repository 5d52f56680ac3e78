//! Callsites resolved off-line: a callsite frame is (module, offset); the module's file is
//! opened once and its debug information (when present) gives function, file and line.

use std::collections::HashMap;

use mpiscope_trace::Tables;

/// One resolved frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Function name (demangled when possible).
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.function.as_deref().unwrap_or("??"))?;
        if let Some(file) = &self.file {
            let short = file.rsplit('/').next().unwrap_or(file);
            write!(f, " {short}")?;
            if let Some(l) = self.line {
                write!(f, ":{l}")?;
            }
        }
        Ok(())
    }
}

/// The frames of rank-local callsite `id` as (module path, offset), innermost first: the
/// identity of a callsite across ranks (each rank numbers its callsites its own way). An
/// unknown id becomes one frame with an empty path.
pub fn callsite_frames(tables: &Tables, id: u32) -> Vec<(String, u64)> {
    match tables.callsites.get(&id) {
        Some(c) => c
            .frames
            .iter()
            .map(|f| {
                let m = tables.modules.get(&f.module).map(|m| m.path.clone());
                (m.unwrap_or_default(), f.offset)
            })
            .collect(),
        None => vec![(String::new(), u64::from(id))],
    }
}

struct Module {
    loader: addr2line::Loader,
    /// Lowest virtual address of a loadable segment: added to a load offset.
    vaddr_base: u64,
}

/// Resolves callsites, caching opened modules.
#[derive(Default)]
pub struct Symbolizer {
    modules: HashMap<String, Option<Module>>,
}

fn lowest_load_vaddr(path: &str) -> Option<u64> {
    use object::{Object, ObjectSegment};
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.segments().map(|s| s.address()).min()
}

impl Symbolizer {
    /// An empty symbolizer.
    pub fn new() -> Self {
        Symbolizer::default()
    }

    /// Resolves an offset within the object file at `path` (a return address: the location
    /// of the call instruction just before it is reported).
    pub fn resolve(&mut self, path: &str, offset: u64) -> Option<Location> {
        let m = self
            .modules
            .entry(path.to_owned())
            .or_insert_with(|| {
                // A module path comes from the trace: open only regular files (a named pipe
                // would block forever, a device never end).
                if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                    return None;
                }
                let loader = addr2line::Loader::new(path).ok()?;
                Some(Module {
                    loader,
                    vaddr_base: lowest_load_vaddr(path).unwrap_or(0) & !0xfff,
                })
            })
            .as_ref()?;
        let probe = m.vaddr_base + offset.saturating_sub(1);
        let loc = m.loader.find_location(probe).ok().flatten();
        let function = m
            .loader
            .find_symbol(probe)
            .map(|s| addr2line::demangle_auto(std::borrow::Cow::Borrowed(s), None).into_owned());
        Some(Location {
            function,
            file: loc.as_ref().and_then(|l| l.file.map(str::to_owned)),
            line: loc.as_ref().and_then(|l| l.line),
        })
    }

    /// A short description of callsite `id` (its innermost frame).
    pub fn describe(&mut self, tables: &Tables, id: u32) -> Option<String> {
        let cs = tables.callsites.get(&id)?;
        let f = cs.frames.first()?;
        let path = tables.modules.get(&f.module)?.path.clone();
        self.resolve(&path, f.offset).map(|l| l.to_string())
    }
}

//! Definitions: the small tables that events refer to by id.
//!
//! Calls, callsites (with the modules their addresses live in), communicators and reduction
//! operations are defined once per rank, in definition blocks written before any event block
//! that uses them. Readers accumulate them as they stream.

use crate::varint::{self, zigzag};

/// Language binding a call was made through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// The C binding (`MPI_Send`).
    C,
    /// A Fortran binding (`mpi_send_`, `MPI_SEND`, ...).
    Fortran,
}

/// A traced function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDef {
    /// Id used by events.
    pub id: u32,
    /// The C name of the function (`MPI_Send`), whatever binding was called.
    pub name: String,
    /// Which binding was called.
    pub lang: Lang,
}

/// A loaded object file (executable or shared library) that callsite addresses point into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleDef {
    /// Id used by callsite frames.
    pub id: u32,
    /// Load address (the bias to subtract to get a file-relative address).
    pub base: u64,
    /// Path of the object file.
    pub path: String,
}

/// One frame of a callsite: an offset within a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Module id (0: unknown module, `offset` is then the absolute address).
    pub module: u32,
    /// Address minus the module's load address: a return address, so it points just past
    /// the call instruction.
    pub offset: u64,
}

/// A callsite: the innermost frame first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallsiteDef {
    /// Id used by events (never 0).
    pub id: u32,
    /// Return addresses, innermost (the caller of the MPI function) first.
    pub frames: Vec<Frame>,
}

/// What kind of communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommKind {
    /// All processes (`ranks` is empty: rank i is world rank i).
    World,
    /// This process alone.
    Own,
    /// An intracommunicator.
    Intra,
    /// An intercommunicator (`remote` holds the remote group).
    Inter,
}

/// A communicator, as the ranks it contains.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommDef {
    /// Id used by events on this rank.
    pub id: u32,
    /// Identity shared by every member: a hash of the member list and the order in which
    /// communicators with that member list were created. Ranks agree on it without
    /// communicating.
    pub key: u64,
    /// Kind.
    pub kind: CommKind,
    /// Number of ranks (of the local group for intercommunicators).
    pub size: u32,
    /// World rank of each communicator rank (empty for `World`).
    pub ranks: Vec<u32>,
    /// World ranks of the remote group (intercommunicators).
    pub remote: Vec<u32>,
}

impl CommDef {
    /// World rank of communicator rank `r` (local group).
    pub fn world_rank(&self, r: u32) -> Option<u32> {
        match self.kind {
            CommKind::World => (r < self.size).then_some(r),
            _ => self.ranks.get(r as usize).copied(),
        }
    }
}

/// A reduction operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpDef {
    /// Id used by events.
    pub id: u32,
    /// Name (`MPI_SUM`, or `user#3` for user-defined operations).
    pub name: String,
}

/// Any definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Definition {
    /// A traced function.
    Call(CallDef),
    /// A loaded object file.
    Module(ModuleDef),
    /// A callsite.
    Callsite(CallsiteDef),
    /// A communicator.
    Comm(CommDef),
    /// A reduction operation.
    Op(OpDef),
}

pub(crate) const D_CALL: u8 = 0x81;
pub(crate) const D_MODULE: u8 = 0x82;
pub(crate) const D_CALLSITE: u8 = 0x83;
pub(crate) const D_COMM: u8 = 0x84;
pub(crate) const D_OP: u8 = 0x85;

fn put_u(out: &mut Vec<u8>, v: u64) {
    let mut b = [0u8; varint::MAX_VARINT_LEN];
    let n = varint::put(&mut b, 0, v);
    out.extend_from_slice(&b[..n]);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_ranks(out: &mut Vec<u8>, ranks: &[u32]) {
    put_u(out, ranks.len() as u64);
    let mut prev = 0i64;
    for &r in ranks {
        put_u(out, zigzag(i64::from(r) - prev));
        prev = i64::from(r);
    }
}

impl Definition {
    /// Appends the encoded definition to a definition-block payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Definition::Call(d) => {
                out.push(D_CALL);
                put_u(out, u64::from(d.id));
                out.push(match d.lang {
                    Lang::C => 0,
                    Lang::Fortran => 1,
                });
                put_str(out, &d.name);
            }
            Definition::Module(d) => {
                out.push(D_MODULE);
                put_u(out, u64::from(d.id));
                put_u(out, d.base);
                put_str(out, &d.path);
            }
            Definition::Callsite(d) => {
                out.push(D_CALLSITE);
                put_u(out, u64::from(d.id));
                put_u(out, d.frames.len() as u64);
                for f in &d.frames {
                    put_u(out, u64::from(f.module));
                    put_u(out, f.offset);
                }
            }
            Definition::Comm(d) => {
                out.push(D_COMM);
                put_u(out, u64::from(d.id));
                put_u(out, d.key);
                out.push(match d.kind {
                    CommKind::World => 0,
                    CommKind::Own => 1,
                    CommKind::Intra => 2,
                    CommKind::Inter => 3,
                });
                put_u(out, u64::from(d.size));
                put_ranks(out, &d.ranks);
                put_ranks(out, &d.remote);
            }
            Definition::Op(d) => {
                out.push(D_OP);
                put_u(out, u64::from(d.id));
                put_str(out, &d.name);
            }
        }
    }
}

/// True for the definition tags this reader knows (a later minor version may add others).
pub(crate) fn is_known_tag(tag: u8) -> bool {
    matches!(tag, D_CALL | D_MODULE | D_CALLSITE | D_COMM | D_OP)
}

/// Reads definitions back. Errors are short static descriptions; the reader adds the offset.
pub(crate) fn decode(buf: &[u8], pos: &mut usize) -> Result<Definition, &'static str> {
    let tag = *buf.get(*pos).ok_or("truncated definition")?;
    *pos += 1;
    let u = |pos: &mut usize| varint::get(buf, pos).map_err(|_| "bad varint in definition");
    let u32v = |pos: &mut usize| -> Result<u32, &'static str> {
        u32::try_from(u(pos)?).map_err(|_| "definition value out of range")
    };
    let string = |pos: &mut usize| -> Result<String, &'static str> {
        let n = u(pos)? as usize;
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= buf.len())
            .ok_or("truncated string")?;
        let s = std::str::from_utf8(&buf[*pos..end]).map_err(|_| "string is not UTF-8")?;
        *pos = end;
        Ok(s.to_owned())
    };
    let ranks = |pos: &mut usize| -> Result<Vec<u32>, &'static str> {
        let n = u(pos)? as usize;
        if n > buf.len() - (*pos).min(buf.len()) {
            return Err("rank list longer than its block");
        }
        let mut v = Vec::with_capacity(n);
        let mut prev = 0i64;
        for _ in 0..n {
            prev += varint::unzigzag(u(pos)?);
            v.push(u32::try_from(prev).map_err(|_| "rank out of range")?);
        }
        Ok(v)
    };
    Ok(match tag {
        D_CALL => {
            let id = u32v(pos)?;
            let lang = match buf.get(*pos) {
                Some(0) => Lang::C,
                Some(1) => Lang::Fortran,
                Some(_) => return Err("unknown language"),
                None => return Err("truncated definition"),
            };
            *pos += 1;
            Definition::Call(CallDef {
                id,
                lang,
                name: string(pos)?,
            })
        }
        D_MODULE => Definition::Module(ModuleDef {
            id: u32v(pos)?,
            base: u(pos)?,
            path: string(pos)?,
        }),
        D_CALLSITE => {
            let id = u32v(pos)?;
            let n = u(pos)? as usize;
            if n > 1024 {
                return Err("callsite deeper than 1024 frames");
            }
            let mut frames = Vec::with_capacity(n);
            for _ in 0..n {
                frames.push(Frame {
                    module: u32v(pos)?,
                    offset: u(pos)?,
                });
            }
            Definition::Callsite(CallsiteDef { id, frames })
        }
        D_COMM => {
            let id = u32v(pos)?;
            let key = u(pos)?;
            let kind = match buf.get(*pos) {
                Some(0) => CommKind::World,
                Some(1) => CommKind::Own,
                Some(2) => CommKind::Intra,
                Some(3) => CommKind::Inter,
                Some(_) => return Err("unknown communicator kind"),
                None => return Err("truncated definition"),
            };
            *pos += 1;
            let size = u32v(pos)?;
            let r = ranks(pos)?;
            let remote = ranks(pos)?;
            Definition::Comm(CommDef {
                id,
                key,
                kind,
                size,
                ranks: r,
                remote,
            })
        }
        D_OP => Definition::Op(OpDef {
            id: u32v(pos)?,
            name: string(pos)?,
        }),
        _ => return Err("unknown definition tag"),
    })
}

//! Values as TI lines write them: SimGrid's wildcards and datatype ids, buffers as counts
//! of a predefined datatype (or bytes of `MPI_BYTE` for other sizes), flop counts, lists of
//! counts, and the tags of communicators other than the world moved by a per-communicator
//! offset so that their messages cannot match each other in the replay.

use mpiscope_trace::{CommDef, CommKind, Event, Slot, Tables, TAG_ANY};

use super::reason::Reason;

/// SimGrid 3.32's `MPI_ANY_SOURCE`.
pub(super) const SG_ANY_SOURCE: i64 = -555;
/// SimGrid 3.32's `MPI_ANY_TAG`.
pub(super) const SG_ANY_TAG: i64 = -444;
/// SimGrid's datatype id of `MPI_BYTE`.
pub(super) const DT_BYTE: &str = "6";
/// Tags of communicators other than the world are moved by a multiple of this.
pub(super) const TAG_STRIDE: i64 = 1_000_000;

/// SimGrid's id of a predefined datatype of `size` bytes.
fn dt_for_size(size: i64) -> Option<&'static str> {
    match size {
        1 => Some(DT_BYTE),
        2 => Some("3"),
        4 => Some("1"),
        8 => Some("0"),
        16 => Some("26"),
        _ => None,
    }
}

/// Size in bytes of a datatype id from [`dt_for_size`].
pub(super) fn dt_size(dt: &str) -> i64 {
    match dt {
        "3" => 2,
        "1" => 4,
        "0" => 8,
        "26" => 16,
        _ => 1,
    }
}

/// A buffer as TI writes it: a count of elements of a SimGrid datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Buf {
    /// Elements of `dt`.
    pub(super) count: i64,
    /// SimGrid's datatype id.
    pub(super) dt: &'static str,
}

impl Buf {
    /// `count` elements of `size` bytes (size unknown: the count is taken as bytes).
    pub(super) fn new(count: i64, size: Option<i64>) -> Option<Buf> {
        if count < 0 {
            return None;
        }
        match size {
            None => Some(Buf { count, dt: DT_BYTE }),
            Some(s) if s < 0 => None,
            Some(s) => Some(match dt_for_size(s) {
                Some(dt) => Buf { count, dt },
                None => Buf {
                    count: count.checked_mul(s)?,
                    dt: DT_BYTE,
                },
            }),
        }
    }

    /// The buffer's size in bytes.
    pub(super) fn bytes(self) -> i64 {
        self.count.saturating_mul(dt_size(self.dt))
    }
}

/// The send buffer of an event (`Count`, `DtypeSize`).
pub(super) fn send_buf(ev: &Event) -> Option<Buf> {
    Buf::new(ev.args.get(Slot::Count)?, ev.args.get(Slot::DtypeSize))
}

/// The receive buffer of an event (`RecvCount`, `RecvDtypeSize`).
pub(super) fn recv_buf(ev: &Event) -> Option<Buf> {
    Buf::new(
        ev.args.get(Slot::RecvCount)?,
        ev.args.get(Slot::RecvDtypeSize),
    )
}

/// Per-rank counts of one datatype, as counts of a SimGrid datatype.
pub(super) fn counts_buf(
    counts: Vec<i64>,
    size: Option<i64>,
) -> Result<(Vec<i64>, &'static str), Reason> {
    if counts.iter().any(|&c| c < 0) {
        return Err(Reason::MissingArgs);
    }
    match size {
        None => Ok((counts, DT_BYTE)),
        Some(s) => match dt_for_size(s) {
            Some(dt) => Ok((counts, dt)),
            None if s >= 0 => {
                let bytes: Option<Vec<i64>> = counts.iter().map(|&c| c.checked_mul(s)).collect();
                Ok((bytes.ok_or(Reason::MissingArgs)?, DT_BYTE))
            }
            None => Err(Reason::MissingArgs),
        },
    }
}

/// Numbers separated by blanks.
pub(super) fn join(v: &[i64]) -> String {
    let mut s = String::new();
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&x.to_string());
    }
    s
}

/// Flops as TI writes them: integers when whole, else up to three decimals.
pub(super) fn fmt_flops(x: f64) -> String {
    let r = (x * 1000.0).round() / 1000.0;
    if r.fract() == 0.0 && r.abs() < 9e15 {
        return (r as i64).to_string();
    }
    let s = format!("{r:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The communicator of an event, when recorded and defined.
pub(super) fn comm_of<'t>(ev: &Event, tables: &'t Tables) -> Option<&'t CommDef> {
    let id = u32::try_from(ev.args.get(Slot::Comm)?).ok()?;
    tables.comms.get(&id)
}

/// The tag offset of point-to-point messages on `comm` (0 on the world communicator).
pub(super) fn tag_offset(comm: Option<&CommDef>) -> i64 {
    match comm {
        Some(c) if c.kind != CommKind::World => (1 + (c.key % 1000) as i64) * TAG_STRIDE,
        _ => 0,
    }
}

/// A tag moved by a communicator's offset (wildcards and large tags are kept).
pub(super) fn map_tag(tag: i64, offset: i64) -> i64 {
    if (0..TAG_STRIDE).contains(&tag) {
        tag + offset
    } else {
        tag
    }
}

/// The tag of a receive: the posted one, or the matched one for a wildcard.
pub(super) fn resolve_tag(posted: i64, status: Option<i64>, offset: i64) -> Option<i64> {
    let t = if posted == TAG_ANY { status? } else { posted };
    Some(map_tag(t, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_text() {
        assert_eq!(fmt_flops(1234.0), "1234");
        assert_eq!(fmt_flops(0.5), "0.5");
        assert_eq!(fmt_flops(2.0 / 3.0), "0.667");
        assert_eq!(fmt_flops(0.0001), "0");
        assert_eq!(fmt_flops(1e12), "1000000000000");
    }

    #[test]
    fn datatypes_by_size() {
        let b = |c, s| Buf::new(c, s).map(|b| (b.count, b.dt));
        assert_eq!(b(10, Some(8)), Some((10, "0")));
        assert_eq!(b(10, Some(4)), Some((10, "1")));
        assert_eq!(b(10, Some(2)), Some((10, "3")));
        assert_eq!(b(10, Some(1)), Some((10, "6")));
        assert_eq!(b(10, Some(16)), Some((10, "26")));
        assert_eq!(b(10, Some(12)), Some((120, "6")));
        assert_eq!(b(10, None), Some((10, "6")));
        assert_eq!(b(-1, Some(8)), None);
        assert_eq!(b(i64::MAX, Some(3)), None);
    }

    #[test]
    fn tags_of_other_communicators_move() {
        assert_eq!(map_tag(7, 0), 7);
        assert_eq!(map_tag(7, 3 * TAG_STRIDE), 3_000_007);
        assert_eq!(map_tag(TAG_STRIDE + 1, 3 * TAG_STRIDE), TAG_STRIDE + 1);
        assert_eq!(resolve_tag(TAG_ANY, Some(4), TAG_STRIDE), Some(1_000_004));
        assert_eq!(resolve_tag(TAG_ANY, None, 0), None);
    }
}

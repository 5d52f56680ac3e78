//! Completions: waits and successful tests, cancels and frees.
//!
//! SimGrid finds the request a `wait` completes by (source, destination, tag), so each
//! completed operation becomes a `wait` naming them; a receive's hole in the output is
//! filled here with the source and tag it matched. A `MPI_Waitall`/`Testall` that
//! completes exactly the operations still outstanding in the replay becomes one `waitall`
//! (the 3.32 `waitall` completes every pending request, whatever its argument).

use mpiscope_mpispec::Family;
use mpiscope_trace::{Event, ListKind, Slot, PEER_ANY, TAG_ANY};

use super::converter::{Converter, Outcome, Part};
use super::reason::Reason;
use super::values::{map_tag, resolve_tag};
use crate::ExportError;

/// A completed request, as read from a completion call.
#[derive(Debug, Clone, Copy)]
struct Done {
    /// The request's trace id.
    id: i64,
    /// The matched source, when recorded.
    source: Option<i64>,
    /// The matched tag, when recorded.
    tag: Option<i64>,
}

impl Converter {
    /// A wait or test of family `fam`.
    pub(super) fn completion(&mut self, ev: &Event, fam: Family) -> Result<Outcome, ExportError> {
        let single = || {
            ev.args.get(Slot::Request).map(|id| Done {
                id,
                source: ev.args.get(Slot::StatusSource),
                tag: ev.args.get(Slot::StatusTag),
            })
        };
        // A successful test: its flag, or the completion data only recorded on success.
        let flagged = ev.args.get(Slot::Flag) == Some(1);
        let done: Vec<Done> = match fam {
            Family::Wait | Family::Waitany | Family::Testany => single().into_iter().collect(),
            Family::Test | Family::RequestGetStatus => {
                let status = ev.args.get(Slot::StatusSource).is_some()
                    || ev.args.get(Slot::StatusBytes).is_some();
                if flagged || status {
                    single().into_iter().collect()
                } else {
                    Vec::new()
                }
            }
            _ => ev
                .list(ListKind::Completions)
                .unwrap_or(&[])
                .chunks_exact(4)
                .map(|c| Done {
                    id: c[0],
                    source: (c[1] != mpiscope_trace::NO_VALUE).then_some(c[1]),
                    tag: (c[2] != mpiscope_trace::NO_VALUE).then_some(c[2]),
                })
                .collect(),
        };
        if done.is_empty() {
            let polling = fam.is_test() || fam == Family::RequestGetStatus;
            return Ok(Outcome::Discard(polling.then_some(Reason::Waiting)));
        }
        let all = matches!(fam, Family::Waitall | Family::Testall);
        let array_len = ev.args.get(Slot::ArrayLen);
        self.complete(&done, all.then_some(array_len))?;
        Ok(Outcome::Handled)
    }

    /// Replays the completion of requests; `waitall`: the call completes a whole array
    /// (with its length, when recorded).
    fn complete(&mut self, done: &[Done], waitall: Option<Option<i64>>) -> Result<(), ExportError> {
        let me = self.me();
        let mut waits: Vec<(i64, i64, i64)> = Vec::new();
        for d in done {
            let Some(req) = self.reqs.get_mut(&d.id) else {
                continue;
            };
            let parts = req.active.take().unwrap_or_default();
            if req.persistent.is_none() {
                self.reqs.remove(&d.id);
            }
            for p in parts {
                match p {
                    Part::Send { dst, tag } => waits.push((me, dst, tag)),
                    Part::Recv {
                        src,
                        tag,
                        tag_offset,
                        buf,
                        at,
                    } => {
                        let s = self.resolve_source(src, d.source);
                        let t = resolve_tag(tag, d.tag, tag_offset);
                        match (s, t) {
                            (Some(s), Some(t)) => {
                                self.out.fill(
                                    at,
                                    Some(format!("irecv {s} {t} {} {}", buf.count, buf.dt)),
                                )?;
                                waits.push((s, me, t));
                            }
                            _ => {
                                if self.out.fill(at, None)? {
                                    self.outstanding = self.outstanding.saturating_sub(1);
                                }
                                self.note("MPI_Irecv", Reason::UnresolvedWildcard, 1);
                            }
                        }
                    }
                }
            }
        }
        if waits.is_empty() {
            return Ok(());
        }
        if let Some(len) = waitall {
            if waits.len() == self.outstanding {
                self.outstanding = 0;
                let n = len.unwrap_or(waits.len() as i64);
                return self.action(format!("waitall {n}"));
            }
        }
        for (s, d, t) in waits {
            self.outstanding = self.outstanding.saturating_sub(1);
            self.action(format!("wait {s} {d} {t}"))?;
        }
        Ok(())
    }

    /// `MPI_Cancel` (named `name` in notes): a receive not yet written is left out.
    pub(super) fn cancel(&mut self, ev: &Event, name: &str) -> Result<Outcome, ExportError> {
        let Some(id) = ev.args.get(Slot::Request) else {
            return Ok(Outcome::Discard(None));
        };
        let Some(parts) = self.reqs.get_mut(&id).and_then(|r| r.active.take()) else {
            return Ok(Outcome::Discard(None));
        };
        if self.reqs.get(&id).is_some_and(|r| r.persistent.is_none()) {
            self.reqs.remove(&id);
        }
        for p in parts {
            match p {
                Part::Recv { at, .. } if self.out.fill(at, None)? => {
                    self.outstanding = self.outstanding.saturating_sub(1);
                    self.note(name, Reason::Cancelled, 1);
                }
                _ => self.note(name, Reason::CancelledTooLate, 1),
            }
        }
        Ok(Outcome::Discard(None))
    }

    /// `MPI_Request_free` (named `name` in notes): the request's operations complete at the
    /// end of the replay; a receive with a known source and tag is written as posted.
    pub(super) fn request_free(&mut self, ev: &Event, name: &str) -> Result<Outcome, ExportError> {
        let Some(id) = ev.args.get(Slot::Request) else {
            return Ok(Outcome::Discard(None));
        };
        let Some(req) = self.reqs.remove(&id) else {
            return Ok(Outcome::Discard(None));
        };
        let parts = req.active.unwrap_or_default();
        for p in parts {
            self.note(name, Reason::FreedActive, 1);
            if let Part::Recv {
                src,
                tag,
                tag_offset,
                buf,
                at,
            } = p
            {
                // Its completion will not be seen: written as posted when possible.
                if src != PEER_ANY && tag != TAG_ANY {
                    let line = format!(
                        "irecv {src} {} {} {}",
                        map_tag(tag, tag_offset),
                        buf.count,
                        buf.dt
                    );
                    self.out.fill(at, Some(line))?;
                } else if self.out.fill(at, None)? {
                    self.outstanding = self.outstanding.saturating_sub(1);
                }
            }
        }
        Ok(Outcome::Discard(None))
    }
}

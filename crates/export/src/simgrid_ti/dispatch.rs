//! One event at a time: the filters every call goes through (other threads, calls after
//! `MPI_Finalize`, calls that never returned), the compute time before it, and the routing
//! of the call by its function's family to the point-to-point, completion and collective
//! converters. What a call's [`Outcome`] does with its duration is decided here.

use std::rc::Rc;

use mpiscope_mpispec::Family;
use mpiscope_trace::{Event, Slot, Tables};

use super::converter::{CallKind, Converter, Outcome};
use super::reason::Reason;
use super::values::comm_of;
use crate::ExportError;

impl Converter {
    /// Converts one event of the rank's trace.
    pub(super) fn event(&mut self, ev: &Event, tables: &Tables) -> Result<(), ExportError> {
        let name = tables.call_name(ev.call);
        if ev.skipped > 0 {
            self.note(&name, Reason::Unrecorded, ev.skipped);
        }
        if ev.thread != 0 {
            self.note(&name, Reason::OtherThread, 1);
            return Ok(());
        }
        if ev.unfinished {
            self.note(&name, Reason::Unfinished, 1);
            return Ok(());
        }
        if self.finalized {
            self.note(&name, Reason::AfterFinalize, 1);
            return Ok(());
        }
        let kind = self.kind(ev.call, &name);
        if matches!(kind.family, Family::Init | Family::InitThread) {
            // What ran before MPI was initialized is not part of the replay.
            self.pending_ns = 0;
        } else {
            self.pending_ns += ev.t_enter.saturating_sub(self.cursor);
        }
        self.cursor = self.cursor.max(ev.t_exit);
        match self.dispatch(ev, tables, &name, &kind)? {
            Outcome::Handled => {}
            Outcome::Fold(reason) => {
                self.pending_ns += ev.duration();
                if let Some(r) = reason {
                    self.note(&name, r, 1);
                }
            }
            Outcome::Discard(reason) => {
                if let Some(r) = reason {
                    self.note(&name, r, 1);
                }
            }
        }
        Ok(())
    }

    /// What the function of call id `call`, named `name`, is (classified once per id).
    fn kind(&mut self, call: u32, name: &str) -> Rc<CallKind> {
        if let Some(k) = self.kinds.get(&call) {
            return Rc::clone(k);
        }
        let k = Rc::new(CallKind {
            family: Family::of(name),
            nonblocking: mpiscope_mpispec::is_nonblocking(name),
            persistent: mpiscope_mpispec::is_persistent(name),
            collective: mpiscope_mpispec::is_collective(name),
        });
        self.kinds.insert(call, Rc::clone(&k));
        k
    }

    /// Replays a call by its family.
    fn dispatch(
        &mut self,
        ev: &Event,
        tables: &Tables,
        name: &str,
        kind: &CallKind,
    ) -> Result<Outcome, ExportError> {
        let fam = kind.family;
        let comm = comm_of(ev, tables);
        Ok(match fam {
            Family::Init | Family::InitThread => Outcome::Discard(None),
            Family::Finalize => {
                self.action("finalize".into())?;
                self.finalized = true;
                Outcome::Handled
            }
            _ if fam.is_send() => self.send_call(ev, comm, kind)?,
            Family::Recv | Family::Mrecv => self.recv_call(ev, comm, kind)?,
            Family::Sendrecv | Family::SendrecvReplace => {
                self.sendrecv(ev, comm, kind.nonblocking)?
            }
            _ if fam.is_probe() => Outcome::Discard(Some(Reason::Probe)),
            Family::Wait
            | Family::Waitall
            | Family::Waitany
            | Family::Waitsome
            | Family::Test
            | Family::Testall
            | Family::Testany
            | Family::Testsome
            | Family::RequestGetStatus => self.completion(ev, fam)?,
            Family::Start => match ev.args.get(Slot::Request) {
                Some(id) => self.start_persistent(id)?,
                None => Outcome::Discard(None),
            },
            Family::Startall => self.start_all(ev, name)?,
            Family::Cancel => self.cancel(ev, name)?,
            Family::RequestFree => self.request_free(ev, name)?,
            _ if kind.collective => self.collective(ev, comm, name, kind)?,
            _ => Outcome::Fold(Some(Reason::NoAction)),
        })
    }
}

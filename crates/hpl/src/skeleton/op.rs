//! The actions a rank queues, in a compact form: the skeleton's queues hold a few of them
//! per rank for thousands of ranks, and an [`Action`] (sized for collectives) is four times
//! larger, so a queue's head took two cache lines to read. Each becomes its [`Action`]
//! when the engine asks for it.

use mpiscope_sim::workload::{Action, ReqHandle};

/// A queued action of the skeleton (world ranks, tags and sizes as the [`Action`]s say;
/// a request handle of 0 is none: the skeleton's handles start at 2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Op {
    /// [`Action::Compute`].
    Compute(f64),
    /// [`Action::Sleep`].
    Sleep(f64),
    /// [`Action::Clock`].
    Clock,
    /// [`Action::Send`] on the world communicator.
    Send {
        dst: u32,
        tag: u32,
        bytes: u64,
        req: ReqHandle,
        sync: bool,
    },
    /// [`Action::Recv`] on the world communicator.
    Recv {
        src: u32,
        tag: u32,
        bytes: u64,
        req: ReqHandle,
    },
    /// [`Action::Sendrecv`] on the world communicator.
    Sendrecv {
        dst: u32,
        src: u32,
        tag: u32,
        send: u64,
        recv: u64,
    },
    /// [`Action::Wait`] on two requests.
    Wait2(ReqHandle, ReqHandle),
    /// [`Action::Pack`].
    Pack {
        secs: f64,
        fragments: u32,
        with: Option<u32>,
    },
}

/// A request handle, or none (0).
fn handle(req: ReqHandle) -> Option<ReqHandle> {
    (req != 0).then_some(req)
}

impl From<Op> for Action {
    fn from(op: Op) -> Action {
        match op {
            Op::Compute(flops) => Action::Compute { flops },
            Op::Sleep(secs) => Action::Sleep { secs },
            Op::Clock => Action::Clock,
            Op::Send {
                dst,
                tag,
                bytes,
                req,
                sync,
            } => Action::Send {
                dst,
                tag: i64::from(tag),
                bytes,
                comm: 0,
                req: handle(req),
                sync,
            },
            Op::Recv {
                src,
                tag,
                bytes,
                req,
            } => Action::Recv {
                src: i64::from(src),
                tag: i64::from(tag),
                bytes,
                comm: 0,
                req: handle(req),
            },
            Op::Sendrecv {
                dst,
                src,
                tag,
                send,
                recv,
            } => Action::Sendrecv {
                dst,
                send_bytes: send,
                src: i64::from(src),
                recv_bytes: recv,
                tag: i64::from(tag),
                comm: 0,
            },
            Op::Wait2(a, b) => Action::Wait { reqs: vec![a, b] },
            Op::Pack {
                secs,
                fragments,
                with,
            } => Action::Pack {
                secs,
                fragments,
                with,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_is_small_and_becomes_its_action() {
        assert!(std::mem::size_of::<Op>() <= 32);
        let send = Op::Send {
            dst: 3,
            tag: 2001,
            bytes: 64,
            req: 0,
            sync: true,
        };
        assert_eq!(
            Action::from(send),
            Action::Send {
                dst: 3,
                tag: 2001,
                bytes: 64,
                comm: 0,
                req: None,
                sync: true
            }
        );
        let recv = Op::Recv {
            src: 5,
            tag: 1000,
            bytes: 8,
            req: 7,
        };
        assert_eq!(
            Action::from(recv),
            Action::Recv {
                src: 5,
                tag: 1000,
                bytes: 8,
                comm: 0,
                req: Some(7)
            }
        );
        assert_eq!(
            Action::from(Op::Wait2(2, 3)),
            Action::Wait { reqs: vec![2, 3] }
        );
    }
}

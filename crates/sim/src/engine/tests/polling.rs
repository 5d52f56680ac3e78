//! Computing while polling ([`Action::ComputeWhilePolling`]) is the loop of computations
//! and probes it stands for.

use super::{p1, Script};
use crate::config::SimConfig;
use crate::engine::Simulation;
use crate::workload::{Action, Outcome, RankWorkload, WorkloadError};

/// Rank 0 of [`polling`]: computes 10 chunks of 1 ms, probing for rank 1's message
/// after each (one action, or the loop), then receives it; records (chunks, found, end).
struct Poller {
    one_action: bool,
    step: u32,
    chunks: u64,
    seen: Option<(u64, bool)>,
    out: std::sync::Arc<std::sync::Mutex<(u64, bool, u64)>>,
}

impl RankWorkload for Poller {
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
        const PROBE: (i64, i64) = (1, 5);
        let compute = Action::Compute { flops: 1e6 };
        let receive = Action::Recv {
            src: 1,
            tag: 5,
            bytes: 100,
            comm: 0,
            req: None,
        };
        self.step += 1;
        let action = match (self.step, last) {
            (1, _) if self.one_action => Action::ComputeWhilePolling {
                flops: 1e6,
                chunks: 10,
                src: PROBE.0,
                tag: PROBE.1,
                comm: 0,
            },
            (_, Outcome::Polled { chunks, found }) => {
                self.seen = Some((chunks, found));
                receive
            }
            (1, _) => compute,
            (_, Outcome::Flag(found)) => {
                self.chunks += 1;
                if found || self.chunks == 10 {
                    self.seen = Some((self.chunks, found));
                    receive
                } else {
                    compute
                }
            }
            (_, Outcome::Time(t)) => {
                let (c, f) = self.seen.expect("polled");
                *self.out.lock().unwrap() = (c, f, t);
                return None;
            }
            _ if self.seen.is_some() => Action::Clock,
            _ => Action::Iprobe {
                src: PROBE.0,
                tag: PROBE.1,
                comm: 0,
            },
        };
        Some(Ok(action))
    }
}

/// (chunks computed, found, end in ps) of a [`Poller`] whose message rank 1 sends after
/// `delay` seconds.
fn polling(one_action: bool, delay: f64) -> (u64, bool, u64) {
    let out = std::sync::Arc::new(std::sync::Mutex::new((0, false, 0)));
    let poller = Poller {
        one_action,
        step: 0,
        chunks: 0,
        seen: None,
        out: out.clone(),
    };
    let sender = Script(
        vec![
            Action::Sleep { secs: delay },
            Action::Send {
                dst: 0,
                tag: 5,
                bytes: 100,
                comm: 0,
                req: None,
                sync: false,
            },
        ]
        .into(),
    );
    let w: Vec<Box<dyn RankWorkload>> = vec![Box::new(poller), Box::new(sender)];
    let r = Simulation::new(&p1(), SimConfig::default(), vec![0, 1], w)
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(r.ranks[0].mpi_calls, out.lock().unwrap().0 + 1);
    let got = *out.lock().unwrap();
    got
}

#[test]
fn computing_while_polling_is_the_loop_of_computations_and_probes() {
    for delay in [0.0, 0.0004, 0.0015, 0.00371, 0.0099, 0.02] {
        let one = polling(true, delay);
        assert_eq!(one, polling(false, delay), "message sent at {delay} s");
        let expected = ((delay * 1e3).floor() as u64 + 1).min(10);
        assert_eq!(
            (one.0, one.1),
            (expected, delay < 0.01),
            "message sent at {delay} s"
        );
    }
    // A message sent as a chunk ends counts as seen by that chunk's probe (the loop's
    // probe may run before or after the sender at that instant).
    assert_eq!(polling(true, 0.003).0, 3);
}

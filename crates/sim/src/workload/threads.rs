//! One simulated actor per rank: the replay of an mpiscope trace follows the thread that
//! initialized MPI. Calls of other threads that only work locally (timers, datatypes)
//! change nothing in the replay; a communication call from another thread
//! (`MPI_THREAD_MULTIPLE` or `MPI_THREAD_SERIALIZED` programs) would lose its messages if
//! left out, so it stops the replay (and the saving of a structural form) with a
//! [`WorkloadError::Unsupported`] that counts the rank's threads and such calls.

use mpiscope_trace::{Event, RankReader};

use super::WorkloadError;

/// Whether the replay turns calls of `name` into actions (messages, waits, probes,
/// collectives): those that cannot be left out when another thread makes them.
pub(crate) fn is_replayed(name: &str) -> bool {
    use mpiscope_mpispec::Group;
    matches!(
        mpiscope_mpispec::group(name),
        Group::P2p | Group::Probe | Group::Completion | Group::Collective
    )
}

/// The error for world rank `rank`, whose event number `at` (`ev`, a call of `name`) is a
/// communication call of a thread other than the main one. Reads the rest of the rank's
/// file to count its threads and such calls.
pub(crate) fn several_threads<R: std::io::Read>(
    reader: &mut RankReader<R>,
    rank: u32,
    at: u64,
    ev: &Event,
    name: &str,
) -> WorkloadError {
    let mut threads = std::collections::BTreeSet::from([0, ev.thread]);
    let mut calls = 1u64;
    while let Some((e, t)) = reader.next_with_tables() {
        threads.insert(e.thread);
        if e.thread != 0 && is_replayed(&t.call_name(e.call)) {
            calls += 1;
        }
    }
    let level = reader
        .info()
        .map(|i| i.thread_level.trim())
        .filter(|l| !l.is_empty())
        .map(|l| format!(" (MPI_THREAD_{})", l.to_ascii_uppercase()))
        .unwrap_or_default();
    WorkloadError::Unsupported {
        path: reader.path().display().to_string(),
        message: format!(
            "rank {rank} has calls from {} threads{level}; replay of several threads per \
             rank is not supported: {calls} communication call(s) are made by threads other \
             than the one that initialized MPI, the first {name} (event {at}, thread {})",
            threads.len(),
            ev.thread
        ),
    }
}

/// Reads what follows the main thread's last call of world rank `rank` (other threads'
/// blocks may follow its `MPI_Finalize`): no other thread may communicate there either.
/// `read` counts the events read so far.
pub(crate) fn rest_on_main_thread<R: std::io::Read>(
    reader: &mut RankReader<R>,
    rank: u32,
    read: &mut u64,
) -> Result<(), WorkloadError> {
    while let Some(ev) = reader.next_event() {
        *read += 1;
        if ev.thread == 0 {
            continue;
        }
        let name = reader.tables().call_name(ev.call);
        if is_replayed(&name) {
            let name = name.into_owned();
            return Err(several_threads(reader, rank, *read, &ev, &name));
        }
    }
    Ok(())
}

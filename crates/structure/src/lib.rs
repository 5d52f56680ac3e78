//! Loop structure of event sequences ([Grosclaude 2012]): a sequence of symbols, each with a value
//! (a time), compressed losslessly into nested loops with exact iteration counts and
//! per-position statistics of the values.
//!
//! Two algorithms over the same [`Node`] tree:
//! * [`fold`]: online loop folding in linear time: each new symbol is appended and the tail
//!   is folded while it repeats the block before it (`X X` becomes `X[2]`) or the body of
//!   the loop before it (`X[n] X` becomes `X[n+1]`); candidate periods come from the
//!   previous occurrences of the last item, compared by rolling hashes and verified
//!   exactly. Nested loops come out innermost first, with their exact counts.
//! * [`seed`]: [Grosclaude 2012]'s algorithm, literally: alternate the replacement of runs (`A`
//!   found `n` times in a row becomes `A[n]`) and of the most frequent digram (`A, B`
//!   becomes `A+B`) until nothing changes. Quadratic in the worst case; kept as the
//!   reference the paper describes.
//!
//! * [`approx`]: approximate loops for real codes, whose iterations differ slightly (a step
//!   that also computes energies, a data-dependent exchange count): the sequence is cut at an
//!   anchor symbol, the most common iteration is the body and the others are stated as
//!   edits against it ([`diff`]).
//!
//! Symbols are plain `u32`s: what they stand for (an MPI call at a callsite, a compute burst)
//! is the caller's business (`mpiscope-analyze`).

pub mod approx;
pub mod diff;
pub mod fold;
mod node;
pub mod seed;

pub use node::{Node, Stats};

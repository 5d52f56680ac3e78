//! SVG figures for every page mpiscope writes: the report, the comparison of runs and the
//! figures of a study. One module draws them all, so every figure has the same things a
//! reader needs to check it: axis titles with their unit, tick labels in that unit (a log
//! axis says it is one and labels its decades), a legend whenever there is more than one
//! series, a colour scale beside a heat map, and rank labels.
//!
//! * [`unit`]: how a value of a quantity is written (`2.500 ms`, `1.5 MiB`, `12 k`, `40%`);
//! * [`scale`]: linear and log axes, their ticks;
//! * [`palette`]: the colours: one per MPI function (the same on every figure and the
//!   timeline), compute, and series styles that differ by colour, dash and marker;
//! * [`line`]: line charts (series never hidden under each other: each has its own dash
//!   and marker);
//! * [`bars`]: horizontal bars, bars stacked per row, histograms;
//! * [`heat`]: rank x rank heat maps with a colour scale and rank labels;
//! * [`svg`]: escaping and the few SVG elements the others share.
//!
//! No dependency: text in, text out.

pub mod bars;
pub mod heat;
pub mod line;
pub mod palette;
pub mod scale;
pub mod svg;
pub mod unit;

pub use scale::Scale;
pub use unit::Unit;

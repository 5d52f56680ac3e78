//! Platform files: SimGrid platform XML v4.1 ([`xml`]) and mpiscope's TOML ([`toml`]),
//! with SimGrid's units ([`units`]) and the options a file carries ([`config`]).
//!
//! Both readers build the same [`Platform`](super::Platform) from the same description,
//! name the file and line of what they refuse, and refuse what the models cannot use
//! (speeds and bandwidths that are not positive and finite, latencies that are not
//! finite), so that no zero rate reaches a model.

pub mod config;
mod nesting;
pub mod toml;
pub mod units;
pub mod xml;

#[cfg(test)]
mod input_tests;

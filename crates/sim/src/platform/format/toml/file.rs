//! The TOML platform file as read: its sections and entries (what serde fills in, every
//! quantity with its unit parsed), and the errors that name a line of it.

use ::toml::Spanned;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::super::units;
use crate::platform::topology::graph::{Direction, LinkRef};
use crate::platform::{HostPower, LinkPolicy, PlatformError};

/// A number with a unit, parsed by one of the [`units`] functions.
macro_rules! quantity {
    ($name:ident, $parse:path, $what:literal) => {
        #[derive(Debug, Clone, Copy)]
        pub(super) struct $name(pub(super) f64);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        write!(f, "a {} (a number, or a string with a unit)", $what)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        $parse(v).map($name).map_err(E::custom)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        Ok($name(v))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        Ok($name(v as f64))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        Ok($name(v as f64))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

quantity!(Bw, units::parse_bandwidth, "bandwidth");
quantity!(Time, units::parse_time, "duration");
quantity!(Speed, units::parse_speed, "speed");

/// A cable's characteristics (`backbone`, `loopback` of a section).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkChars {
    pub(super) bandwidth: Bw,
    #[serde(default)]
    pub(super) latency: Option<Time>,
    #[serde(default)]
    pub(super) sharing: Option<String>,
}

/// `loopback = { … }` or `loopback = false`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum LoopbackKey {
    Enabled(bool),
    Link {
        bandwidth: Bw,
        #[serde(default)]
        latency: Option<Time>,
        #[serde(default)]
        sharing: Option<String>,
    },
}

/// A loopback's sharing: `fatpipe` (SimGrid's, the default) or `shared`.
pub(super) fn loopback_shared(sharing: Option<&str>) -> Result<bool, String> {
    match policy(sharing, LinkPolicy::FatPipe)? {
        LinkPolicy::FatPipe => Ok(false),
        LinkPolicy::Shared => Ok(true),
        LinkPolicy::SplitDuplex => Err("a loopback is shared or fatpipe".into()),
    }
}

/// A generator section: `[cluster]`, `[fat_tree]`, `[torus]` or `[dragonfly]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Section {
    pub(super) id: Option<String>,
    pub(super) hosts: Option<u64>,
    pub(super) radical: Option<String>,
    pub(super) prefix: Option<String>,
    pub(super) suffix: Option<String>,
    pub(super) speed: Option<Speed>,
    pub(super) cores: Option<u32>,
    pub(super) watts: Option<String>,
    pub(super) watts_off: Option<f64>,
    pub(super) bandwidth: Bw,
    pub(super) latency: Time,
    pub(super) sharing: Option<String>,
    pub(super) backbone: Option<LinkChars>,
    pub(super) loopback: Option<LinkChars>,
    pub(super) limiter: Option<Bw>,
    pub(super) router: Option<String>,
    pub(super) topology: Option<String>,
    pub(super) down: Option<Vec<u32>>,
    pub(super) up: Option<Vec<u32>>,
    pub(super) parallel: Option<Vec<u32>>,
    pub(super) dims: Option<Vec<u32>>,
    pub(super) groups: Option<u32>,
    pub(super) group_links: Option<u32>,
    pub(super) chassis: Option<u32>,
    pub(super) chassis_links: Option<u32>,
    pub(super) routers: Option<u32>,
    pub(super) router_links: Option<u32>,
    pub(super) nodes: Option<u32>,
}

/// A `[[host]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HostEntry {
    pub(super) name: Spanned<String>,
    pub(super) speed: Option<Speed>,
    pub(super) cores: Option<u32>,
    pub(super) watts: Option<String>,
    pub(super) watts_off: Option<f64>,
}

/// A `[[router]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RouterEntry {
    pub(super) name: Spanned<String>,
}

/// A `[[link]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkEntry {
    pub(super) name: Spanned<String>,
    pub(super) bandwidth: Bw,
    pub(super) latency: Option<Time>,
    pub(super) sharing: Option<String>,
}

/// A `[[route]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RouteSpecEntry {
    pub(super) src: Spanned<String>,
    pub(super) dst: Spanned<String>,
    pub(super) links: Spanned<Vec<String>>,
    pub(super) symmetric: Option<bool>,
}

/// A whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[allow(dead_code)]
    pub(super) name: Option<String>,
    pub(super) cluster: Option<Spanned<Section>>,
    pub(super) fat_tree: Option<Spanned<Section>>,
    pub(super) torus: Option<Spanned<Section>>,
    pub(super) dragonfly: Option<Spanned<Section>>,
    pub(super) routing: Option<Spanned<String>>,
    pub(super) loopback: Option<LoopbackKey>,
    #[serde(default)]
    pub(super) host: Vec<HostEntry>,
    #[serde(default)]
    pub(super) router: Vec<RouterEntry>,
    #[serde(default)]
    pub(super) link: Vec<LinkEntry>,
    #[serde(default)]
    pub(super) route: Vec<RouteSpecEntry>,
    /// Simulation options by SimGrid's names (`"smpi/bw-factor" = "65472:0.94;0:0.81"`).
    #[serde(default)]
    pub(super) config: std::collections::BTreeMap<Spanned<String>, ::toml::Value>,
}

/// Error builder with line numbers from byte offsets.
pub(super) struct Ctx<'a> {
    pub(super) text: &'a str,
    pub(super) path: &'a str,
}

impl Ctx<'_> {
    /// The 1-based line of byte `offset`.
    pub(super) fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// An error at the line of `span`.
    pub(super) fn err(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> PlatformError {
        PlatformError::Syntax {
            path: self.path.to_string(),
            line: self.line(span.start),
            message: message.into(),
        }
    }
}

/// A cable's sharing policy (`default` when not given).
pub(super) fn policy(s: Option<&str>, default: LinkPolicy) -> Result<LinkPolicy, String> {
    match s {
        None => Ok(default),
        Some(p) => LinkPolicy::parse(p)
            .ok_or_else(|| format!("sharing must be splitduplex, shared or fatpipe, not `{p}`")),
    }
}

/// A host's power model from `watts = "idle:max"` and `watts_off`.
pub(super) fn power(watts: Option<&str>, off: Option<f64>) -> Result<HostPower, String> {
    let mut p = match watts {
        Some(w) => HostPower::parse_state(w)?,
        None => HostPower::default(),
    };
    if let Some(off) = off {
        if !(off.is_finite() && off >= 0.0) {
            return Err(format!("invalid watts_off {off}"));
        }
        p.off = off;
    }
    Ok(p)
}

/// Parses `"name"`, `"name:UP"`, `"name:DOWN"`.
pub(super) fn link_ref(s: &str) -> LinkRef {
    if let Some((n, d)) = s.rsplit_once(':') {
        match d.to_ascii_uppercase().as_str() {
            "UP" => return LinkRef::dir(n, Direction::Up),
            "DOWN" => return LinkRef::dir(n, Direction::Down),
            _ => {}
        }
    }
    LinkRef::new(s)
}

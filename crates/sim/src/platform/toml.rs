//! Our TOML platform format: a generator section, or explicit hosts, links and routes.
//!
//! Quantities are either strings with SimGrid units (`"10Gbps"`, `"1GBps"`, `"24us"`,
//! `"1Gf"`; see [`super::units`]) or plain numbers in SI units (bytes/s, seconds, flop/s).
//!
//! # A generated platform
//!
//! Exactly one of `[cluster]`, `[fat_tree]`, `[torus]`, `[dragonfly]`. They share the host
//! and cable keys; each topology adds its shape, in SimGrid's notation (`topology = "…"`)
//! or spelled out:
//!
//! ```toml
//! name = "pruned fat tree"          # optional, informative
//!
//! [fat_tree]
//! id = "ft"                         # names links (default "cluster")
//! prefix = "node-"                  # host names: prefix + number + suffix
//! suffix = ""
//! # hosts = 16                      # optional: checked against the topology
//! # radical = "0-15"                # or SimGrid radicals (host numbers)
//! speed = "1Gf"                     # per core (default 1 Gflop/s)
//! cores = 4                         # default 1
//! watts = "95:190"                  # idle:max (or idle:epsilon:max), optional
//! watts_off = 10                    # optional
//! bandwidth = "10Gbps"              # per cable (required)
//! latency = "1us"                   # per cable (required)
//! sharing = "splitduplex"           # splitduplex (default) | shared | fatpipe
//! loopback = { bandwidth = "50GBps", latency = "0s" }   # optional, per host; add
//!                                   # sharing = "shared" for shared memory (default fatpipe)
//! limiter = "12.5GBps"              # optional per-node limiter link
//! topology = "2;4,4;1,2;1,2"        # levels;down…;up…;parallel…
//! # or: down = [4, 4]  up = [1, 2]  parallel = [1, 2]
//! ```
//!
//! * `[cluster]` (flat): `hosts` or `radical` gives the hosts; optional
//!   `backbone = { bandwidth = "100Gbps", latency = "500ns", sharing = "fatpipe" }`
//!   (sharing `shared`, the default, or `fatpipe`) and `router = "name"`.
//! * `[torus]`: `topology = "4,4,4"` or `dims = [4, 4, 4]`.
//! * `[dragonfly]`: `topology = "G,g;C,c;B,b;N"` or `groups`, `group_links`, `chassis`,
//!   `chassis_links`, `routers`, `router_links`, `nodes`.
//!
//! # Simulation options
//!
//! Either kind of file may carry options for the simulation under SimGrid's names, as a
//! SimGrid platform's `<config>` does; `mpiscope replay` applies them (its own flags win):
//!
//! ```toml
//! [config]
//! "network/model" = "SMPI"                 # or "CM02"
//! "smpi/bw-factor" = "65472:0.94;0:0.81"   # piecewise factors by message size
//! "smpi/lat-factor" = "65472:11.6;0:2.0"
//! "smpi/send-is-detached-thresh" = 65536   # eager threshold, bytes
//! ```
//!
//! # An explicit platform
//!
//! ```toml
//! routing = "shortest"   # lowest-latency paths over the routes (default), or "full":
//!                        # each route is the complete route between two hosts
//! loopback = { bandwidth = "10GBps", latency = 0 }   # same-host link (default), or false
//!
//! [[host]]
//! name = "a"
//! speed = "2Gf"
//! cores = 8
//! watts = "100:93:200"
//!
//! [[host]]
//! name = "b"
//!
//! [[router]]
//! name = "r"
//!
//! [[link]]
//! name = "ar"
//! bandwidth = "10Gbps"
//! latency = "2us"
//! sharing = "splitduplex"   # makes ar_UP and ar_DOWN; default "shared"
//!
//! [[link]]
//! name = "rb"
//! bandwidth = 1.25e9
//! latency = 2e-6
//!
//! [[route]]
//! src = "a"
//! dst = "r"
//! links = ["ar:UP"]         # "name:UP" / "name:DOWN" for split-duplex cables
//!
//! [[route]]
//! src = "r"
//! dst = "b"
//! links = ["rb"]
//! symmetric = true          # default: the reverse route uses the links reversed
//! ```
//!
//! With `routing = "shortest"`, routes are edges between hosts and routers and messages
//! follow the lowest-latency path ([`mod@super::graph`]); with `routing = "full"`, a message
//! between two hosts without a route fails. Errors name the file and the line.

use std::path::Path;

use ::toml::Spanned;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::cluster::{parse_radicals, BackboneSpec, ClusterSpec, LoopbackSpec};
use super::graph::{Direction, GraphEdge, GraphHost, GraphLink, GraphSpec, LinkRef, LinkTable};
use super::units;
use super::zones::{Local, NetPoint, RouteEntry, Routed, RoutedKind, ZoneTree};
use super::{
    cluster, dragonfly, fat_tree, graph, torus, DragonflySpec, FatTreeSpec, HostPower, HostSpec,
    LinkPolicy, Parts, Platform, PlatformError, Sharing, TorusSpec,
};

/// Reads a TOML platform file.
pub fn from_toml_path(path: &Path) -> Result<Platform, PlatformError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| PlatformError::Io {
        path: name.clone(),
        source,
    })?;
    from_toml_str(&text, &name)
}

/// A number with a unit, parsed by one of the [`units`] functions.
macro_rules! quantity {
    ($name:ident, $parse:path, $what:literal) => {
        #[derive(Debug, Clone, Copy)]
        struct $name(f64);

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkChars {
    bandwidth: Bw,
    #[serde(default)]
    latency: Option<Time>,
    #[serde(default)]
    sharing: Option<String>,
}

/// `loopback = { … }` or `loopback = false`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LoopbackKey {
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
fn loopback_shared(sharing: Option<&str>) -> Result<bool, String> {
    match policy(sharing, LinkPolicy::FatPipe)? {
        LinkPolicy::FatPipe => Ok(false),
        LinkPolicy::Shared => Ok(true),
        LinkPolicy::SplitDuplex => Err("a loopback is shared or fatpipe".into()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    id: Option<String>,
    hosts: Option<u64>,
    radical: Option<String>,
    prefix: Option<String>,
    suffix: Option<String>,
    speed: Option<Speed>,
    cores: Option<u32>,
    watts: Option<String>,
    watts_off: Option<f64>,
    bandwidth: Bw,
    latency: Time,
    sharing: Option<String>,
    backbone: Option<LinkChars>,
    loopback: Option<LinkChars>,
    limiter: Option<Bw>,
    router: Option<String>,
    topology: Option<String>,
    down: Option<Vec<u32>>,
    up: Option<Vec<u32>>,
    parallel: Option<Vec<u32>>,
    dims: Option<Vec<u32>>,
    groups: Option<u32>,
    group_links: Option<u32>,
    chassis: Option<u32>,
    chassis_links: Option<u32>,
    routers: Option<u32>,
    router_links: Option<u32>,
    nodes: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    name: Spanned<String>,
    speed: Option<Speed>,
    cores: Option<u32>,
    watts: Option<String>,
    watts_off: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouterEntry {
    name: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkEntry {
    name: Spanned<String>,
    bandwidth: Bw,
    latency: Option<Time>,
    sharing: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteSpecEntry {
    src: Spanned<String>,
    dst: Spanned<String>,
    links: Spanned<Vec<String>>,
    symmetric: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[allow(dead_code)]
    name: Option<String>,
    cluster: Option<Spanned<Section>>,
    fat_tree: Option<Spanned<Section>>,
    torus: Option<Spanned<Section>>,
    dragonfly: Option<Spanned<Section>>,
    routing: Option<Spanned<String>>,
    loopback: Option<LoopbackKey>,
    #[serde(default)]
    host: Vec<HostEntry>,
    #[serde(default)]
    router: Vec<RouterEntry>,
    #[serde(default)]
    link: Vec<LinkEntry>,
    #[serde(default)]
    route: Vec<RouteSpecEntry>,
    /// Simulation options by SimGrid's names (`"smpi/bw-factor" = "65472:0.94;0:0.81"`).
    #[serde(default)]
    config: std::collections::BTreeMap<Spanned<String>, ::toml::Value>,
}

/// Error builder with line numbers from byte offsets.
struct Ctx<'a> {
    text: &'a str,
    path: &'a str,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn err(&self, span: std::ops::Range<usize>, message: impl Into<String>) -> PlatformError {
        PlatformError::Syntax {
            path: self.path.to_string(),
            line: self.line(span.start),
            message: message.into(),
        }
    }
}

fn policy(s: Option<&str>, default: LinkPolicy) -> Result<LinkPolicy, String> {
    match s {
        None => Ok(default),
        Some(p) => LinkPolicy::parse(p)
            .ok_or_else(|| format!("sharing must be splitduplex, shared or fatpipe, not `{p}`")),
    }
}

fn power(watts: Option<&str>, off: Option<f64>) -> Result<HostPower, String> {
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

/// Reads our TOML platform format from a string; `name` names it in errors.
pub fn from_toml_str(text: &str, name: &str) -> Result<Platform, PlatformError> {
    let ctx = Ctx { text, path: name };
    let mut file: File = ::toml::from_str(text).map_err(|e| PlatformError::Syntax {
        path: name.to_string(),
        line: e.span().map(|s| ctx.line(s.start)).unwrap_or(0),
        message: e.message().trim().to_string(),
    })?;
    let mut warnings = Vec::new();
    let config = std::mem::take(&mut file.config)
        .into_iter()
        .map(|(key, v)| {
            let span = key.span();
            let k = key.into_inner();
            if let Some(message) = super::config::check_key(&k, super::config::Format::Toml) {
                warnings.push(super::config::OptionWarning {
                    path: name.to_string(),
                    line: ctx.line(span.start),
                    key: k.clone(),
                    message,
                });
            }
            match v {
                ::toml::Value::String(s) => Ok((k, s)),
                ::toml::Value::Integer(i) => Ok((k, i.to_string())),
                ::toml::Value::Float(f) => Ok((k, f.to_string())),
                ::toml::Value::Boolean(b) => Ok((k, b.to_string())),
                _ => Err(ctx.err(
                    span,
                    format!("[config] `{k}`: expected a string, a number or a boolean"),
                )),
            }
        })
        .collect::<Result<_, _>>()?;
    let mut platform = platform_of(&ctx, file)?;
    platform.config = config;
    platform.warnings = warnings;
    Ok(platform)
}

fn platform_of(ctx: &Ctx, file: File) -> Result<Platform, PlatformError> {
    let sections = [
        ("cluster", &file.cluster),
        ("fat_tree", &file.fat_tree),
        ("torus", &file.torus),
        ("dragonfly", &file.dragonfly),
    ];
    let given: Vec<_> = sections.iter().filter(|(_, s)| s.is_some()).collect();
    let explicit = !file.host.is_empty()
        || !file.router.is_empty()
        || !file.link.is_empty()
        || !file.route.is_empty();
    match given.as_slice() {
        [] if explicit => explicit_platform(ctx, file),
        [] => Err(ctx.err(
            0..0,
            "no platform: give a [cluster], [fat_tree], [torus] or [dragonfly] section, or [[host]] lists",
        )),
        [(kind, Some(sec))] => {
            if explicit || file.routing.is_some() || file.loopback.is_some() {
                return Err(ctx.err(
                    sec.span(),
                    format!("[{kind}] cannot be combined with explicit hosts, links, routes or routing"),
                ));
            }
            generated(ctx, kind, sec)
        }
        _ => Err(ctx.err(0..0, "give only one generator section")),
    }
}

fn generated(ctx: &Ctx, kind: &str, sec: &Spanned<Section>) -> Result<Platform, PlatformError> {
    let span = sec.span();
    let s = sec.get_ref();
    let err = |m: String| ctx.err(span.clone(), format!("[{kind}]: {m}"));
    let not_for = |present: bool, key: &str| -> Result<(), PlatformError> {
        if present {
            Err(err(format!("key `{key}` does not apply here")))
        } else {
            Ok(())
        }
    };
    let is = |k: &str| kind == k;
    not_for(!is("cluster") && s.backbone.is_some(), "backbone")?;
    not_for(!is("cluster") && s.router.is_some(), "router")?;
    not_for(is("cluster") && s.topology.is_some(), "topology")?;
    not_for(
        !is("fat_tree") && (s.down.is_some() || s.up.is_some() || s.parallel.is_some()),
        "down/up/parallel",
    )?;
    not_for(!is("torus") && s.dims.is_some(), "dims")?;
    let df_keys = s.groups.is_some()
        || s.group_links.is_some()
        || s.chassis.is_some()
        || s.chassis_links.is_some()
        || s.routers.is_some()
        || s.router_links.is_some()
        || s.nodes.is_some();
    not_for(!is("dragonfly") && df_keys, "groups/chassis/routers/nodes")?;
    let radicals = match (&s.radical, s.hosts) {
        (Some(_), Some(_)) => return Err(err("give `hosts` or `radical`, not both".into())),
        (Some(r), None) => parse_radicals(r).map_err(&err)?,
        (None, Some(n)) if n <= 1 << 24 => (0..n).collect(),
        (None, Some(n)) => return Err(err(format!("{n} hosts is too many"))),
        (None, None) if is("cluster") => return Err(err("give `hosts` or `radical`".into())),
        (None, None) => Vec::new(),
    };
    let host_count = radicals.len();
    let spec = ClusterSpec {
        id: s.id.clone().unwrap_or_else(|| "cluster".into()),
        prefix: s.prefix.clone().unwrap_or_else(|| "node-".into()),
        suffix: s.suffix.clone().unwrap_or_default(),
        radicals,
        host: HostSpec {
            speed: s.speed.map_or(1e9, |v| v.0),
            cores: s.cores.unwrap_or(1),
            power: power(s.watts.as_deref(), s.watts_off).map_err(&err)?,
        },
        bandwidth: s.bandwidth.0,
        latency: s.latency.0,
        sharing: policy(s.sharing.as_deref(), LinkPolicy::SplitDuplex).map_err(&err)?,
        backbone: match &s.backbone {
            Some(b) => Some(BackboneSpec {
                bandwidth: b.bandwidth.0,
                latency: b.latency.map_or(0.0, |t| t.0),
                sharing: match policy(b.sharing.as_deref(), LinkPolicy::Shared).map_err(&err)? {
                    LinkPolicy::FatPipe => Sharing::FatPipe,
                    LinkPolicy::Shared => Sharing::Shared,
                    LinkPolicy::SplitDuplex => {
                        return Err(err("a backbone is shared or fatpipe".into()))
                    }
                },
            }),
            None => None,
        },
        loopback: match s.loopback.as_ref() {
            Some(l) => Some(LoopbackSpec {
                bandwidth: l.bandwidth.0,
                latency: l.latency.map_or(0.0, |t| t.0),
                shared: loopback_shared(l.sharing.as_deref()).map_err(&err)?,
            }),
            None => None,
        },
        limiter: s.limiter.map(|b| b.0),
        router_id: s.router.clone(),
    };
    let check_count = |n: u64| -> Result<(), PlatformError> {
        if host_count != 0 && host_count as u64 != n {
            Err(err(format!("the topology has {n} hosts, not {host_count}")))
        } else {
            Ok(())
        }
    };
    let wrap = |e: PlatformError| err(e.to_string());
    match kind {
        "cluster" => cluster::cluster(spec).map_err(wrap),
        "fat_tree" => {
            let ft = match (&s.topology, &s.down, &s.up, &s.parallel) {
                (Some(t), None, None, None) => FatTreeSpec::new(spec, t).map_err(wrap)?,
                (None, Some(d), Some(u), p) => FatTreeSpec {
                    cluster: spec,
                    down: d.clone(),
                    up: u.clone(),
                    parallel: p.clone().unwrap_or_else(|| vec![1; d.len()]),
                },
                _ => {
                    return Err(err(
                        "give `topology` or `down` and `up` (and optionally `parallel`)".into(),
                    ))
                }
            };
            check_count(ft.hosts())?;
            fat_tree::fat_tree(ft).map_err(wrap)
        }
        "torus" => {
            let t = match (&s.topology, &s.dims) {
                (Some(t), None) => TorusSpec::new(spec, t).map_err(wrap)?,
                (None, Some(d)) => TorusSpec {
                    cluster: spec,
                    dims: d.clone(),
                },
                _ => return Err(err("give `topology` or `dims`".into())),
            };
            check_count(t.hosts())?;
            torus::torus(t).map_err(wrap)
        }
        _ => {
            let d = match &s.topology {
                Some(t) if !df_keys => DragonflySpec::new(spec, t).map_err(wrap)?,
                None => {
                    let get = |v: Option<u32>, k: &str, default: Option<u32>| {
                        v.or(default).ok_or_else(|| err(format!("missing `{k}`")))
                    };
                    DragonflySpec {
                        cluster: spec,
                        groups: get(s.groups, "groups", None)?,
                        group_links: get(s.group_links, "group_links", Some(1))?,
                        chassis: get(s.chassis, "chassis", None)?,
                        chassis_links: get(s.chassis_links, "chassis_links", Some(1))?,
                        routers: get(s.routers, "routers", None)?,
                        router_links: get(s.router_links, "router_links", Some(1))?,
                        nodes: get(s.nodes, "nodes", None)?,
                    }
                }
                Some(_) => return Err(err("give `topology` or the counts, not both".into())),
            };
            check_count(d.hosts())?;
            dragonfly::dragonfly(d).map_err(wrap)
        }
    }
}

/// Parses `"name"`, `"name:UP"`, `"name:DOWN"`.
fn link_ref(s: &str) -> LinkRef {
    if let Some((n, d)) = s.rsplit_once(':') {
        match d.to_ascii_uppercase().as_str() {
            "UP" => return LinkRef::dir(n, Direction::Up),
            "DOWN" => return LinkRef::dir(n, Direction::Down),
            _ => {}
        }
    }
    LinkRef::new(s)
}

fn explicit_platform(ctx: &Ctx, file: File) -> Result<Platform, PlatformError> {
    let routing = match &file.routing {
        None => "shortest",
        Some(r) => match r.get_ref().as_str() {
            "shortest" => "shortest",
            "full" => "full",
            other => {
                return Err(ctx.err(
                    r.span(),
                    format!("routing must be \"shortest\" or \"full\", not `{other}`"),
                ))
            }
        },
    };
    let loopback = match &file.loopback {
        None | Some(LoopbackKey::Enabled(true)) => Some(LoopbackSpec {
            bandwidth: 1e10,
            latency: 0.0,
            shared: false,
        }),
        Some(LoopbackKey::Enabled(false)) => None,
        Some(LoopbackKey::Link {
            bandwidth,
            latency,
            sharing,
        }) => Some(LoopbackSpec {
            bandwidth: bandwidth.0,
            latency: latency.map_or(0.0, |t| t.0),
            shared: loopback_shared(sharing.as_deref())
                .map_err(|e| ctx.err(0..0, format!("loopback: {e}")))?,
        }),
    };
    let mut hosts = Vec::new();
    for h in &file.host {
        let span = h.name.span();
        let p = power(h.watts.as_deref(), h.watts_off).map_err(|e| ctx.err(span.clone(), e))?;
        hosts.push(GraphHost {
            name: h.name.get_ref().clone(),
            host: HostSpec {
                speed: h.speed.map_or(1e9, |v| v.0),
                cores: h.cores.unwrap_or(1),
                power: p,
            },
        });
    }
    let mut links = Vec::new();
    for l in &file.link {
        links.push(GraphLink {
            name: l.name.get_ref().clone(),
            bandwidth: l.bandwidth.0,
            latency: l.latency.map_or(0.0, |t| t.0),
            policy: policy(l.sharing.as_deref(), LinkPolicy::Shared)
                .map_err(|e| ctx.err(l.name.span(), e))?,
        });
    }
    let edges: Vec<GraphEdge> = file
        .route
        .iter()
        .map(|r| GraphEdge {
            src: r.src.get_ref().clone(),
            dst: r.dst.get_ref().clone(),
            links: r.links.get_ref().iter().map(|s| link_ref(s)).collect(),
            symmetric: r.symmetric.unwrap_or(true),
        })
        .collect();
    let first_line = |spans: Vec<std::ops::Range<usize>>| spans.into_iter().next().unwrap_or(0..0);
    if routing == "shortest" {
        let spec = GraphSpec {
            hosts,
            routers: file
                .router
                .iter()
                .map(|r| r.name.get_ref().clone())
                .collect(),
            links,
            edges,
            loopback,
        };
        return graph::graph(spec).map_err(|e| {
            // Point at the entry the message names, if any.
            let msg = e.to_string();
            let span = file
                .route
                .iter()
                .find(|r| {
                    msg.contains(&format!("`{}`", r.src.get_ref()))
                        || msg.contains(&format!("`{}`", r.dst.get_ref()))
                        || r.links
                            .get_ref()
                            .iter()
                            .any(|l| msg.contains(&format!("`{}`", link_ref(l).name)))
                })
                .map(|r| r.src.span())
                .or_else(|| {
                    file.link
                        .iter()
                        .find(|l| msg.contains(&format!("`{}`", l.name.get_ref())))
                        .map(|l| l.name.span())
                })
                .or_else(|| {
                    file.host
                        .iter()
                        .find(|h| msg.contains(&format!("`{}`", h.name.get_ref())))
                        .map(|h| h.name.span())
                })
                .unwrap_or_else(|| first_line(vec![]));
            ctx.err(span, msg)
        });
    }
    // Full routing: one SimGrid Full zone.
    let mut parts = Parts::default();
    let mut tree = ZoneTree::default();
    let z = tree.add_zone(
        "root".into(),
        None,
        Local::Routed(Routed::new(RoutedKind::Full)),
    );
    let mut names = std::collections::HashMap::new();
    for (h, e) in hosts.iter().zip(&file.host) {
        super::check_host(&format!("host `{}`", h.name), &h.host)
            .map_err(|x| ctx.err(e.name.span(), x.to_string()))?;
        let id = parts.add_host(h.name.clone(), &h.host);
        if names.insert(h.name.clone(), NetPoint::Host(id)).is_some() {
            return Err(ctx.err(e.name.span(), format!("`{}` is declared twice", h.name)));
        }
        tree.add_host(z, id, h.name.clone());
    }
    for r in &file.router {
        let (id, _) = tree.add_router(z, r.name.get_ref().clone());
        if names
            .insert(r.name.get_ref().clone(), NetPoint::Router(id))
            .is_some()
        {
            return Err(ctx.err(
                r.name.span(),
                format!("`{}` is declared twice", r.name.get_ref()),
            ));
        }
    }
    let mut table = LinkTable::new();
    for (l, e) in links.iter().zip(&file.link) {
        let bad = |x: PlatformError| ctx.err(e.name.span(), x.to_string());
        super::check_bandwidth(&format!("link `{}`", l.name), l.bandwidth).map_err(bad)?;
        super::check_latency(&format!("link `{}`", l.name), l.latency).map_err(bad)?;
        let (up, down) = parts.add_cable(&l.name, l.bandwidth, l.latency, l.policy);
        table
            .add(&l.name, l.policy, up, down, &parts)
            .map_err(|m| ctx.err(e.name.span(), m))?;
    }
    let lb = match &loopback {
        Some(l) => {
            super::check_bandwidth("loopback", l.bandwidth)?;
            super::check_latency("loopback", l.latency)?;
            Some(parts.add_link(
                "__loopback__".into(),
                l.bandwidth,
                l.latency,
                Sharing::FatPipe,
            ))
        }
        None => None,
    };
    for (edge, r) in edges.iter().zip(&file.route) {
        let span = r.src.span();
        let vertex = |n: &str| -> Result<u32, PlatformError> {
            match names.get(n) {
                Some(&NetPoint::Host(h)) => Ok(tree.host_loc[h as usize].1),
                Some(&NetPoint::Router(x)) => Ok(tree.router_loc[x as usize].1),
                _ => Err(ctx.err(span.clone(), format!("no host or router `{n}`"))),
            }
        };
        let (sv, dv) = (vertex(&edge.src)?, vertex(&edge.dst)?);
        if edge.links.is_empty() {
            return Err(ctx.err(r.links.span(), "a route needs links"));
        }
        let resolve = |rev: bool| -> Result<Vec<u32>, PlatformError> {
            let mut v = Vec::new();
            let refs: Vec<&LinkRef> = if rev {
                edge.links.iter().rev().collect()
            } else {
                edge.links.iter().collect()
            };
            for l in refs {
                v.push(
                    table
                        .resolve(l, rev)
                        .map_err(|m| ctx.err(r.links.span(), m))?,
                );
            }
            Ok(v)
        };
        let fwd = resolve(false)?;
        let back = if edge.symmetric && sv != dv {
            Some(resolve(true)?)
        } else {
            None
        };
        if let Local::Routed(rt) = &mut tree.zones[z as usize].local {
            rt.add(
                sv,
                dv,
                RouteEntry {
                    links: fwd,
                    gw: None,
                },
            )
            .map_err(|m| ctx.err(span.clone(), m))?;
            if let Some(b) = back {
                rt.add(dv, sv, RouteEntry { links: b, gw: None })
                    .map_err(|m| ctx.err(span.clone(), m))?;
            }
        }
    }
    let n = tree.zones[z as usize].vertices.len();
    if let Local::Routed(rt) = &mut tree.zones[z as usize].local {
        rt.seal(n, lb);
    }
    if parts.hosts.is_empty() {
        return Err(ctx.err(0..0, "the platform has no hosts"));
    }
    parts.finish(Box::new(tree))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_toml_config_options() {
        let text = "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n\n[config]\n\"smpi/bw-factor\" = \"0:0.5\"\n\"smpi/send-is-detached-thresh\" = 1024\n\"network/crosstraffic\" = false\n";
        let p = from_toml_str(text, "c.toml").unwrap();
        assert_eq!(p.config["smpi/bw-factor"], "0:0.5");
        assert_eq!(p.config["smpi/send-is-detached-thresh"], "1024");
        assert_eq!(p.config["network/crosstraffic"], "false");
        let bad = text.replace("= 1024", "= [1024]");
        let e = from_toml_str(&bad, "c.toml").err().unwrap().to_string();
        assert!(e.contains("smpi/send-is-detached-thresh"), "{e}");
        // SimGrid XML: <config> props, kept by name.
        let xml = "<?xml version='1.0'?><platform version=\"4.1\"><config><prop id=\"smpi/lat-factor\" value=\"0:2\"/></config><zone id=\"z\" routing=\"Full\"><host id=\"a\" speed=\"1Gf\"/></zone></platform>";
        let p = crate::platform::xml::from_simgrid_xml_str(xml, "p.xml").unwrap();
        assert_eq!(p.config["smpi/lat-factor"], "0:2");
    }

    #[test]
    fn platform_toml_loopback_sharing() {
        let text = "[cluster]\nhosts = 1\nbandwidth = \"1GBps\"\nlatency = \"1us\"\nloopback = { bandwidth = \"5GBps\", sharing = \"shared\" }\n";
        let lb = |p: &Platform| {
            p.links
                .iter()
                .find(|l| l.name.ends_with("loopback"))
                .unwrap()
                .sharing
        };
        let p = from_toml_str(text, "c.toml").unwrap();
        assert_eq!(lb(&p), Sharing::Shared);
        let p = from_toml_str(&text.replace(", sharing = \"shared\"", ""), "c.toml").unwrap();
        assert_eq!(lb(&p), Sharing::FatPipe);
        // Top-level loopback of an explicit platform, and a policy a loopback cannot have.
        let e = from_toml_str(&text.replace("\"shared\"", "\"splitduplex\""), "c.toml")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("loopback is shared or fatpipe"), "{e}");
    }

    #[test]
    fn platform_toml_generators() {
        let p = from_toml_str(
            r#"
[cluster]
id = "c"
prefix = "n"
hosts = 4
bandwidth = "10Gbps"
latency = "1us"
cores = 4
watts = "100:200"
backbone = { bandwidth = "100Gbps", latency = "500ns", sharing = "fatpipe" }
"#,
            "c.toml",
        )
        .unwrap();
        assert_eq!(p.hosts.len(), 4);
        assert_eq!(p.hosts[0].cores, 4);
        assert_eq!(
            (p.hosts[0].watts_idle, p.hosts[0].watts_max),
            (100.0, 200.0)
        );
        assert_eq!(
            p.route_names(0, 1).unwrap(),
            ["c_link_0_UP", "c_backbone", "c_link_1_DOWN"]
        );
        assert_eq!(p.links[0].bandwidth, 1.25e10);
        let bb = p.link_id("c_backbone").unwrap() as usize;
        assert_eq!(p.links[bb].sharing, Sharing::FatPipe);

        let p = from_toml_str(
            "[fat_tree]\nbandwidth = 1e9\nlatency = 1e-5\ntopology = \"2;4,4;1,2;1,2\"\n",
            "ft.toml",
        )
        .unwrap();
        assert_eq!(p.hosts.len(), 16);
        assert_eq!(p.hosts[3].name, "node-3");
        let p2 = from_toml_str(
            "[fat_tree]\nbandwidth = 1e9\nlatency = 1e-5\ndown = [4, 4]\nup = [1, 2]\nparallel = [1, 2]\n",
            "ft2.toml",
        )
        .unwrap();
        for (a, b) in [(0, 10), (3, 7), (15, 15)] {
            assert_eq!(p.route_names(a, b).unwrap(), p2.route_names(a, b).unwrap());
        }
        let p = from_toml_str(
            "[torus]\nbandwidth = \"1GBps\"\nlatency = \"10us\"\ndims = [4, 4]\nloopback = { bandwidth = \"10GBps\" }\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(p.hosts.len(), 16);
        assert_eq!(p.route_names(5, 5).unwrap(), ["cluster_link_5_loopback"]);
        let p = from_toml_str(
            "[dragonfly]\nbandwidth = \"1GBps\"\nlatency = \"10us\"\ngroups = 2\nchassis = 2\nrouters = 2\nnodes = 2\n",
            "d.toml",
        )
        .unwrap();
        assert_eq!(p.hosts.len(), 16);
        let mut out = Vec::new();
        p.route(0, 15, &mut out).unwrap();
        assert_eq!(out.len(), 6);
    }

    #[test]
    fn platform_toml_explicit() {
        let text = r#"
routing = "shortest"

[[host]]
name = "a"
speed = "2Gf"
cores = 8
watts = "100:93:200"
watts_off = 5

[[host]]
name = "b"

[[router]]
name = "r"

[[link]]
name = "ar"
bandwidth = "10Gbps"
latency = "2us"
sharing = "splitduplex"

[[link]]
name = "rb"
bandwidth = 1.25e9
latency = 2e-6

[[route]]
src = "a"
dst = "r"
links = ["ar:UP"]

[[route]]
src = "r"
dst = "b"
links = ["rb"]
"#;
        let p = from_toml_str(text, "e.toml").unwrap();
        assert_eq!(p.route_names(0, 1).unwrap(), ["ar_UP", "rb"]);
        assert_eq!(p.route_names(1, 0).unwrap(), ["rb", "ar_DOWN"]);
        assert_eq!(p.route_names(0, 0).unwrap(), ["__loopback__"]);
        let pw = p.host_power(0);
        assert_eq!(
            (pw.idle, pw.epsilon, pw.max, pw.off),
            (100.0, 93.0, 200.0, 5.0)
        );
        assert_eq!(p.hosts[0].speed, 2e9);
        // Full routing: only the declared routes exist.
        let full = text.replace("routing = \"shortest\"", "routing = \"full\"");
        let p = from_toml_str(&full, "f.toml").unwrap();
        assert!(matches!(
            p.route(0, 1, &mut Vec::new()),
            Err(PlatformError::NoRoute { .. })
        ));
        let full = full.replace("dst = \"r\"", "dst = \"b\"");
        let p = from_toml_str(&full, "f.toml").unwrap();
        assert_eq!(p.route_names(0, 1).unwrap(), ["ar_UP"]);
        assert_eq!(p.route_names(0, 0).unwrap(), ["__loopback__"]);
    }

    #[test]
    fn platform_toml_documented_examples_parse() {
        // The examples of the module documentation are valid platforms.
        let src = include_str!("toml.rs");
        let mut blocks = Vec::new();
        let mut cur: Option<String> = None;
        for line in src.lines().filter_map(|l| l.strip_prefix("//!")) {
            let line = line.strip_prefix(' ').unwrap_or(line);
            match (&mut cur, line.trim()) {
                (None, "```toml") => cur = Some(String::new()),
                (Some(_), "```") => blocks.extend(cur.take()),
                (Some(b), _) => {
                    b.push_str(line);
                    b.push('\n');
                }
                _ => {}
            }
        }
        assert_eq!(blocks.len(), 3);
        let p = from_toml_str(&blocks[0], "doc1.toml").unwrap();
        assert_eq!(p.hosts.len(), 16);
        assert_eq!(p.hosts[0].cores, 4);
        // The options block, added to the first platform.
        let p = from_toml_str(&(blocks[0].clone() + &blocks[1]), "doc1.toml").unwrap();
        assert_eq!(p.config["network/model"], "SMPI");
        let p = from_toml_str(&blocks[2], "doc2.toml").unwrap();
        assert_eq!(p.route_names(0, 1).unwrap(), ["ar_UP", "rb"]);
    }

    #[test]
    fn platform_toml_errors_name_lines() {
        let e = from_toml_str(
            "[cluster]\nhosts = 4\nbandwidth = \"10Gbits\"\nlatency = 1\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("x.toml:3:") && e.contains("Gbits"), "{e}");
        let e = from_toml_str(
            "[cluster]\nhosts = 4\nbandwidth = 1\nlatency = 1\ncolor = 2\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("x.toml:") && e.contains("color"), "{e}");
        let e = from_toml_str(
            "[torus]\nbandwidth = 1\nlatency = 1\ndims = [2, 2]\nhosts = 5\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("4 hosts"), "{e}");
        let e = from_toml_str(
            "[[host]]\nname = \"a\"\n[[link]]\nname = \"l\"\nbandwidth = 1\n[[route]]\nsrc = \"a\"\ndst = \"zz\"\nlinks = [\"l\"]\n",
            "x.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("x.toml:7:") && e.contains("zz"), "{e}");
        assert!(from_toml_str("", "x.toml").is_err());
        assert!(from_toml_str("[cluster]\n[torus]\n", "x.toml").is_err());
        assert!(from_toml_str("[cluster\n", "x.toml")
            .unwrap_err()
            .to_string()
            .starts_with("x.toml:1:"));
    }
}

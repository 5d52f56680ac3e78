//! A generator section (`[cluster]`, `[fat_tree]`, `[torus]`, `[dragonfly]`): its keys
//! checked against the topology, the cluster they describe, and the generator's platform.

use ::toml::Spanned;

use super::file::{loopback_shared, policy, power, Ctx, Section};
use crate::platform::topology::cluster::{parse_radicals, BackboneSpec, ClusterSpec, LoopbackSpec};
use crate::platform::{
    cluster, dragonfly, fat_tree, torus, DragonflySpec, FatTreeSpec, HostSpec, LinkPolicy,
    Platform, PlatformError, Sharing, TorusSpec,
};

/// An error about the section, with its line.
type Err<'a> = dyn Fn(String) -> PlatformError + 'a;

/// The platform of generator section `sec`, of kind `kind` (its name).
pub(super) fn generated(
    ctx: &Ctx,
    kind: &str,
    sec: &Spanned<Section>,
) -> Result<Platform, PlatformError> {
    let span = sec.span();
    let s = sec.get_ref();
    let err = |m: String| ctx.err(span.clone(), format!("[{kind}]: {m}"));
    check_keys(kind, s, &err)?;
    let spec = cluster_of(kind, s, &err)?;
    let host_count = spec.radicals.len();
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
            let d = dragonfly_of(spec, s, &err)?;
            check_count(d.hosts())?;
            dragonfly::dragonfly(d).map_err(wrap)
        }
    }
}

/// Whether `s` has a dragonfly's counts.
fn has_dragonfly_keys(s: &Section) -> bool {
    s.groups.is_some()
        || s.group_links.is_some()
        || s.chassis.is_some()
        || s.chassis_links.is_some()
        || s.routers.is_some()
        || s.router_links.is_some()
        || s.nodes.is_some()
}

/// Refuses the keys of another kind of section.
fn check_keys(kind: &str, s: &Section, err: &Err) -> Result<(), PlatformError> {
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
    not_for(
        !is("dragonfly") && has_dragonfly_keys(s),
        "groups/chassis/routers/nodes",
    )
}

/// The hosts and cables section `s` describes (the part every topology shares).
fn cluster_of(kind: &str, s: &Section, err: &Err) -> Result<ClusterSpec, PlatformError> {
    let radicals = match (&s.radical, s.hosts) {
        (Some(_), Some(_)) => return Err(err("give `hosts` or `radical`, not both".into())),
        (Some(r), None) => parse_radicals(r).map_err(err)?,
        (None, Some(n)) if n <= 1 << 24 => (0..n).collect(),
        (None, Some(n)) => return Err(err(format!("{n} hosts is too many"))),
        (None, None) if kind == "cluster" => return Err(err("give `hosts` or `radical`".into())),
        (None, None) => Vec::new(),
    };
    Ok(ClusterSpec {
        id: s.id.clone().unwrap_or_else(|| "cluster".into()),
        prefix: s.prefix.clone().unwrap_or_else(|| "node-".into()),
        suffix: s.suffix.clone().unwrap_or_default(),
        radicals,
        host: HostSpec {
            speed: s.speed.map_or(1e9, |v| v.0),
            cores: s.cores.unwrap_or(1),
            power: power(s.watts.as_deref(), s.watts_off).map_err(err)?,
        },
        bandwidth: s.bandwidth.0,
        latency: s.latency.0,
        sharing: policy(s.sharing.as_deref(), LinkPolicy::SplitDuplex).map_err(err)?,
        backbone: match &s.backbone {
            Some(b) => Some(BackboneSpec {
                bandwidth: b.bandwidth.0,
                latency: b.latency.map_or(0.0, |t| t.0),
                sharing: match policy(b.sharing.as_deref(), LinkPolicy::Shared).map_err(err)? {
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
                shared: loopback_shared(l.sharing.as_deref()).map_err(err)?,
            }),
            None => None,
        },
        limiter: s.limiter.map(|b| b.0),
        router_id: s.router.clone(),
    })
}

/// A dragonfly from SimGrid's `topology` or from its counts.
fn dragonfly_of(spec: ClusterSpec, s: &Section, err: &Err) -> Result<DragonflySpec, PlatformError> {
    match &s.topology {
        Some(t) if !has_dragonfly_keys(s) => {
            DragonflySpec::new(spec, t).map_err(|e| err(e.to_string()))
        }
        None => {
            let get = |v: Option<u32>, k: &str, default: Option<u32>| {
                v.or(default).ok_or_else(|| err(format!("missing `{k}`")))
            };
            Ok(DragonflySpec {
                cluster: spec,
                groups: get(s.groups, "groups", None)?,
                group_links: get(s.group_links, "group_links", Some(1))?,
                chassis: get(s.chassis, "chassis", None)?,
                chassis_links: get(s.chassis_links, "chassis_links", Some(1))?,
                routers: get(s.routers, "routers", None)?,
                router_links: get(s.router_links, "router_links", Some(1))?,
                nodes: get(s.nodes, "nodes", None)?,
            })
        }
        Some(_) => Err(err("give `topology` or the counts, not both".into())),
    }
}

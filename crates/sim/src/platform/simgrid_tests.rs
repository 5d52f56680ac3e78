//! Differential tests against SimGrid 3.32.
//!
//! * Golden routes: `testdata/*.xml` are platforms written for these tests; each
//!   `testdata/*.routes` lists the routes SimGrid 3.32 computes on it (link names and
//!   latency, for all host pairs of small platforms and a sample of big ones), made with
//!   `testdata/route_oracle.cpp` (`g++ -std=c++17 route_oracle.cpp -lsimgrid`) by
//!   `testdata/gen_golden.py`. Our XML reader must give the same routes, link by link.
//! * SimGrid's example platforms, when a SimGrid source tree is around (`SIMGRID_EXAMPLES`
//!   or a few usual places): every one loads with the right number of hosts (except the
//!   Vivaldi and Wi-Fi ones, which must be refused clearly).
//! * `smpirun`: for each generator (cluster, fat tree, torus, dragonfly), the equivalent
//!   XML is simulated by SimGrid on a one-message trace between two hosts, and the time it
//!   prints must equal our route latency plus 17 bytes at the route's bottleneck rate.
//!   These tests fail, with a message saying so, if `smpirun` is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::format::xml::{from_simgrid_xml, from_simgrid_xml_str};
use super::*;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/platform/testdata")
}

/// Compares our routes with SimGrid's for one golden file; returns the pairs checked.
fn check_golden(xml: &Path) -> usize {
    let p = from_simgrid_xml(xml).unwrap_or_else(|e| panic!("{e}"));
    let routes = xml.with_extension("routes");
    let text =
        std::fs::read_to_string(&routes).unwrap_or_else(|e| panic!("{}: {e}", routes.display()));
    let mut n = 0;
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let v: Vec<&str> = line.split_whitespace().collect();
        let (a, b) = (p.host_id(v[0]).unwrap(), p.host_id(v[1]).unwrap());
        let what = format!("{}: {} -> {}", xml.display(), v[0], v[1]);
        let got = p.route(a, b, &mut out);
        if v[2] == "EMPTY" {
            // SimGrid has no link there: a message would abort SimGrid.
            assert!(
                matches!(got, Err(PlatformError::NoRoute { .. })),
                "{what}: {got:?}"
            );
        } else {
            let lat = got.unwrap_or_else(|e| panic!("{what}: {e}"));
            let want: f64 = v[2].parse().unwrap();
            assert!(
                (lat - want).abs() <= 1e-12 * want.max(1e-6),
                "{what}: latency {lat} vs {want}"
            );
            let names: Vec<&str> = out
                .iter()
                .map(|&l| p.links[l as usize].name.as_str())
                .collect();
            assert_eq!(names, v[3..], "{what}");
        }
        n += 1;
    }
    n
}

#[test]
fn platform_simgrid_golden_routes() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(testdata())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "golden platforms missing");
    let mut total = 0;
    for f in &files {
        total += check_golden(f);
    }
    eprintln!(
        "{} platforms, {total} routes identical to SimGrid's",
        files.len()
    );
}

/// Host counts of SimGrid 3.32's example platforms (`examples/platforms`), as SimGrid
/// loads them.
const EXAMPLE_HOSTS: &[(&str, usize)] = &[
    ("bypassRoute.xml", 4),
    ("bypassZoneRoute.xml", 3),
    ("cluster_and_one_host.xml", 3),
    ("cluster_backbone.xml", 100),
    ("cluster_crossbar.xml", 65536),
    ("cluster_dragonfly.xml", 120),
    ("cluster_fat_tree.xml", 16),
    ("cluster_multi.xml", 24),
    ("cluster_torus.xml", 12),
    ("config.xml", 2),
    ("config_tracing.xml", 5),
    ("crosstraffic.xml", 2),
    ("dogbone.xml", 4),
    ("energy_boot.xml", 2),
    ("energy_cluster.xml", 2),
    ("energy_platform.xml", 3),
    ("faulty_host.xml", 2),
    ("g5k.xml", 1528),
    ("griffon.xml", 92),
    ("hosts_with_disks.xml", 3),
    ("meta_cluster.xml", 60),
    ("model_checker_platform.xml", 4),
    ("multicore_machine.xml", 1),
    ("ns3-big-cluster.xml", 57),
    ("onelink.xml", 2),
    ("prop.xml", 7),
    ("ptask_L07.xml", 8),
    ("routing_cluster.xml", 6),
    ("simulacrum_7_hosts.xml", 7),
    ("small_platform.xml", 7),
    ("small_platform_failures.xml", 5),
    ("small_platform_fatpipe.xml", 4),
    ("small_platform_one_link_routes.xml", 6),
    ("small_platform_profile.xml", 2),
    ("small_platform_routing_none.xml", 7),
    ("small_platform_with_routers.xml", 5),
    ("three_multicore_hosts.xml", 3),
    ("two_hosts.xml", 2),
    ("two_hosts_platform_shared.xml", 2),
    ("two_hosts_platform_with_availability_included.xml", 2),
    ("two_hosts_profiles.xml", 2),
];

/// Example platforms that use Vivaldi or Wi-Fi zones, which we refuse.
const EXAMPLE_UNSUPPORTED: &[&str] = &[
    "cloud.xml",
    "data_center.xml",
    "two_peers.xml",
    "vivaldi.xml",
    "wifi.xml",
    "wifi_energy.xml",
    "wifi_ns3.xml",
];

fn examples_dir() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("SIMGRID_EXAMPLES") {
        candidates.push(PathBuf::from(d));
    }
    for d in [
        "/usr/share/doc/simgrid/examples/platforms",
        "/usr/share/simgrid/examples/platforms",
        "/usr/local/share/doc/simgrid/examples/platforms",
        "/tmp/sg/examples/platforms",
    ] {
        candidates.push(PathBuf::from(d));
    }
    candidates
        .into_iter()
        .find(|d| d.join("small_platform.xml").is_file())
}

#[test]
fn platform_simgrid_example_platforms_load() {
    let Some(dir) = examples_dir() else {
        eprintln!(
            "SimGrid's example platforms not found (set SIMGRID_EXAMPLES to \
             <simgrid source>/examples/platforms to check them); skipped"
        );
        return;
    };
    let mut checked = 0;
    for &(file, hosts) in EXAMPLE_HOSTS {
        let path = dir.join(file);
        if !path.is_file() {
            continue;
        }
        let p = from_simgrid_xml(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.hosts.len(), hosts, "{file}");
        // Every host reaches a few others, or fails cleanly.
        let mut out = Vec::new();
        for a in (0..p.hosts.len() as u32).step_by(1 + p.hosts.len() / 8) {
            for b in (0..p.hosts.len() as u32).step_by(1 + p.hosts.len() / 8) {
                let _ = p.route(a, b, &mut out);
            }
        }
        checked += 1;
    }
    for file in EXAMPLE_UNSUPPORTED {
        let path = dir.join(file);
        if path.is_file() {
            let e = from_simgrid_xml(&path)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains("not supported"), "{file}: {e}");
        }
    }
    eprintln!(
        "{checked} SimGrid example platforms loaded from {}",
        dir.display()
    );
    assert!(checked > 0);
}

// ---------------------------------------------------------------------------------------
// smpirun

fn smpirun() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("smpirun"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`smpirun` is not installed (not found in PATH): these differential tests need \
                 SimGrid 3.32 (Debian/Ubuntu: apt-get install libsimgrid-dev)"
            )
        })
}

/// Simulated time of a 1-byte message from `a` to `b` on `xml`, as SimGrid prints it with
/// 12 decimals.
fn smpirun_one_message(xml: &str, a: &str, b: &str) -> f64 {
    let smpirun = smpirun();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("p.xml"), xml).unwrap();
    std::fs::write(
        d.join("trace"),
        "0 init\n0 send 1 0 1\n1 init\n1 recv 0 0 1\n",
    )
    .unwrap();
    std::fs::write(d.join("index"), "trace\n").unwrap();
    std::fs::write(d.join("hosts"), format!("{a}\n{b}\n")).unwrap();
    let out = Command::new(smpirun)
        .current_dir(d)
        .args([
            "-np",
            "2",
            "-platform",
            "p.xml",
            "-hostfile",
            "hosts",
            "-replay",
            "index",
        ])
        .args([
            "--cfg=network/model:CM02",
            "--log=smpi_replay.fmt:[%.12d]%e%m%n",
            "--log=xbt_cfg.thres:warning",
            "--log=smpi_config.thres:error",
        ])
        .output()
        .expect("run smpirun");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "smpirun failed:\n{text}");
    text.lines()
        .find(|l| l.contains("Simulation time"))
        .and_then(|l| l.strip_prefix('['))
        .and_then(|l| l.split(']').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no simulation time in smpirun's output:\n{text}"))
}

/// What CM02 gives for a lone 1-byte message (17 bytes on the wire) from `a` to `b`: the
/// route latency plus 17 bytes at the bottleneck, where a SHARED link crossed by the
/// reverse route too (cross-traffic) counts 1.05 times, bounded by the TCP window.
fn expected_one_message(p: &Platform, a: HostId, b: HostId) -> f64 {
    let mut fwd = Vec::new();
    let mut back = Vec::new();
    let lat = p.route(a, b, &mut fwd).unwrap();
    p.route(b, a, &mut back).unwrap();
    let mut rate = f64::INFINITY;
    for &l in &fwd {
        let link = &p.links[l as usize];
        let w = if link.sharing == Sharing::Shared && back.contains(&l) {
            1.05
        } else {
            1.0
        };
        rate = rate.min(link.bandwidth / w);
    }
    if lat > 0.0 {
        rate = rate.min(4194304.0 / (2.0 * lat));
    }
    lat + 17.0 / rate
}

/// Checks SimGrid's time for each pair against ours, and that the XML reader builds the
/// same routes as the generator.
fn check_smpirun(name: &str, generated: &Platform, xml: &str, pairs: &[(&str, &str)]) {
    let from_xml = from_simgrid_xml_str(xml, name).unwrap();
    for &(a, b) in pairs {
        let (ha, hb) = (generated.host_id(a).unwrap(), generated.host_id(b).unwrap());
        let want = expected_one_message(generated, ha, hb);
        let (xa, xb) = (from_xml.host_id(a).unwrap(), from_xml.host_id(b).unwrap());
        assert_eq!(
            generated.route_names(ha, hb).unwrap(),
            from_xml.route_names(xa, xb).unwrap(),
            "{name}: {a} -> {b}: generator and XML differ"
        );
        let got = smpirun_one_message(xml, a, b);
        assert!(
            (got - want).abs() <= 2e-12 + 1e-9 * want,
            "{name}: {a} -> {b}: SimGrid {got:.12} s, ours {want:.12} s"
        );
    }
}

fn base(id: &str, prefix: &str, bw: f64, lat: f64) -> ClusterSpec {
    let mut c = ClusterSpec::new(0, bw, lat);
    c.id = id.into();
    c.prefix = prefix.into();
    c.radicals.clear();
    c
}

const HEAD: &str = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<zone id=\"world\" routing=\"Full\">\n";
const TAIL: &str = "</zone>\n</platform>\n";

#[test]
fn platform_simgrid_smpirun_cluster() {
    // Split-duplex cables, shared backbone (crossed both ways: 1.05), no loopback.
    let mut c = base("c", "n", 1e9, 10e-6);
    c.radicals = (0..8).collect();
    c.backbone = Some(BackboneSpec {
        bandwidth: 2e9,
        latency: 1e-6,
        sharing: Sharing::Shared,
    });
    let p = cluster(c).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-7\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\" bb_bw=\"2GBps\" bb_lat=\"1us\"/>\n{TAIL}"
    );
    check_smpirun(
        "cluster.xml",
        &p,
        &xml,
        &[("n0", "n1"), ("n3", "n7"), ("n2", "n2")],
    );
    // Shared cables, loopback: the same-host message takes the loopback.
    let mut c = base("c", "n", 1e9, 10e-6);
    c.radicals = (0..4).collect();
    c.sharing = LinkPolicy::Shared;
    c.loopback = Some(LoopbackSpec {
        bandwidth: 5e9,
        latency: 1e-6,
        shared: false,
    });
    let p = cluster(c).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\" sharing_policy=\"SHARED\" loopback_bw=\"5GBps\" loopback_lat=\"1us\"/>\n{TAIL}"
    );
    check_smpirun("cluster_lb.xml", &p, &xml, &[("n0", "n3"), ("n1", "n1")]);
}

#[test]
fn platform_simgrid_smpirun_fat_tree() {
    let spec = FatTreeSpec::new(base("ft", "n", 1e9, 10e-6), "2;4,4;1,2;1,2").unwrap();
    let p = fat_tree(spec).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"ft\" prefix=\"n\" suffix=\"\" radical=\"0-15\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\" topology=\"FAT_TREE\" topo_parameters=\"2;4,4;1,2;1,2\"/>\n{TAIL}"
    );
    check_smpirun(
        "ft.xml",
        &p,
        &xml,
        &[
            ("n0", "n1"),
            ("n0", "n4"),
            ("n3", "n15"),
            ("n0", "n0"),
            ("n9", "n6"),
        ],
    );
    // Three levels, pruned, shared cables (1.05 on every link).
    let mut c = base("p", "h", 1e9, 1e-6);
    c.sharing = LinkPolicy::Shared;
    let p = fat_tree(FatTreeSpec::new(c, "3;2,2,4;1,2,1;1,1,2").unwrap()).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"p\" prefix=\"h\" suffix=\"\" radical=\"0-15\" speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\" sharing_policy=\"SHARED\" topology=\"FAT_TREE\" topo_parameters=\"3;2,2,4;1,2,1;1,1,2\"/>\n{TAIL}"
    );
    check_smpirun(
        "ft3.xml",
        &p,
        &xml,
        &[("h0", "h15"), ("h5", "h6"), ("h12", "h1")],
    );
}

#[test]
fn platform_simgrid_smpirun_torus() {
    let p = torus(TorusSpec::new(base("t", "n", 1e9, 10e-6), "4,4").unwrap()).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"t\" prefix=\"n\" suffix=\"\" radical=\"0-15\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\" topology=\"TORUS\" topo_parameters=\"4,4\"/>\n{TAIL}"
    );
    check_smpirun(
        "tor.xml",
        &p,
        &xml,
        &[
            ("n0", "n1"),
            ("n0", "n3"),
            ("n0", "n10"),
            ("n1", "n3"),
            ("n6", "n9"),
        ],
    );
    let mut c = base("t", "n", 1e9, 2e-6);
    c.loopback = Some(LoopbackSpec {
        bandwidth: 4e9,
        latency: 1e-7,
        shared: false,
    });
    let p = torus(TorusSpec::new(c, "3,2,5").unwrap()).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"t\" prefix=\"n\" suffix=\"\" radical=\"0-29\" speed=\"1Gf\" bw=\"1GBps\" lat=\"2us\" topology=\"TORUS\" topo_parameters=\"3,2,5\" loopback_bw=\"4GBps\" loopback_lat=\"100ns\"/>\n{TAIL}"
    );
    check_smpirun(
        "tor3.xml",
        &p,
        &xml,
        &[("n0", "n29"), ("n7", "n7"), ("n13", "n2")],
    );
}

#[test]
fn platform_simgrid_smpirun_dragonfly() {
    let p = dragonfly(DragonflySpec::new(base("df", "n", 1e9, 10e-6), "2,1;2,1;2,1;2").unwrap())
        .unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"df\" prefix=\"n\" suffix=\"\" radical=\"0-15\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\" topology=\"DRAGONFLY\" topo_parameters=\"2,1;2,1;2,1;2\"/>\n{TAIL}"
    );
    check_smpirun(
        "df.xml",
        &p,
        &xml,
        &[
            ("n0", "n1"),
            ("n0", "n15"),
            ("n6", "n9"),
            ("n4", "n2"),
            ("n0", "n0"),
        ],
    );
    // Multiplied bandwidths (green ×2, black ×3, blue ×4) and a limiter.
    let mut c = base("d", "n", 1e9, 1e-6);
    c.limiter = Some(5e8);
    let p = dragonfly(DragonflySpec::new(c, "3,4;2,3;3,2;2").unwrap()).unwrap();
    let xml = format!(
        "{HEAD}<cluster id=\"d\" prefix=\"n\" suffix=\"\" radical=\"0-35\" speed=\"1Gf\" bw=\"1GBps\" lat=\"1us\" topology=\"DRAGONFLY\" topo_parameters=\"3,4;2,3;3,2;2\" limiter_link=\"500MBps\"/>\n{TAIL}"
    );
    check_smpirun(
        "df2.xml",
        &p,
        &xml,
        &[("n0", "n35"), ("n7", "n20"), ("n12", "n13")],
    );
}

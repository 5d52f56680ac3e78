//! `mpiscope report --html` in headless Chromium (Debian's `chromium`, installed by
//! scripts/deps.sh): the page of the bundled example (examples/halo.c, traced for real) and
//! of a synthetic 1,024-rank run load without a script error, pass their self-check
//! (`#selftest`: a table sorts both ways; the timeline draws, zooms and selects a rank),
//! show the run header, and their numbers are those of `report --json`.

use std::path::Path;
use std::process::Command;

use crate::common::{self, mpi_lock, tempdir, Mpi};
// The synthetic trace writer of the export tests, loaded once by `outputs`.
use crate::outputs::synthetic;

/// The DOM of `page#selftest` after its scripts ran, as Chromium dumps it.
fn dump_dom(page: &Path) -> String {
    let o = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=20000",
            "--dump-dom",
        ])
        .arg(format!("file://{}#selftest", page.display()))
        .output()
        .expect("chromium (apt-get install chromium, or scripts/deps.sh)");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The value of attribute `attr` of the element that carries `marker` (an id or a key).
fn attr(dom: &str, marker: &str, attr: &str) -> String {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the page"));
    let tag_start = dom[..at].rfind('<').unwrap();
    let tag = &dom[tag_start..tag_start + dom[tag_start..].find('>').unwrap()];
    let key = format!("{attr}=\"");
    let v = tag
        .split(&key)
        .nth(1)
        .unwrap_or_else(|| panic!("no {attr} on {tag}"));
    v[..v.find('"').unwrap()].to_owned()
}

/// The text of the element that carries `marker`.
fn text_of(dom: &str, marker: &str) -> String {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the page"));
    let body = &dom[at + dom[at..].find('>').unwrap() + 1..];
    body[..body.find('<').unwrap()].to_owned()
}

/// The checks every page passes: no script error, the self-check ok, the timeline drew.
fn loads_and_checks_itself(dom: &str) {
    assert_eq!(
        attr(dom, "id=\"js-errors\"", "data-count"),
        "0",
        "script errors: {}",
        text_of(dom, "id=\"js-errors\"")
    );
    assert_eq!(
        attr(dom, "id=\"selftest\"", "data-result"),
        "ok",
        "self-check: {}",
        text_of(dom, "id=\"selftest\"")
    );
    let drawn: u64 = attr(dom, "id=\"tl-canvas\"", "data-drawn-spans")
        .parse::<u64>()
        .unwrap()
        + attr(dom, "id=\"tl-canvas\"", "data-drawn-slices")
            .parse::<u64>()
            .unwrap();
    assert!(drawn > 0, "the timeline drew nothing");
    assert!(
        !dom.contains("src=\"http") && !dom.contains("href=\"http"),
        "the page reaches the network"
    );
}

#[test]
fn example_report_in_chromium() {
    let tmp = tempdir();
    let exe = common::build(Mpi::OpenMpi, "../../examples/halo.c", &["-lm"]);
    let (run, trace) = {
        let _g = mpi_lock();
        common::run_traced(Mpi::OpenMpi, 4, &exe, &["50"], &[], tmp.path())
    };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let page = tmp.path().join("report.html");
    common::html_report(&trace, &page);
    let json = common::report_json(&trace);
    let dom = dump_dom(&page);
    loads_and_checks_itself(&dom);
    // The run header: the command as recorded, the rank count.
    let command = text_of(&dom, "data-key=\"command\"");
    assert!(
        command.contains("mpirun") && command.contains("halo 50"),
        "{command}"
    );
    assert_eq!(text_of(&dom, "data-key=\"ranks\""), "4");
    assert!(text_of(&dom, "data-key=\"mpi\"").contains("openmpi"));
    // Every call at full detail, one lane per rank, message lines when zoomed in.
    assert_eq!(attr(&dom, "id=\"tl-canvas\"", "data-lanes"), "4");
    assert_eq!(
        attr(&dom, "id=\"tl-embedded\"", "data-spans-embedded"),
        attr(&dom, "id=\"tl-embedded\"", "data-spans-total")
    );
    let messages: u64 = attr(&dom, "id=\"tl-embedded\"", "data-messages-total")
        .parse()
        .unwrap();
    // halo.c: each rank exchanges with its neighbours (no wrap-around) once per iteration;
    // every message sent is paired with its receive.
    let sent: u64 = json["p2p"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["messages"].as_u64().unwrap())
        .sum();
    assert_eq!((messages, sent), (2 * 3 * 50, 2 * 3 * 50));
    // The numbers are those of `report --json`.
    let v = |key: &str| -> f64 {
        attr(&dom, &format!("data-key=\"{key}\""), "data-v")
            .parse()
            .unwrap()
    };
    let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
    let totals = &json["totals"];
    assert!(same(v("mpi_s"), totals["mpi_s"].as_f64().unwrap()));
    assert!(same(v("app_s"), totals["app_s"].as_f64().unwrap()));
    assert!(same(v("mpi_pct"), totals["mpi_pct"].as_f64().unwrap()));
    let sendrecv = json["calls"]["MPI_Sendrecv"]["count"].as_u64().unwrap();
    let functions = &dom[dom.find("id=\"t-functions\"").unwrap()..];
    let row = &functions[functions.find("<td>MPI_Sendrecv</td>").unwrap()..];
    assert!(
        row.contains(&format!(">{sendrecv}</td>")),
        "MPI_Sendrecv count {sendrecv}: {}",
        &row[..300]
    );
    let ranks_table = &dom[dom.find("id=\"t-ranks\"").unwrap()..];
    let ranks_table = &ranks_table[..ranks_table.find("</table>").unwrap()];
    assert_eq!(
        ranks_table.matches("<tr>").count(),
        1 + 4 + 1,
        "head, 4 ranks, totals"
    );
    for section in [
        "t-callsites",
        "t-sizes",
        "t-pairs",
        "balance-summary",
        "structure",
    ] {
        assert!(dom.contains(&format!("id=\"{section}\"")), "no {section}");
    }
}

/// 1,024 ranks: aggregate lanes, a grouped matrix with rank labels, the same checks.
#[test]
fn aggregate_lanes_at_1024_ranks() {
    let tmp = tempdir();
    let run = tmp.path().join("run");
    let n = 1024u32;
    synthetic::write_run(&run, n, |rank, b| {
        b.call("MPI_Init", 500, 1000, &[], &[]);
        let right = i64::from((rank + 1) % n);
        let left = i64::from((rank + n - 1) % n);
        for _ in 0..3 {
            if rank % 2 == 0 {
                b.call(
                    "MPI_Send",
                    100 + u64::from(rank),
                    50,
                    &synthetic::p2p(right, 1, 4, 4),
                    &[],
                );
                b.call("MPI_Recv", 100, 50, &synthetic::p2p(left, 1, 4, 4), &[]);
            } else {
                b.call("MPI_Recv", 100, 50, &synthetic::p2p(left, 1, 4, 4), &[]);
                b.call(
                    "MPI_Send",
                    100 + u64::from(rank),
                    50,
                    &synthetic::p2p(right, 1, 4, 4),
                    &[],
                );
            }
        }
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    let page = tmp.path().join("report.html");
    let html = common::html_report(&run, &page);
    assert!(
        html.contains(">0-3<") && html.contains(">sender ranks<"),
        "grouped matrix labels"
    );
    let dom = dump_dom(&page);
    loads_and_checks_itself(&dom);
    assert_eq!(text_of(&dom, "data-key=\"ranks\""), "1024");
    let lanes: u32 = attr(&dom, "id=\"tl-canvas\"", "data-lanes")
        .parse()
        .unwrap();
    assert!(lanes > 1 && lanes < n, "{lanes} lanes for {n} ranks");
}

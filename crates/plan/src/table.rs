//! The results of a study as one table: a row per simulated configuration of each point,
//! written as CSV and JSON.

use serde::Serialize;

use crate::run::PointRecord;
use crate::study::{Mode, Study};

/// All results, column-oriented names with row-oriented values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Column names: `point`, the axes, `varied` and `value` (one-at-a-time), the workload's
    /// labels, then `time_s`, `gflops`, `energy_j`, `sim_wall_s`.
    pub columns: Vec<String>,
    /// Rows, one value per column (empty when not applicable).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table of `records` (finished points of `study`).
    pub fn new(study: &Study, records: &[PointRecord]) -> Table {
        let mut columns = vec!["point".to_owned()];
        columns.extend(study.axes.iter().map(|a| a.name.clone()));
        let one_at_a_time = study.mode == Mode::OneAtATime;
        if one_at_a_time {
            columns.push("varied".into());
            columns.push("value".into());
        }
        let labels: Vec<String> = records
            .iter()
            .flat_map(|r| &r.measures)
            .next()
            .map(|m| m.labels.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        columns.extend(labels.iter().cloned());
        columns.extend(crate::study::METRICS.iter().map(|m| (*m).to_owned()));
        let mut rows = Vec::new();
        for r in records {
            for m in &r.measures {
                let mut row = vec![r.point.to_string()];
                row.extend(r.settings.iter().map(|(_, v)| v.clone()));
                if one_at_a_time {
                    let varied = r.varied.clone().unwrap_or_default();
                    let value = r
                        .settings
                        .iter()
                        .find(|(k, _)| *k == varied)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default();
                    row.push(varied);
                    row.push(value);
                }
                for l in &labels {
                    row.push(
                        m.labels
                            .iter()
                            .find(|(k, _)| k == l)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default(),
                    );
                }
                row.push(format!("{:.9e}", m.time_s));
                row.push(m.gflops.map(|g| format!("{g:.6e}")).unwrap_or_default());
                row.push(format!("{:.6e}", m.energy_j));
                row.push(format!("{:.3}", m.sim_wall_s));
                rows.push(row);
            }
        }
        Table { columns, rows }
    }

    /// Index of a column.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// CSV (RFC 4180: fields with commas, quotes or newlines are quoted).
    pub fn to_csv(&self) -> String {
        let field = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_owned()
            }
        };
        let mut out = String::new();
        for line in std::iter::once(&self.columns).chain(&self.rows) {
            let fields: Vec<String> = line.iter().map(|f| field(f)).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }

    /// JSON: a list of objects, numbers as numbers.
    pub fn to_json(&self) -> serde_json::Value {
        let rows = self
            .rows
            .iter()
            .map(|row| {
                let mut o = serde_json::Map::new();
                for (c, v) in self.columns.iter().zip(row) {
                    let value = if v.is_empty() {
                        serde_json::Value::Null
                    } else if let Ok(i) = v.parse::<i64>() {
                        i.into()
                    } else if let Some(f) = v.parse::<f64>().ok().filter(|f| f.is_finite()) {
                        f.into()
                    } else {
                        v.clone().into()
                    };
                    o.insert(c.clone(), value);
                }
                serde_json::Value::Object(o)
            })
            .collect();
        serde_json::Value::Array(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::Measure;
    use std::path::Path;

    #[test]
    fn rows_per_measure_with_labels_and_quoted_csv() {
        let study = Study::parse(
            "workload = { hpl = \"HPL.dat\" }\nplatform = { file = \"p.xml\" }\n[[axis]]\nname = \"topology\"\nset = \"mapping\"\nvalues = [\"sequential\"]\n",
            Path::new("s.toml"),
        )
        .unwrap();
        let m = |n: &str, t: f64| Measure {
            labels: vec![("n".into(), n.into()), ("tv".into(), "WR11C2R4".into())],
            time_s: t,
            gflops: Some(2.0),
            energy_j: 5.0,
            sim_wall_s: 0.25,
        };
        let r = PointRecord {
            study: "s".into(),
            point: 0,
            key: "k".into(),
            settings: vec![("topology".into(), "2;16,32;1,1;1,1".into())],
            varied: None,
            config: serde_json::Value::Null,
            command: String::new(),
            measures: vec![m("1000", 1.5), m("2000", 3.0)],
        };
        let t = Table::new(&study, &[r]);
        assert_eq!(
            t.columns,
            [
                "point",
                "topology",
                "n",
                "tv",
                "time_s",
                "gflops",
                "energy_j",
                "sim_wall_s"
            ]
        );
        assert_eq!(t.rows.len(), 2);
        let csv = t.to_csv();
        assert!(
            csv.contains("0,\"2;16,32;1,1;1,1\",2000,WR11C2R4,3.000000000e0"),
            "{csv}"
        );
        let j = t.to_json();
        assert_eq!(j[1]["n"], 2000);
        assert_eq!(j[1]["time_s"], 3.0);
        assert_eq!(j[0]["tv"], "WR11C2R4");
    }
}

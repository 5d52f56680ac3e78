//! Time windows: the part of a run a report covers (`mpiscope report --window FROM:TO`).

/// A time window: events entering in `[start, end)` ns since the run's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First ns included.
    pub start: u64,
    /// First ns excluded.
    pub end: u64,
}

impl Window {
    /// The whole run.
    pub const ALL: Window = Window {
        start: 0,
        end: u64::MAX,
    };

    /// Parses `FROM:TO` in seconds since the run's epoch; either side may be empty.
    pub fn parse(text: &str) -> Result<Window, String> {
        let (a, b) = text
            .split_once(':')
            .ok_or_else(|| format!("window `{text}`: expected FROM:TO in seconds"))?;
        let secs = |s: &str, default: u64| -> Result<u64, String> {
            if s.trim().is_empty() {
                return Ok(default);
            }
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("window `{text}`: `{s}` is not a number of seconds"))?;
            if !(0.0..1e9).contains(&v) {
                return Err(format!("window `{text}`: `{s}` is out of range"));
            }
            Ok((v * 1e9) as u64)
        };
        let w = Window {
            start: secs(a, 0)?,
            end: secs(b, u64::MAX)?,
        };
        if w.end <= w.start {
            return Err(format!("window `{text}`: it ends before it starts"));
        }
        Ok(w)
    }

    /// Does the window hold time `t`?
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start && t < self.end
    }

    /// Is it the whole run?
    pub fn is_all(&self) -> bool {
        *self == Window::ALL
    }
}

//! The fields of one TI line, read with the checks every action applies: numbers finite,
//! amounts non-negative, tags non-negative (or -1, any tag, where a receive may use it),
//! peers among the trace's ranks, datatypes among SimGrid's ids. Every error names the file,
//! the line and the action.

use crate::workload::WorkloadError;

/// A syntax error at `line` of `path`.
pub(super) fn syntax(path: &str, line: u64, message: impl Into<String>) -> WorkloadError {
    WorkloadError::Syntax {
        path: path.to_owned(),
        line,
        message: message.into(),
    }
}

/// Bytes of SimGrid's datatype ids (smpi_datatype.cpp order).
fn dtype_size(id: i64) -> Option<u64> {
    Some(match id {
        0 => 8,   // MPI_DOUBLE
        1 => 4,   // MPI_INT
        2 => 1,   // MPI_CHAR
        3 => 2,   // MPI_SHORT
        4 => 8,   // MPI_LONG
        5 => 4,   // MPI_FLOAT
        6 => 1,   // MPI_BYTE
        7 => 8,   // MPI_LONG_LONG
        8 => 1,   // MPI_SIGNED_CHAR
        9 => 1,   // MPI_UNSIGNED_CHAR
        10 => 2,  // MPI_UNSIGNED_SHORT
        11 => 4,  // MPI_UNSIGNED
        12 => 8,  // MPI_UNSIGNED_LONG
        13 => 8,  // MPI_UNSIGNED_LONG_LONG
        14 => 16, // MPI_LONG_DOUBLE
        15 => 2,  // MPI_WCHAR
        16 => 1,  // MPI_C_BOOL
        17 => 1,  // MPI_INT8_T
        18 => 2,  // MPI_INT16_T
        19 => 4,  // MPI_INT32_T
        20 => 8,  // MPI_INT64_T
        21 => 1,  // MPI_UINT8_T
        22 => 2,  // MPI_UINT16_T
        23 => 4,  // MPI_UINT32_T
        24 => 8,  // MPI_UINT64_T
        25 => 8,  // MPI_C_FLOAT_COMPLEX
        26 => 16, // MPI_C_DOUBLE_COMPLEX
        _ => return None,
    })
}

/// The arguments of one action: `<rank> <action> <args>`, `args` indexed from 0.
pub(super) struct Fields<'a> {
    path: &'a str,
    line: u64,
    /// The action's name.
    pub(super) action: &'a str,
    /// The fields after the action.
    args: &'a [&'a str],
}

impl<'a> Fields<'a> {
    /// The fields of `tokens` (at least two: the rank and the action) at `line` of `path`.
    pub(super) fn new(path: &'a str, line: u64, tokens: &'a [&'a str]) -> Fields<'a> {
        Fields {
            path,
            line,
            action: tokens[1],
            args: &tokens[2..],
        }
    }

    /// Fields after the action.
    pub(super) fn len(&self) -> usize {
        self.args.len()
    }

    /// Whether the action has no argument.
    pub(super) fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// A syntax error on this line.
    pub(super) fn err(&self, message: String) -> WorkloadError {
        syntax(self.path, self.line, message)
    }

    fn get(&self, i: usize, what: &str) -> Result<&'a str, WorkloadError> {
        self.args
            .get(i)
            .copied()
            .ok_or_else(|| self.err(format!("{}: missing {what}", self.action)))
    }

    /// A finite number.
    pub(super) fn num(&self, i: usize, what: &str) -> Result<f64, WorkloadError> {
        let s = self.get(i, what)?;
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.err(format!("{}: {what} `{s}` is not a number", self.action)))
    }

    /// Flops, seconds, sizes and counts: finite and non-negative.
    pub(super) fn amount(&self, i: usize, what: &str) -> Result<f64, WorkloadError> {
        let v = self.num(i, what)?;
        if v < 0.0 {
            return Err(self.err(format!("{}: {what} {v} is negative", self.action)));
        }
        Ok(v)
    }

    /// An amount as a whole count (the fraction dropped).
    pub(super) fn count(&self, i: usize, what: &str) -> Result<u64, WorkloadError> {
        self.amount(i, what).map(|v| v as u64)
    }

    /// An integer.
    pub(super) fn int(&self, i: usize, what: &str) -> Result<i64, WorkloadError> {
        let s = self.get(i, what)?;
        s.parse::<i64>()
            .map_err(|_| self.err(format!("{}: {what} `{s}` is not an integer", self.action)))
    }

    /// A tag: non-negative, or `ANY` (-1) where a receive may use it (`any`).
    pub(super) fn tag(&self, i: usize, any: bool) -> Result<i64, WorkloadError> {
        let v = self.int(i, "tag")?;
        let least = if any { crate::workload::ANY } else { 0 };
        if v < least {
            return Err(self.err(format!(
                "{}: tag {v} is negative{}",
                self.action,
                if any { " (and not -1, any tag)" } else { "" }
            )));
        }
        Ok(v)
    }

    /// A rank among the `n` ranks.
    pub(super) fn peer(&self, i: usize, what: &str, n: u32) -> Result<u32, WorkloadError> {
        let v = self.int(i, what)?;
        if v < 0 || v >= i64::from(n) {
            return Err(self.err(format!(
                "{}: {what} {v} is not a rank of the {n} ranks",
                self.action
            )));
        }
        Ok(v as u32)
    }

    /// The bytes of the datatype whose id is field `i`, or `default` without one.
    pub(super) fn dt(&self, i: usize, default: u64) -> Result<u64, WorkloadError> {
        match self.args.get(i) {
            None => Ok(default),
            Some(s) => {
                let id: i64 = s.parse().map_err(|_| {
                    self.err(format!("{}: datatype `{s}` is not an id", self.action))
                })?;
                dtype_size(id)
                    .ok_or_else(|| self.err(format!("{}: unknown datatype id {id}", self.action)))
            }
        }
    }

    /// `n` non-negative integers from field `from` on (per-rank counts).
    pub(super) fn counts(
        &self,
        from: usize,
        what: &str,
        n: u32,
    ) -> Result<Vec<u64>, WorkloadError> {
        (0..n as usize)
            .map(|i| {
                let v = self.int(from + i, what)?;
                u64::try_from(v).map_err(|_| self.err(format!("{}: negative {what}", self.action)))
            })
            .collect()
    }

    /// A rank given at field `i` if the line has it, else rank 0 (the default root).
    pub(super) fn root_at(&self, i: usize, n: u32) -> Result<u32, WorkloadError> {
        if self.args.len() > i {
            self.peer(i, "root", n)
        } else {
            Ok(0)
        }
    }
}

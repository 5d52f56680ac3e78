//! Text formatted into a fixed buffer: what the recorder writes from signal handlers and
//! other places that must not allocate (warnings, notes, the trailer).

/// A writer into a fixed buffer (no allocation); what does not fit is an error.
pub(crate) struct FixedBuf<'a> {
    /// The buffer.
    pub buf: &'a mut [u8],
    /// Bytes written.
    pub len: usize,
}

impl FixedBuf<'_> {
    /// What was written (empty if it is not UTF-8, which our writes never make).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for FixedBuf<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let b = s.as_bytes();
        if self.len + b.len() > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
        Ok(())
    }
}

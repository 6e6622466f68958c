//! Reading the workload's input files (flow lists, CDFs) with a size ceiling.
//!
//! A path may name something that never ends (a FIFO, `/dev/zero`, a file still being
//! written): reading it whole would exhaust memory before any check could run. Files are
//! therefore read through a reader that stops one byte past `run.input_file_limit`, and a
//! file longer than the limit is refused naming that field.

use std::io::Read;
use std::path::Path;

/// Why an input file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadProblem {
    /// Opening or reading failed (the OS's reason).
    Io(String),
    /// The file holds more than `limit` bytes (it may be endless).
    TooLarge { limit: u64 },
    /// The file is not UTF-8 text.
    NotText,
}

impl std::fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadProblem::Io(e) => write!(f, "{e}"),
            ReadProblem::TooLarge { limit } => write!(
                f,
                "it holds more than run.input_file_limit = {limit} bytes (or never ends); \
                 point to a regular file or raise run.input_file_limit"
            ),
            ReadProblem::NotText => write!(f, "it is not UTF-8 text"),
        }
    }
}

/// Read at most `limit` bytes of `r` as text; more than that is [`ReadProblem::TooLarge`].
pub fn read_capped(r: impl Read, limit: u64) -> Result<String, ReadProblem> {
    let mut buf = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut buf).map_err(|e| ReadProblem::Io(e.to_string()))?;
    if buf.len() as u64 > limit {
        return Err(ReadProblem::TooLarge { limit });
    }
    String::from_utf8(buf).map_err(|_| ReadProblem::NotText)
}

/// Read the file at `path` as text, refusing more than `limit` bytes.
pub fn read_file_capped(path: &Path, limit: u64) -> Result<String, ReadProblem> {
    let f = std::fs::File::open(path).map_err(|e| ReadProblem::Io(e.to_string()))?;
    read_capped(f, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_reader_is_refused_after_the_limit() {
        // An endless source (as /dev/zero or a FIFO that is never closed) stops at the limit.
        let e = read_capped(std::io::repeat(b'1'), 1 << 20).unwrap_err();
        assert_eq!(e, ReadProblem::TooLarge { limit: 1 << 20 });
        assert!(e.to_string().contains("run.input_file_limit"));
    }

    #[test]
    fn a_file_at_the_limit_is_read_whole() {
        assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), "abc");
        assert!(read_capped(&b"abcd"[..], 3).is_err());
        assert_eq!(read_capped(&b"\xff\xfe"[..], 10).unwrap_err(), ReadProblem::NotText);
    }
}

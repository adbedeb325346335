//! The one error type of the wire crate.

/// Why a buffer could not be read as (or written into) a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the header (or a length the header declares) does.
    #[error("truncated: {what} needs {need} bytes, buffer has {have}")]
    Truncated {
        /// Which header or part of it was being read.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A field holds a value the specification does not allow.
    #[error("invalid {field}: {value:#x}")]
    Invalid {
        /// Name of the field, as in the specification.
        field: &'static str,
        /// The offending value.
        value: u64,
    },
}

/// Result type of the wire crate.
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    pub(crate) const fn truncated(what: &'static str, need: usize, have: usize) -> Self {
        Error::Truncated { what, need, have }
    }

    pub(crate) const fn invalid(field: &'static str, value: u64) -> Self {
        Error::Invalid { field, value }
    }
}

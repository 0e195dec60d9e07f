//! The editor's error: damage (the core's `Error`, with what and where) or
//! a change this editor does not make.

use crate::xfs::error::Error;

/// A change this editor does not make.
#[derive(Debug, Clone)]
pub struct Unsupported(pub String);

/// Result of an edit: the image cannot be read or is damaged where the
/// edit looks (an error naming the block), or the change is not made.
#[derive(Debug)]
pub enum EditError {
    Read(Error),
    Unsupported(Unsupported),
}

impl From<Error> for EditError {
    fn from(e: Error) -> Self {
        EditError::Read(e)
    }
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::Read(e) => write!(f, "{e}"),
            EditError::Unsupported(u) => write!(f, "{}", u.0),
        }
    }
}

pub type EditResult<T> = std::result::Result<T, EditError>;

impl EditError {
    /// A refusal's reason with what was being done put in front; other
    /// errors as they are.
    pub(crate) fn within(self, what: impl FnOnce() -> String) -> EditError {
        match self {
            EditError::Unsupported(u) => {
                EditError::Unsupported(Unsupported(format!("{}: {}", what(), u.0)))
            }
            other => other,
        }
    }
}

/// A change this tool does not make, with the reason.
pub(crate) fn refuse<T>(m: String) -> EditResult<T> {
    Err(EditError::Unsupported(Unsupported(m)))
}

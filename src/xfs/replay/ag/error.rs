//! The editor's error: the image cannot be read (replay stops), the
//! intent is aborted because what it changes is damaged (structure, place
//! and what was found), or the change is left undone for a reason.

use crate::xfs::error::{Error, Location};

/// Metadata an edit found wrong: the intent is aborted, as the kernel's
/// recovery would abort it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// What is wrong: `"rmapbt"`, `"AGFL"`, `"attr leaf"`, ...
    pub structure: &'static str,
    /// Where, when the code that found it knows (an AG, an AG block, an
    /// inode); the callers' context says the rest.
    pub location: Option<Location>,
    /// What was found.
    pub detail: String,
}

impl Damage {
    /// The core's error for this damage, where the place is known.
    pub fn error(&self) -> Option<Error> {
        self.location
            .clone()
            .map(|location| Error::corrupt(self.structure, location, self.detail.clone()))
    }
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.location {
            Some(l) => write!(f, "{} {l}: {}", self.structure, self.detail),
            None => write!(f, "{}: {}", self.structure, self.detail),
        }
    }
}

/// Why a change is left undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undone {
    /// The kernel fails the mount here; `why` is what it trips on.
    KernelFailsMount { why: String },
    /// The kernel makes this change; this tool does not.
    NotDoneByThisTool { what: String },
}

impl std::fmt::Display for Undone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Undone::KernelFailsMount { why } => write!(f, "{why}: the kernel fails the mount"),
            Undone::NotDoneByThisTool { what } => write!(f, "{what}: not done by this tool"),
        }
    }
}

/// Result of an edit.
pub enum EditError {
    /// The image cannot be read where the edit looks, or a block it reads
    /// fails its checks (an error naming the block): replay stops.
    Read(Error),
    /// The intent is aborted: what it changes is damaged.
    Damaged(Damage),
    /// The change is left undone.
    Undone(Undone),
    /// `inner` happened while doing `what`.
    Within { what: String, inner: Box<EditError> },
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
            EditError::Damaged(d) => write!(f, "{d}"),
            EditError::Undone(u) => write!(f, "{u}"),
            EditError::Within { what, inner } => write!(f, "{what}: {inner}"),
        }
    }
}

/// The kind of the outcome and its whole text (context included).
impl std::fmt::Debug for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.cause() {
            EditError::Read(e) => return write!(f, "Read({e:?})"),
            EditError::Damaged(_) => "Damaged",
            EditError::Undone(Undone::KernelFailsMount { .. }) => "KernelFailsMount",
            EditError::Undone(Undone::NotDoneByThisTool { .. }) => "NotDoneByThisTool",
            EditError::Within { .. } => "Within",
        };
        write!(f, "{kind}({:?})", self.to_string())
    }
}

pub type EditResult<T> = std::result::Result<T, EditError>;

impl EditError {
    /// An aborted or undone change with what was being done put in front;
    /// read errors as they are.
    pub(crate) fn within(self, what: impl FnOnce() -> String) -> EditError {
        match self {
            EditError::Read(_) => self,
            inner => EditError::Within {
                what: what(),
                inner: Box::new(inner),
            },
        }
    }

    /// The innermost outcome, under the context [`Self::within`] added.
    pub fn cause(&self) -> &EditError {
        match self {
            EditError::Within { inner, .. } => inner.cause(),
            other => other,
        }
    }
}

/// Abort the intent: `structure` (at `location`, if known) is damaged.
pub(crate) fn damaged<T>(
    structure: &'static str,
    location: Option<Location>,
    detail: impl Into<String>,
) -> EditResult<T> {
    Err(EditError::Damaged(Damage {
        structure,
        location,
        detail: detail.into(),
    }))
}

/// Leave the change undone: the kernel fails the mount on `why`.
pub(crate) fn fails_mount<T>(why: impl Into<String>) -> EditResult<T> {
    Err(EditError::Undone(Undone::KernelFailsMount {
        why: why.into(),
    }))
}

/// Leave the change undone: the kernel makes it, this tool does not.
pub(crate) fn not_done<T>(what: impl Into<String>) -> EditResult<T> {
    Err(EditError::Undone(Undone::NotDoneByThisTool {
        what: what.into(),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_as_before() {
        let d: EditResult<()> = damaged(
            "rmapbt",
            Some(Location::Ag { agno: 1 }),
            "no mapping at or before 7",
        );
        assert_eq!(
            d.unwrap_err().to_string(),
            "rmapbt AG 1: no mapping at or before 7"
        );
        let m: EditResult<()> = fails_mount("operation 9 is invalid");
        let m = m.unwrap_err().within(|| "XMI intent 0x1".into());
        assert_eq!(
            m.to_string(),
            "XMI intent 0x1: operation 9 is invalid: the kernel fails the mount"
        );
        assert!(matches!(
            m.cause(),
            EditError::Undone(Undone::KernelFailsMount { .. })
        ));
        let n: EditResult<()> = not_done("symlink 5: its data fork is not one extent");
        assert_eq!(
            n.unwrap_err().to_string(),
            "symlink 5: its data fork is not one extent: not done by this tool"
        );
        assert_eq!(
            format!("{m:?}"),
            "KernelFailsMount(\"XMI intent 0x1: operation 9 is invalid: the kernel fails the mount\")"
        );
        let r = EditError::Read(Error::corrupt("AGF", Location::Daddr { daddr: 8 }, "magic"));
        assert!(matches!(r.within(|| "x".into()), EditError::Read(_)));
    }

    #[test]
    fn damage_with_a_place_is_the_core_error() {
        let d = Damage {
            structure: "bnobt",
            location: Some(Location::Ag { agno: 2 }),
            detail: "blocks 5+2 are free already".into(),
        };
        assert_eq!(
            d.error().unwrap().to_string(),
            "bnobt at AG 2: blocks 5+2 are free already"
        );
        let none = Damage {
            location: None,
            ..d
        };
        assert!(none.error().is_none());
    }
}

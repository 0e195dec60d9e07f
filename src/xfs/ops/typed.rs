//! Transactions that carry their type: logs written before delayed
//! logging hold one transaction per operation step, with `th_type` saying
//! which (numbering of the kernel headers before 4.1; spec §7.6).

/// What a typed transaction is to the operation count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The transaction of an operation of this kind.
    Op(&'static str),
    /// A step that follows an operation on the same inode (inactivation
    /// after a removal, the size update after a write, the truncate after
    /// a size change); counted for `fallback` when nothing precedes it.
    FollowUp { fallback: &'static str },
    /// Adds the attribute fork the next attribute set on the inode uses.
    AddAttrFork,
    /// Not one of the thirteen kinds (growfs, quota, superblock, ...).
    Other,
    /// A delayed-logging checkpoint: holds many operations, untyped.
    Checkpoint,
}

/// The kernel's name of a transaction type (pre-4.1 numbering).
pub fn type_name(t: u32) -> &'static str {
    match t {
        1 => "SETATTR_NOT_SIZE",
        2 => "SETATTR_SIZE",
        3 => "INACTIVE",
        4 => "CREATE",
        5 => "CREATE_TRUNC",
        6 => "TRUNCATE_FILE",
        7 => "REMOVE",
        8 => "LINK",
        9 => "RENAME",
        10 => "MKDIR",
        11 => "RMDIR",
        12 => "SYMLINK",
        13 => "SET_DMATTRS",
        14 => "GROWFS",
        15 => "STRAT_WRITE",
        16 => "DIOSTRAT",
        17 => "WRITE_SYNC",
        18 => "WRITEID",
        19 => "ADDAFORK",
        20 => "ATTRINVAL",
        21 => "ATRUNCATE",
        22 => "ATTR_SET",
        23 => "ATTR_RM",
        24 => "ATTR_FLAG",
        25 => "CLEAR_AGI_BUCKET",
        26 => "QM_SBCHANGE",
        27 => "DUMMY1",
        28 => "DUMMY2",
        29 => "QM_QUOTAOFF",
        30 => "QM_DQALLOC",
        31 => "QM_SETQLIM",
        32 => "QM_DQCLUSTER",
        33 => "QM_QINOCREATE",
        34 => "QM_QUOTAOFF_END",
        35 => "SB_UNIT",
        36 => "FSYNC_TS",
        37 => "GROWFSRT_ALLOC",
        38 => "GROWFSRT_ZERO",
        39 => "GROWFSRT_FREE",
        40 => "SWAPEXT",
        41 => "SB_COUNT",
        42 => "CHECKPOINT",
        43 => "ICREATE",
        _ => "UNKNOWN",
    }
}

/// Whether `th_type` marks a delayed-logging checkpoint: 40 since Linux
/// 4.1, 42 from 2.6.35 to 4.0 (where 40 was SWAPEXT). A log that has shown
/// typed transactions reads 40 as SWAPEXT.
pub fn is_checkpoint(t: u32, typed_seen: bool) -> bool {
    t == 42 || (t == 40 && !typed_seen)
}

/// The role of a typed transaction.
pub fn role(t: u32) -> Role {
    match t {
        1 => Role::Op("setattr"),
        2 => Role::Op("truncate"),
        3 => Role::FollowUp { fallback: "unlink" },
        4 | 5 | 43 => Role::Op("create"),
        6 => Role::FollowUp {
            fallback: "truncate",
        },
        7 => Role::Op("unlink"),
        8 => Role::Op("link"),
        9 => Role::Op("rename"),
        10 => Role::Op("mkdir"),
        11 => Role::Op("rmdir"),
        12 => Role::Op("symlink"),
        15..=17 => Role::Op("write"),
        18 | 36 => Role::FollowUp { fallback: "write" },
        19 => Role::AddAttrFork,
        20 | 21 => Role::FollowUp { fallback: "unlink" },
        22 | 24 => Role::Op("setxattr"),
        23 => Role::Op("removexattr"),
        42 => Role::Checkpoint,
        _ => Role::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_numbering_follows_the_kernel_era() {
        assert!(is_checkpoint(40, false));
        assert!(is_checkpoint(42, true));
        assert!(!is_checkpoint(40, true));
        assert_eq!(type_name(40), "SWAPEXT");
        assert_eq!(role(19), Role::AddAttrFork);
        assert_eq!(role(7), Role::Op("unlink"));
        assert_eq!(role(3), Role::FollowUp { fallback: "unlink" });
    }
}

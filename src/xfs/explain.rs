//! Short explanations, in the project's own words, of what the log and
//! operations views show: each log item kind, each operation kind, and the
//! columns and keys of those views. The page shows them beside the values
//! (glossaries and tooltips); every kind the decoder or the inference can
//! name has one.

/// What a log item of kind `name` (as [`crate::xfs::log::items::ItemKind::name`]
/// spells it) records, and what recovery does with it.
pub fn log_item(name: &str) -> &'static str {
    match name {
        "buf" => "A logged metadata buffer: the block's address and length, a bitmap with one bit per 128-byte chunk, and one region per run of dirty chunks. Only the dirty chunks are in the log; recovery copies them over the block unless a later cancel record says the block was freed.",
        "inode" => "An inode item: the inode's core as it was in memory (in the writer's byte order) and, when they changed, its data and attr fork bytes (extent lists, local directories or xattrs, btree roots). Recovery writes them into the inode's cluster when the inode on disk is older.",
        "icreate" => "Inode chunk creation: a new chunk of inodes given by AG, first block, count, inode size and generation. Recovery writes the empty inodes itself instead of logging each one.",
        "efi" => "Extent-free intent: extents that a chain of transactions is about to free. If the log holds no matching EFD, recovery frees them itself.",
        "efd" => "Extent-free done: the EFI with this id has been carried out; recovery has nothing left to do for it.",
        "rui" => "Reverse-mapping update intent: records to add to or remove from the rmap btree (who owns which blocks). Recovery finishes it when no RUD follows.",
        "rud" => "Reverse-mapping update done: the RUI with this id has been carried out.",
        "cui" => "Reference-count update intent: changes to the refcount btree of shared (reflinked) or copy-on-write blocks. Recovery finishes it when no CUD follows.",
        "cud" => "Reference-count update done: the CUI with this id has been carried out.",
        "bui" => "File mapping update intent: map or unmap an extent in a file's data or attr fork (reflink remapping, copy-on-write completion, exchange). Recovery finishes it when no BUD follows.",
        "bud" => "File mapping update done: the BUI with this id has been carried out.",
        "attri" => "Extended attribute intent: an xattr set, replace or remove with its name and value in the log, used for logged xattrs and parent pointers. Recovery redoes it when no ATTRD follows.",
        "attrd" => "Extended attribute done: the ATTRI with this id has been carried out.",
        "xmi" => "File range exchange intent: two files' extents to swap, range by range. Recovery goes on from where the exchange stopped when no XMD follows.",
        "xmd" => "File range exchange done: the XMI with this id has been carried out.",
        "dquot" => "A quota record (usage and limits of a user, group or project) as it was in memory.",
        "quotaoff" => "Quota accounting or enforcement was turned off.",
        "efi_rt" | "efd_rt" | "rui_rt" | "rud_rt" | "cui_rt" | "cud_rt" => "The same intent or done item as its data-device namesake, for the realtime device's groups.",
        "iunlink" => "An unlinked-list update of an inode's next pointer. It lives in memory only: the kernel logs the change as part of the inode's cluster buffer, so it never appears in a log on disk.",
        _ => "An item type this tool does not know: its bytes are kept but not decoded.",
    }
}

/// What an operation of kind `kind` is, and which transactions it costs
/// the kernel (as its `xfs_trans_commit` tracepoint counts them).
pub fn operation(kind: &str) -> &'static str {
    match kind {
        "create" => "A new regular file (open with O_CREAT): a new inode and a directory entry in one transaction, one more when a new inode chunk has to be allocated first. An inherited ACL or a security label is set in a transaction of its own; newer kernels give the inode its attr fork at create, where older ones spent one more transaction adding it.",
        "mkdir" => "A new directory: a new inode holding . and .. inline, an entry in the parent and one more link on the parent, in one transaction (plus the chunk allocation when needed).",
        "mknod" => "A new device node, FIFO or socket: like a create, one transaction.",
        "symlink" => "A new symbolic link: a new inode whose target is kept inline, or in blocks of its own when it is too long, plus the entry in its directory; one transaction.",
        "link" => "A new name for an existing inode (a hard link): an entry and one more link count, in one transaction.",
        "unlink" => "A name removed. At zero links the inode goes on its AG's unlinked list in the same transaction; later, background inactivation truncates its blocks (a roll per pair of extents) and frees the inode, and those transactions are counted here.",
        "rmdir" => "An empty directory removed: like an unlink, then the directory's inode is inactivated and freed in the background.",
        "rename" => "An entry moved or renamed in one transaction; renaming over an existing name also drops the target's link, which may then be inactivated.",
        "setxattr" => "An extended attribute set: one transaction while it fits in the inode (shortform) or a leaf. A value too large for a leaf takes more: blocks are allocated for it and written. Older kernels needed one more transaction to add the attr fork.",
        "removexattr" => "An extended attribute removed; a remote value's blocks are freed too.",
        "write" => "File data written: the data is not logged, but the allocation of its blocks at writeback, the conversion of unwritten extents at I/O completion and the growth of the file's size each commit a transaction.",
        "truncate" => "A file's size changed: shrinking frees its blocks two extents per transaction, rolling as it goes.",
        "setattr" => "Mode, owner or times changed (chmod, chown, utimes): one transaction that logs the inode core.",
        _ => "",
    }
}

/// What a key or column of the log view means.
pub fn log_key(key: &str) -> &'static str {
    match key {
        "state" => "clean: the last record is an unmount record, so recovery has nothing to do; dirty: the filesystem was not unmounted cleanly and recovery replays the log from tail to head",
        "tail block" => "the oldest log block recovery needs: everything before it is already on disk",
        "head block" => "where the next record would have been written: the end of what recovery replays",
        "cycles" => "how many times the log had wrapped at the tail and at the head; a block's cycle number is how recovery tells new records from old ones",
        "records" => "log records between tail and head: each is a header sector and the data the in-memory log buffer held",
        "transactions" => "what the records carry between a start and a commit record: with delayed logging each is a checkpoint, the changes of many system calls merged",
        "tid" => "the transaction (checkpoint) id the kernel gave it",
        "start" => "cycle:block of the record its first operation is in",
        "commit" => "cycle:block of the record its commit operation is in",
        "items" => "log items: one per logged buffer, inode, intent or done item",
        "regions" => "the item's regions: a format header plus, for a buffer, one per run of dirty chunks, for an inode one per logged fork",
        "bytes" => "bytes of item data in the log",
        _ => "",
    }
}

/// What a column of the operations table means.
pub fn operations_column(column: &str) -> &'static str {
    match column {
        "count" => "operations of this kind found in the log",
        "transactions" => "transactions the kernel committed for them, rolls and background follow-ups (inactivation, writeback) included, as its xfs_trans_commit tracepoint counts them",
        "items" => "log items those operations' checkpoints logged",
        "bytes" => "bytes of those items in the log",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xfs::format::log::*;
    use crate::xfs::log::items::ItemKind;

    #[test]
    fn every_item_kind_the_decoder_names_is_explained_apart() {
        // The realtime variants share one explanation between them.
        let (rt, codes): (Vec<u16>, Vec<u16>) = LOG_ITEM_TYPES
            .into_iter()
            .partition(|c| ItemKind(*c).name().ends_with("_rt"));
        assert_eq!(rt.len(), 6);
        let unknown = log_item("unknown");
        let mut seen = std::collections::BTreeSet::new();
        for c in codes {
            let name = ItemKind(c).name();
            assert_ne!(name, "unknown", "{c:#x}");
            let text = log_item(name);
            assert_ne!(text, unknown, "{name} has no explanation");
            assert!(seen.insert(text), "{name} shares its explanation");
        }
        for c in rt {
            assert_ne!(log_item(ItemKind(c).name()), unknown, "{c:#x}");
        }
    }

    #[test]
    fn every_operation_kind_and_column_is_explained() {
        for k in crate::xfs::ops::KINDS {
            assert!(!operation(k).is_empty(), "{k}");
        }
        for k in [
            "state",
            "tail block",
            "head block",
            "cycles",
            "records",
            "transactions",
            "tid",
            "start",
            "commit",
            "items",
            "regions",
            "bytes",
        ] {
            assert!(!log_key(k).is_empty(), "{k}");
        }
        for c in ["count", "transactions", "items", "bytes"] {
            assert!(!operations_column(c).is_empty(), "{c}");
        }
    }
}

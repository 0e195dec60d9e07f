//! What a person should know after a replay, one line each: notes and
//! warnings of the log walk, the intents finished or left unfinished, the
//! superblock counters, CoW staging extents, inodes left on unlinked lists.
//! The command line prints these lines; the page lists them.

use super::mount::MountChanges;
use super::ReplayReport;

/// The lines, in the order the command line prints them. Lines that name
/// work this tool leaves undone start with `NOT FINISHED` or `NOT FREED`.
pub fn lines(rep: &ReplayReport, mount: Option<&MountChanges>) -> Vec<String> {
    let mut t = Vec::new();
    if !rep.clean {
        t.extend(rep.notes.iter().map(|n| format!("note: {n}")));
    }
    t.extend(rep.warnings.iter().map(|w| format!("warning: {w}")));
    let left = mount.map_or(&rep.unfinished_intents, |m| &m.intents_left);
    if let Some(m) = mount {
        for u in rep
            .unfinished_intents
            .iter()
            .filter(|u| m.intents.finished.contains(&u.id))
        {
            t.push(format!(
                "finished {} intent {:#x} from transaction {:#x} (LSN {}): {} (as the kernel does at mount)",
                u.kind.name(),
                u.id,
                u.tid,
                u.lsn,
                u.work.join("; ")
            ));
        }
        if !m.intents.finished.is_empty() {
            t.push(format!(
                "intent recovery: {} work items, with the work the intents created",
                m.intents.work_items
            ));
        }
        if let Some(why) = &m.intents.not_finished {
            t.push(format!("intents not finished (none is applied): {why}"));
        }
        t.extend(m.notes.iter().map(|n| format!("note: {n}")));
    }
    if rep.counts.dquots_skipped > 0 {
        t.push(format!(
            "{} dquot items and dquot buffers skipped, as a mount without quota options skips them (a mount with them replays them)",
            rep.counts.dquots_skipped
        ));
    }
    for u in left {
        t.push(format!(
            "NOT FINISHED: {} intent {:#x} from transaction {:#x} (LSN {}): {}",
            u.kind.name(),
            u.id,
            u.tid,
            u.lsn,
            u.work.join("; ")
        ));
    }
    if let Some(m) = mount {
        t.push(format!(
            "superblock counters from the AGs: icount {} -> {}, ifree {} -> {}, fdblocks {} -> {}",
            m.before.icount,
            m.after.icount,
            m.before.ifree,
            m.after.ifree,
            m.before.fdblocks,
            m.after.fdblocks
        ));
        if let Some(q) = m.quota_flags_reset {
            t.push(format!(
                "quota flags {q:#x} cleared: a mount without quota options revokes the quota-checked state"
            ));
        }
        for c in &m.cow.freed {
            t.push(format!(
                "freed CoW staging extent: AG {} block {}, {} blocks (as the kernel does at mount)",
                c.agno, c.agbno, c.len
            ));
        }
        for c in &m.cow.not_freed {
            t.push(format!(
                "NOT FREED: CoW staging extent AG {} block {} ({} blocks): {}",
                c.extent.agno, c.extent.agbno, c.extent.len, c.reason
            ));
        }
        if let Some(f) = &m.unlinked_freed {
            if !f.freed.is_empty() {
                t.push(format!(
                    "freed {} inodes of the AGI unlinked lists ({} inode chunks, {} work items), as the kernel does at mount",
                    f.freed.len(),
                    f.chunks_freed.len(),
                    f.work_items
                ));
            }
            if let Some(why) = &f.not_freed {
                t.push(format!("unlinked inodes not freed from here on: {why}"));
            }
        }
        if let Some(e) = &m.eofblocks {
            for x in &e.trimmed {
                t.push(format!(
                    "freed inode {}'s {} extent(s) ({} blocks) from file block {} on, past its in-memory size of {} bytes (di_size {}), as the kernel's inactivation does when it lets go of the inodes its recovery read",
                    x.ino, x.extents, x.blocks, x.from_block, x.size, x.disk_size
                ));
            }
            if let Some(why) = &e.not_done {
                t.push(format!(
                    "NOT FREED: blocks past the end of files recovery read: {why}"
                ));
            }
        }
        for u in &m.unlinked {
            t.push(format!(
                "NOT FREED: inode {} heads AGI {} unlinked bucket {}; the kernel frees the inodes of this list at mount",
                u.ino, u.agno, u.bucket
            ));
        }
    }
    t
}

//! Answers sent in pieces or with progress: a file's content, the
//! allocation groups' summaries.

use super::*;

pub(super) fn read_file(scope: Out<'_>, fs: &Fs<Disk>, metadump: bool, ino: u64) {
    let (offset, error) = read_file_pieces(scope, fs, metadump, ino);
    let failed = error.is_some();
    if let Some(e) = error {
        post(scope, &e);
    }
    post(scope, &file_end(ino, offset, failed));
}

/// The end of a file's content, sent for every `ReadFile`: the page saves
/// the file or drops what came, and counts the read as over.
pub(super) fn file_end(ino: u64, offset: u64, failed: bool) -> Response {
    Response::FileChunk {
        ino,
        offset,
        bytes: Vec::new(),
        last: true,
        failed,
    }
}

/// Post the file's content in pieces; the bytes posted, and the error that
/// stopped the read.
fn read_file_pieces(
    scope: Out<'_>,
    fs: &Fs<Disk>,
    metadump: bool,
    ino: u64,
) -> (u64, Option<Response>) {
    let i = match fs.inode(Ino(ino)) {
        Ok(i) => i,
        Err(e) => return (0, Some(view_error(format!("inode {ino}"), e))),
    };
    let total = i.core.size;
    if metadump && i.file_type() == crate::xfs::inode::FileType::File && total > 0 {
        return (
            0,
            Some(view_error(
                format!("inode {ino}"),
                format!("its {total} bytes of content are not in the metadump (xfs_metadump copies metadata only)"),
            )),
        );
    }
    let mut offset = 0u64;
    let result = fs.read_file(&i, &mut |chunk: &[u8]| {
        post(
            scope,
            &Response::FileChunk {
                ino,
                offset,
                bytes: chunk.to_vec(),
                last: false,
                failed: false,
            },
        );
        offset = offset.saturating_add(u64::try_from(chunk.len()).unwrap_or(0));
        post(
            scope,
            &Response::Progress {
                stage: format!("reading inode {ino}"),
                done: offset,
                total,
            },
        );
        Ok(())
    });
    let error = result
        .err()
        .map(|e| view_error(format!("reading inode {ino}"), e));
    (offset, error)
}

pub(super) fn ags(out: Out<'_>, fs: &Fs<Disk>) -> Response {
    let total = u64::from(fs.geo.agcount);
    let mut tick = Ticker::default();
    let ags = (0..fs.geo.agcount)
        .inspect(|a| {
            if tick.due() {
                post(
                    out,
                    &Response::Progress {
                        stage: format!("reading the headers of AG {a} of {total}"),
                        done: u64::from(*a),
                        total,
                    },
                );
            }
        })
        .map(|a| match crate::xfs::ag::summarize(fs, AgNumber(a)) {
            Ok(s) => views::ag_view(&s),
            Err(e) => crate::web::protocol::AgView {
                agno: a,
                summary: Vec::new(),
                agf: Vec::new(),
                agi: Vec::new(),
                problems: vec![e.to_string()],
            },
        })
        .collect();
    Response::Ags(Box::new(AgsView { ags }))
}

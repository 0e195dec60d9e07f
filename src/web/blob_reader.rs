//! [`ReadAt`] over a browser `Blob` (a `File` is a `Blob`), inside the
//! worker: `Blob.slice` then `FileReaderSync`, so only the asked-for range is
//! ever read and the page never holds the file.

use crate::xfs::read::{ReadAt, ReadError};
use web_sys::{Blob, FileReaderSync};

/// What the worker reads the filesystem through: the file under its qcow2
/// layers and partition window.
pub type Disk = crate::xfs::container::Volume<BlobReader>;

pub struct BlobReader {
    blob: Blob,
    len: u64,
    reader: FileReaderSync,
}

impl BlobReader {
    pub fn new(blob: Blob) -> Result<Self, String> {
        let size = blob.size();
        if !(size.is_finite() && size >= 0.0) {
            return Err("the file has no size".into());
        }
        // f64 holds every file size a browser can give (below 2^53) exactly.
        #[allow(
            clippy::as_conversions,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let len = size as u64;
        let reader = FileReaderSync::new().map_err(|e| format!("FileReaderSync: {e:?}"))?;
        Ok(BlobReader { blob, len, reader })
    }
}

#[allow(clippy::as_conversions, clippy::cast_precision_loss)]
fn to_f64(n: u64) -> f64 {
    n as f64
}

impl ReadAt for BlobReader {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let want = u64::try_from(buf.len()).map_err(|_| ReadError("read too large".into()))?;
        let end = offset
            .checked_add(want)
            .ok_or_else(|| ReadError("range overflows".into()))?;
        let slice = self
            .blob
            .slice_with_f64_and_f64(to_f64(offset), to_f64(end))
            .map_err(|e| ReadError(format!("Blob.slice: {e:?}")))?;
        let ab = self
            .reader
            .read_as_array_buffer(&slice)
            .map_err(|e| ReadError(format!("FileReaderSync: {e:?}")))?;
        let arr = js_sys::Uint8Array::new(&ab);
        if arr.length() as usize != buf.len() {
            return Err(ReadError(format!(
                "short read at {offset}: {} of {} bytes",
                arr.length(),
                buf.len()
            )));
        }
        arr.copy_to(buf);
        Ok(())
    }
}

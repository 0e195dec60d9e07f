//! The one thing the core needs from its host: read exactly N bytes at an
//! offset. The native CLI implements it over a file opened read-only; the web
//! worker over a browser `File` with `FileReaderSync`; tests over memory.

use std::fmt;

/// A failed host read, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError(pub String);

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Random-access, read-only source of image bytes.
pub trait ReadAt {
    /// The length of the image in bytes.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fill `buf` with the bytes at `offset..offset + buf.len()`. The caller
    /// has already checked that the range lies inside `len()`.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError>;
}

impl ReadAt for [u8] {
    fn len(&self) -> u64 {
        u64::try_from(<[u8]>::len(self)).unwrap_or(u64::MAX)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        let start = usize::try_from(offset).map_err(|_| ReadError("offset too large".into()))?;
        let end = start
            .checked_add(buf.len())
            .ok_or_else(|| ReadError("range overflows".into()))?;
        let src = self
            .get(start..end)
            .ok_or_else(|| ReadError(format!("range {start}..{end} past the end")))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn len(&self) -> u64 {
        ReadAt::len(self.as_slice())
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        self.as_slice().read_exact_at(offset, buf)
    }
}

/// A file on the host, opened read-only by the caller.
#[cfg(not(target_arch = "wasm32"))]
pub struct FileReader {
    file: std::fs::File,
    len: u64,
}

#[cfg(not(target_arch = "wasm32"))]
impl FileReader {
    /// Open `path` read-only. The image is never written.
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().read(true).open(path)?;
        let len = file.metadata()?.len();
        Ok(FileReader { file, len })
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ReadAt for FileReader {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file
                .read_exact_at(buf, offset)
                .map_err(|e| ReadError(e.to_string()))
        }
        #[cfg(not(unix))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = &self.file;
            f.seek(SeekFrom::Start(offset))
                .and_then(|_| f.read_exact(buf))
                .map_err(|e| ReadError(e.to_string()))
        }
    }
}

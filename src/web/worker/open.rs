//! Opening: an image (its container and partition found), a partition of
//! it, a data device with its external log device, a log device added.

use super::*;

/// The first four bytes of `blob`, big-endian (0 when it is shorter).
pub(super) fn magic_of(blob: &web_sys::Blob) -> u32 {
    let Ok(r) = BlobReader::new(blob.clone()) else {
        return 0;
    };
    let mut b = [0u8; 4];
    if r.len() < 4 || r.read_exact_at(0, &mut b).is_err() {
        return 0;
    }
    u32::from_be_bytes(b)
}

impl Session {
    /// Open a data device and its external log device given in either order.
    pub(super) fn open_pair(
        &mut self,
        first: web_sys::Blob,
        first_name: String,
        second: web_sys::Blob,
        second_name: String,
    ) -> Response {
        const XFSB: u32 = 0x5846_5342;
        const LOG_RECORD: u32 = crate::xfs::format::log::XLOG_HEADER_MAGIC_NUM;
        let (a, b) = (magic_of(&first), magic_of(&second));
        let first_is_data = a == XFSB || (b != XFSB && (b == LOG_RECORD || a != LOG_RECORD));
        let ((data, data_name), (log, log_name)) = if first_is_data {
            ((first, first_name), (second, second_name))
        } else {
            ((second, second_name), (first, first_name))
        };
        match self.open(data, data_name) {
            Response::Opened(_) => self.add_log_device(log, log_name),
            other => other,
        }
    }

    /// Read the open filesystem's external log from `blob`.
    pub(super) fn add_log_device(&mut self, blob: web_sys::Blob, name: String) -> Response {
        let reader = match BlobReader::new(blob) {
            Ok(r) => r,
            Err(message) => return view_error(format!("log device {name}"), message),
        };
        let Some(mut opened) = self.opened.clone() else {
            return view_error(format!("log device {name}"), "no filesystem is open");
        };
        let Some(fs) = self.fs.take() else {
            return view_error(format!("log device {name}"), "no filesystem is open");
        };
        if fs.has_external_log() {
            self.forget_log_views();
            let log = Image::with_cache(
                container::Volume::whole(reader),
                WEB_CHUNK,
                WEB_CACHE_CHUNKS,
            );
            self.fs = Some(fs.with_logdev(log));
            opened.log_device = Some(name);
            opened.log_device_error = None;
        } else {
            self.fs = Some(fs);
            opened.log_device_error = Some(format!(
                "{name} is not used: the log of {} is internal",
                opened.name
            ));
        }
        self.opened = Some(opened.clone());
        Response::Opened(Box::new(opened))
    }

    /// Open an image: everything held about the last one is dropped first.
    pub(super) fn open(&mut self, blob: web_sys::Blob, name: String) -> Response {
        *self = Session::default();
        let reader = match BlobReader::new(blob) {
            Ok(r) => r,
            Err(message) => return Response::Error { name, message },
        };
        let size = reader.len();
        let disk = match container::detect(reader) {
            Ok(d) => d,
            Err(e) => {
                return Response::Error {
                    name,
                    message: e.to_string(),
                }
            }
        };
        let chosen = disk.choose(None);
        let resp = match chosen {
            Ok((volume, layout)) => self.open_volume(volume, layout, name.clone(), size),
            Err(e) if disk.layout().table.is_some() => {
                Response::ChoosePartition(Box::new(ChoosePartition {
                    name: name.clone(),
                    size,
                    layout: disk.layout().clone(),
                    message: e.to_string(),
                }))
            }
            Err(e) => Response::Error {
                name: name.clone(),
                message: e.to_string(),
            },
        };
        self.disk = Some((disk, name, size));
        resp
    }

    /// Open partition `number` of the disk found by the last `Open`.
    pub(super) fn open_partition(&mut self, number: u32) -> Response {
        let Some((disk, name, size)) = self.disk.as_ref() else {
            return Response::Error {
                name: String::new(),
                message: "no disk is open".into(),
            };
        };
        let (chosen, name, size) = (disk.choose(Some(number)), name.clone(), *size);
        match chosen {
            Ok((volume, layout)) => self.open_volume(volume, layout, name, size),
            Err(e) => Response::Error {
                name,
                message: e.to_string(),
            },
        }
    }

    /// Read the superblock of the filesystem in `volume` and keep it open.
    /// A metadump's own external log device is put beside it.
    pub(super) fn open_volume(
        &mut self,
        volume: Disk,
        layout: Layout,
        name: String,
        size: u64,
    ) -> Response {
        self.forget_views();
        self.metadump = layout.metadump.is_some();
        let img = Image::with_cache(volume, WEB_CHUNK, WEB_CACHE_CHUNKS);
        let sb = match read_superblock(&img) {
            Ok(sb) => sb,
            Err(e) => {
                return Response::Error {
                    name,
                    message: e.to_string(),
                };
            }
        };
        let stats = img.stats();
        let superblock = sb.view();
        let external_log = sb.logstart == 0;
        let mut log_device = None;
        let fs_error = match Fs::open(img) {
            Ok(fs) => {
                // A metadump may hold the external log device itself.
                let fs = container::with_embedded_log(fs);
                if fs.logdev.is_some() {
                    log_device = Some(format!("{name}{METADUMP_LOG}"));
                }
                self.fs = Some(fs);
                None
            }
            Err(e) => Some(e.to_string()),
        };
        let opened = Opened {
            name,
            size,
            superblock,
            stats,
            fs_error,
            layout,
            external_log,
            log_device,
            log_device_error: None,
        };
        self.opened = Some(opened.clone());
        Response::Opened(Box::new(opened))
    }

    pub(super) fn with_fs(&self, what: &str, f: impl FnOnce(&Fs<Disk>) -> Response) -> Response {
        match self.fs.as_ref() {
            Some(fs) => f(fs),
            None => view_error(what, "no filesystem is open"),
        }
    }
}

//! The input is never written: `replay -o OUT` and `--logdev-output OUT`
//! refuse an output that is an input, found as the same file (device and
//! inode), not only by name: the same path, a symlink to it, a hard link
//! to it; and an output that exists, or one file given for both outputs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{image, run_cli};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("no-overwrite-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Size, mtime and a hash of the first MiB (where the superblock and
/// the AG headers are).
fn state(p: &Path) -> (u64, i64, i64, Vec<u8>) {
    let m = std::fs::metadata(p).unwrap();
    let mut head = vec![0u8; 1 << 20];
    let f = std::fs::File::open(p).unwrap();
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut head, 0).unwrap();
    (m.len(), m.mtime(), m.mtime_nsec(), head)
}

fn unzstd(src: &Path, out: &Path) {
    let input = std::fs::File::open(src).unwrap();
    let mut dec = ruzstd::decoding::StreamingDecoder::new(std::io::BufReader::new(input)).unwrap();
    let mut f = std::fs::File::create(out).unwrap();
    std::io::copy(&mut dec, &mut f).unwrap();
}

#[test]
fn replay_output_over_the_input_is_refused() {
    let d = tmp("image");
    let img = d.join("in.img");
    std::fs::copy(image("v5-4k-dirty"), &img).unwrap();
    let before = state(&img);
    let sym = d.join("symlink.img");
    std::os::unix::fs::symlink(&img, &sym).unwrap();
    let hard = d.join("hardlink.img");
    std::fs::hard_link(&img, &hard).unwrap();
    let dotted = d.join(".").join("in.img");
    let i = img.to_str().unwrap();
    for out in [&img, &sym, &hard, &dotted] {
        let (ok, stdout, err) = run_cli(&["replay", i, "-o", out.to_str().unwrap()]);
        assert!(!ok, "{} accepted: {stdout}", out.display());
        assert!(
            err.contains("is the input image") && err.contains("the same file: device"),
            "{}: {err}",
            out.display()
        );
        assert!(err.contains(&std::fs::metadata(&img).unwrap().ino().to_string()));
    }
    // The image given through the symlink, the output as the real path.
    let (ok, _, err) = run_cli(&["replay", sym.to_str().unwrap(), "-o", i]);
    assert!(!ok && err.contains("is the input image"), "{err}");
    assert_eq!(state(&img), before, "the input changed");
    // Another existing file is refused too, and left as it was.
    let other = d.join("other");
    std::fs::write(&other, b"keep").unwrap();
    let (ok, _, err) = run_cli(&["replay", i, "-o", other.to_str().unwrap()]);
    assert!(!ok && err.contains("exists"), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), b"keep");
}

#[test]
fn logdev_output_over_an_input_is_refused() {
    let d = tmp("logdev");
    let img = d.join("data.img");
    let log = d.join("log.img");
    std::fs::copy(image("extlog"), &img).unwrap();
    unzstd(&common::fixtures_dir().join("extlog.log.zst"), &log);
    let (img_before, log_before) = (state(&img), state(&log));
    let log_link = d.join("log-hardlink");
    std::fs::hard_link(&log, &log_link).unwrap();
    let img_sym = d.join("data-symlink");
    std::os::unix::fs::symlink(&img, &img_sym).unwrap();
    let out = d.join("out.img");
    let (i, l, o) = (
        img.to_str().unwrap(),
        log.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    for (lout, what) in [
        (&log, "is the log device"),
        (&log_link, "is the log device"),
        (&img_sym, "is the input image"),
    ] {
        let (ok, _, err) = run_cli(&[
            "--logdev",
            l,
            "replay",
            i,
            "-o",
            o,
            "--logdev-output",
            lout.to_str().unwrap(),
        ]);
        assert!(!ok, "{} accepted", lout.display());
        assert!(
            err.contains(what) && err.contains("--logdev-output"),
            "{err}"
        );
        assert!(!out.exists(), "-o was written before the refusal");
    }
    // -o over the log device.
    let (ok, _, err) = run_cli(&[
        "--logdev",
        l,
        "replay",
        i,
        "-o",
        log_link.to_str().unwrap(),
        "--logdev-output",
        d.join("newlog").to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("is the log device"), "{err}");
    // One new file for both outputs.
    let (ok, _, err) = run_cli(&["--logdev", l, "replay", i, "-o", o, "--logdev-output", o]);
    assert!(!ok && err.contains("name one file"), "{err}");
    assert!(!out.exists());
    assert_eq!(state(&img), img_before, "the data device changed");
    assert_eq!(state(&log), log_before, "the log device changed");
}

//! Fuzz target `request_params`: see `fuzz/common.rs`.
#![no_main]

#[path = "../common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static TARGET: OnceLock<common::Target> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let t = TARGET.get_or_init(|| common::setup("request_params"));
    common::run(t, data);
});

//! Fuzz target `ag_btree`: see `fuzz/common.rs`.
#![no_main]

#[path = "../common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

static TARGET: OnceLock<common::Target> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let t = TARGET.get_or_init(|| common::setup("ag_btree"));
    common::run(t, data);
});

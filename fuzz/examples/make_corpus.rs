//! Write the seed corpus of every fuzz target (or of those named) into
//! `fuzz/corpus/<target>/`: each region's own bytes from the kernel-made
//! fixture, behind its selector byte. Run by `scripts/fuzz`.

#[path = "../common.rs"]
mod common;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
    for name in common::TARGETS {
        if !args.is_empty() && !args.iter().any(|a| a == name) {
            continue;
        }
        let t = common::setup(name);
        let out = format!("{dir}/{name}");
        std::fs::create_dir_all(&out).unwrap();
        let seeds = common::seeds(&t);
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(format!("{out}/seed-{i:03}"), s).unwrap();
        }
        println!(
            "{name}: {} seeds ({} regions)",
            seeds.len(),
            t.regions.len()
        );
    }
}

//! The command-line tool. Everything lives in the library's `cli` module.
#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    xfs_explorer::cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}

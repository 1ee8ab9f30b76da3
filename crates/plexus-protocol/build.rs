//! Finds the official MCP schema data that the spec tests check the crate against: the directory
//! `PLEXUS_SPEC_DIR` names, else `<workspace>/../shared/spec` (where CI has it). When it is there,
//! the tests get `cfg(plexus_spec_data)` and its path in `PLEXUS_SPEC_DATA`; when it is not (a
//! clone on its own), they are ignored with the reason, and counted as skipped.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(plexus_spec_data)");
    println!("cargo::rerun-if-env-changed=PLEXUS_SPEC_DIR");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = match std::env::var_os("PLEXUS_SPEC_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => manifest.join(dir),
        None => manifest.join("../../../shared/spec"),
    };
    // Decided once per build of this crate: watching a directory that may not exist would mean
    // watching its parents (up to a home directory, scanned whole at every build). After adding
    // the data later, set PLEXUS_SPEC_DIR (or `cargo clean -p plexus-protocol`).
    println!("cargo::rerun-if-changed=build.rs");
    if dir.join("2025-11-25/schema.json").is_file() {
        println!("cargo::rustc-cfg=plexus_spec_data");
        println!("cargo::rustc-env=PLEXUS_SPEC_DATA={}", dir.display());
    }
}

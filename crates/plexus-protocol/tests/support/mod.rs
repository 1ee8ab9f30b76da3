//! Finding the MCP schema data, which lives outside the project (see the crate's `build.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why a spec test cannot run: the data is absent (see the crate's `build.rs`).
#[cfg(not(plexus_spec_data))]
pub(crate) const NO_SPEC_DATA: &str = "the MCP schema data is absent: set PLEXUS_SPEC_DIR to a copy of spec/ (spec/<revision>/schema.json and \
     spec/2026-07-28/examples), or put the workspace's sibling shared/ beside it";

/// The MCP schema data the build found (`PLEXUS_SPEC_DIR`, else `<workspace root>/../shared/spec`).
/// Only tests that are ignored without it (`cfg(plexus_spec_data)`) call this.
#[cfg(plexus_spec_data)]
pub(crate) fn spec_dir() -> PathBuf {
    PathBuf::from(env!("PLEXUS_SPEC_DATA"))
}

/// Without the data, the tests that call this are ignored; run anyway (`--ignored`), they say why
/// they cannot pass.
#[cfg(not(plexus_spec_data))]
pub(crate) fn spec_dir() -> PathBuf {
    panic!("{NO_SPEC_DATA}")
}

/// Reads and parses a JSON file, naming it in any failure.
pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()))
}

//! Finding the MCP schema data in `<workspace root>/../shared`, which lives outside the project.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// `<workspace root>/../shared/spec`. Panics, saying what is missing, when it is absent: a check
/// against the specification must never pass for want of the specification.
pub(crate) fn spec_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = manifest.join("../../../shared");
    let spec = shared.join("spec");
    assert!(
        spec.is_dir(),
        "the MCP schema data is missing: expected the directory {} (the workspace's sibling `shared/`, \
         holding spec/<revision>/schema.json and spec/2026-07-28/examples); these tests check the crate \
         against it and cannot run without it",
        spec.display()
    );
    spec
}

/// Reads and parses a JSON file, naming it in any failure.
pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()))
}

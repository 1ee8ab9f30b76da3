//! Fuzzes the tool-pool lockfile parser: the input is the bytes of a lockfile (from a
//! repository, for the project's).
//!
//! Checked:
//! - `ToolLock::parse` never panics; every error names the file;
//! - a lockfile that parses writes back (`to_json`) to text that parses to the same lock, and
//!   writes back to the same text again (writing is stable);
//! - every locked definition's hash is that of its members, and a server's diff against no tools
//!   lists every locked tool as removed (and against its own tools, nothing).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use plexus_protocol::Tool;
use plexus_tools::lock::{Definition, ToolLock, diff_server};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("/fuzz/.mcp.lock.json");
    let lock = match ToolLock::parse(data, path) {
        Ok(lock) => lock,
        Err(error) => {
            assert_eq!(error.path(), path, "the error names another file");
            let _ = error.to_string();
            return;
        }
    };
    let text = lock.to_json();
    let again = ToolLock::parse(text.as_bytes(), path).expect("a written lockfile reads back");
    assert_eq!(again, lock, "the lock changed through writing");
    assert_eq!(again.to_json(), text, "writing is not stable");
    for (server, locked) in &lock.servers {
        for definition in locked.tools.values() {
            let rehashed = Definition::from_fields(definition.fields().clone()).expect("its members were accepted");
            assert_eq!(rehashed.sha256(), definition.sha256());
        }
        let removed = diff_server(server, locked, &[]);
        assert_eq!(removed.removed.len(), locked.tools.len());
        assert!(removed.added.is_empty() && removed.changed.is_empty());
        // The locked definitions as tools (those the protocol's types can hold) match themselves.
        let tools: Vec<Tool> = locked
            .tools
            .iter()
            .filter_map(|(name, definition)| {
                let mut value = serde_json::Value::Object(definition.fields().clone());
                value["name"] = serde_json::Value::String(name.clone());
                if value.get("inputSchema").is_none() {
                    return None;
                }
                let tool: Tool = serde_json::from_value(value).ok()?;
                (Definition::of(&tool).sha256() == definition.sha256()).then_some(tool)
            })
            .collect();
        let diff = diff_server(server, locked, &tools);
        assert!(diff.changed.is_empty() && diff.added.is_empty(), "{diff:?}");
    }
});

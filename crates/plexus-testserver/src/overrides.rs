//! `--tool-overrides FILE`: a JSON file read at every `tools/list` that changes the tools'
//! definitions under a running client (a tool's description or schema changed after the user
//! approved the server: what tool-pool lockfiles catch).

use std::io::Read;
use std::path::Path;

use plexus_jsonrpc::{ErrorCode, ErrorObject};
use serde_json::{Map, Value, json};

/// The largest overrides file read (1 MiB).
pub(crate) const MAX_OVERRIDES_BYTES: u64 = 1024 * 1024;

/// The overrides in `path`: an object mapping a tool's name to an object of members. A file that
/// cannot be read, is too large or is not of that shape is an error naming it.
pub(crate) fn read(path: &Path) -> Result<Map<String, Value>, ErrorObject> {
    let failed = |why: String| {
        ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("cannot use --tool-overrides {}: {why}", path.display()),
        )
    };
    let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_OVERRIDES_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(e.to_string()))?;
    if bytes.len() as u64 > MAX_OVERRIDES_BYTES {
        return Err(failed(format!("larger than {MAX_OVERRIDES_BYTES} bytes")));
    }
    let overrides: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| failed(e.to_string()))?;
    if let Some((name, _)) = overrides.iter().find(|(_, members)| !members.is_object()) {
        return Err(failed(format!("the overrides of tool {name:?} are not an object")));
    }
    Ok(overrides)
}

/// Applies `overrides` to `tools`: each member replaces the tool's own (`null` removes it); a
/// name that is no tool of the list adds a tool of that name (which returns its arguments, as
/// `--tool-named` tools do) with those members.
pub(crate) fn apply(tools: &mut Vec<Value>, overrides: &Map<String, Value>) {
    for (name, members) in overrides {
        let Value::Object(members) = members else { continue };
        let at = match tools.iter().position(|tool| tool["name"] == name.as_str()) {
            Some(at) => at,
            None => {
                tools.push(json!({
                    "name": name,
                    "description": "Added by --tool-overrides; returns its arguments as JSON.",
                    "inputSchema": {"type": "object", "properties": {}},
                }));
                tools.len() - 1
            }
        };
        let Value::Object(tool) = &mut tools[at] else { continue };
        for (member, value) in members {
            if member == "name" {
                continue;
            }
            if value.is_null() {
                tool.shift_remove(member);
            } else {
                tool.insert(member.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_replaced_removed_and_tools_added() {
        let mut tools = vec![json!({"name": "echo", "description": "d", "title": "Echo", "inputSchema": {}})];
        let overrides = json!({
            "echo": {"description": "changed", "title": null, "name": "ignored"},
            "extra": {"inputSchema": {"type": "object", "properties": {"x": {}}}}
        });
        apply(&mut tools, overrides.as_object().unwrap());
        assert_eq!(
            tools[0],
            json!({"name": "echo", "description": "changed", "inputSchema": {}})
        );
        assert_eq!(tools[1]["name"], "extra");
        assert_eq!(tools[1]["inputSchema"]["properties"], json!({"x": {}}));
    }

    #[test]
    fn a_bad_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.json");
        std::fs::write(&path, r#"{"echo": 3}"#).unwrap();
        let error = read(&path).unwrap_err();
        assert!(
            error.message.contains("o.json") && error.message.contains("not an object"),
            "{}",
            error.message
        );
        assert!(read(&dir.path().join("missing")).is_err());
        std::fs::write(&path, r#"{"echo": {"description": "x"}}"#).unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
    }
}

//! Fuzzes config parsing and `${VAR}` expansion: the input is the text of a config file.
//!
//! Checked, with a fixed environment (so each run is a pure function of the bytes):
//! - `ConfigFile::parse` never panics; an entry loads exactly when it has no error diagnostic (and
//!   one that does not load has one), and every loaded entry written back with `to_json` reads
//!   again to the same entry;
//! - each raw `mcpServers` entry goes through the expansion pipeline (`check_entry`: expand, then
//!   read) without panicking, `Ok` holding only warnings and `Err` at least one error;
//! - `expand_vars` on every string of the document stays within `MAX_EXPANDED_LEN`, leaves text
//!   without `${` alone, and names as missing only variables the text references and the
//!   environment lacks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_config::{
    ConfigFile, Diagnostic, Environment, MAX_EXPANDED_LEN, ServerConfig, ServerName, check_entry, expand_vars,
};
use serde_json::Value;

/// The fixed environment: an ordinary value, an empty one (for `:-` defaults), and a large one so
/// that a short input can reach the expansion limit.
fn environment() -> Environment {
    [
        ("HOME", "/home/fuzz".to_owned()),
        ("PORT", "8080".to_owned()),
        ("EMPTY", String::new()),
        ("BIG", "x".repeat(64 * 1024)),
    ]
    .into_iter()
    .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = environment();
    let file = check_file(text);
    let Ok(document) = serde_json::from_str::<Value>(text) else {
        return;
    };
    if let Some(Value::Object(servers)) = document.get("mcpServers") {
        for (name, entry) in servers {
            if let Some(file) = &file {
                let failed = || {
                    file.diagnostics()
                        .iter()
                        .any(|d| d.is_error() && d.server.as_deref() == Some(name.as_str()))
                };
                // A name other clients allow (spaces, dots) loads under its sanitized form.
                let loaded_as = if ServerName::validate(name).is_ok() {
                    Some(name.clone())
                } else {
                    ServerName::sanitize(name).map(ServerName::into_string)
                };
                assert!(
                    loaded_as.is_some_and(|loaded| file.server(&loaded).is_some()) || failed(),
                    "server {name:?} vanished without an error"
                );
            }
            match check_entry(entry, &env) {
                Ok(warnings) => assert!(warnings.iter().all(|d| !d.is_error()), "an error among warnings"),
                Err(diagnostics) => assert!(diagnostics.iter().any(Diagnostic::is_error), "failed without an error"),
            }
        }
    }
    for_each_string(&document, &mut |text| check_expansion(text, &env));
});

/// Parses `text` as a whole file and checks what loaded.
fn check_file(text: &str) -> Option<ConfigFile> {
    let file = ConfigFile::parse(text, "/fuzz/.mcp.json").ok()?;
    for diagnostic in file.diagnostics() {
        let _ = diagnostic.to_string();
    }
    for (name, config) in file.servers() {
        assert!(
            !file
                .diagnostics()
                .iter()
                .any(|d| d.is_error() && d.server.as_deref() == Some(name.as_str())),
            "server {name} loaded despite an error"
        );
        let written = config.to_json();
        match ServerConfig::from_json(&written) {
            Ok((again, _)) => assert_eq!(&again, config, "{written} does not read back to the same entry"),
            Err(errors) => panic!("{written} does not read back: {errors:?}"),
        }
    }
    Some(file)
}

fn check_expansion(text: &str, env: &Environment) {
    let Ok(expanded) = expand_vars(text, env) else {
        return;
    };
    assert!(
        expanded.text.len() <= MAX_EXPANDED_LEN,
        "the expansion exceeds the limit"
    );
    if !text.contains("${") {
        assert_eq!(expanded.text, text, "text without a reference changed");
        assert!(expanded.missing.is_empty());
    }
    for name in &expanded.missing {
        assert!(
            text.contains(&format!("${{{name}}}")),
            "{name} is missing but not referenced as ${{{name}}}"
        );
        assert!(env.get(name).is_none(), "{name} is set but reported missing");
    }
}

fn for_each_string(value: &Value, visit: &mut dyn FnMut(&str)) {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter().for_each(|item| for_each_string(item, visit)),
        Value::Object(object) => {
            for (key, item) in object {
                visit(key);
                for_each_string(item, visit);
            }
        }
        _ => {}
    }
}

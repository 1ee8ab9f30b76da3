//! Properties of merging, expansion, cache keys and editing, over generated inputs and real files.

mod common;

use std::collections::BTreeMap;

use common::{Workspace, servers};
use plexus_config::{
    ConfigSources, EntryOrigin, Environment, Scope, ServerConfig, ServerName, SettingsEdit, canonical_json, expand_vars,
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A stdio entry with some random content, tagged by `tag` so that entries of different scopes
/// differ.
fn stdio_entry(tag: &'static str) -> impl Strategy<Value = Value> {
    (
        vec("[a-z0-9-]{0,6}", 0..3),
        btree_map("[A-Z]{1,4}", "[a-z]{0,4}", 0..3),
        proptest::option::of(1000u64..60_000),
    )
        .prop_map(move |(args, env, timeout)| {
            let mut entry = Map::new();
            entry.insert("command".into(), format!("{tag}-server").into());
            if !args.is_empty() {
                entry.insert("args".into(), args.into());
            }
            if !env.is_empty() {
                entry.insert("env".into(), json!(env));
            }
            if let Some(timeout) = timeout {
                entry.insert("timeout".into(), timeout.into());
            }
            Value::Object(entry)
        })
}

/// Any JSON value that survives a trip through text unchanged.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(".{0,6}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `value` as JSON text with its object members in the order `order` picks (a permutation per
/// object, taken from the seeds) and `space` between tokens.
fn write_shuffled(value: &Value, seeds: &mut impl Iterator<Item = usize>, space: &str) -> String {
    match value {
        Value::Object(object) => {
            let mut members: Vec<(&String, &Value)> = object.iter().collect();
            for index in (1..members.len()).rev() {
                let pick = seeds.next().unwrap_or(0) % (index + 1);
                members.swap(index, pick);
            }
            let written: Vec<String> = members
                .into_iter()
                .map(|(key, member)| {
                    format!(
                        "{}{space}:{space}{}",
                        serde_json::to_string(key).unwrap(),
                        write_shuffled(member, seeds, space)
                    )
                })
                .collect();
            format!("{{{space}{}{space}}}", written.join(&format!(",{space}")))
        }
        Value::Array(items) => {
            let written: Vec<String> = items.iter().map(|item| write_shuffled(item, seeds, space)).collect();
            format!("[{space}{}{space}]", written.join(&format!(",{space}")))
        }
        other => other.to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_highest_scope_wins_whole(
        present in vec(any::<bool>(), 5),
        approved in any::<bool>(),
        user in stdio_entry("user"),
        project in stdio_entry("project"),
        local in stdio_entry("local"),
        first in stdio_entry("first"),
        second in stdio_entry("second"),
    ) {
        let ws = Workspace::new();
        let first_file = ws.root.path().join("first.json");
        let second_file = ws.root.path().join("second.json");
        // Lowest precedence first.
        let scopes = [
            (Scope::User, ws.user_file(), user),
            (Scope::Project, ws.project_file(), project),
            (Scope::Local, ws.local_file(), local),
            (Scope::Explicit, first_file.clone(), first),
            (Scope::Explicit, second_file.clone(), second),
        ];
        let mut defined = Vec::new();
        for ((scope, path, entry), here) in scopes.into_iter().zip(&present) {
            if *here {
                ws.write_json(&path, &servers(json!({ "s": entry })));
                defined.push((scope, path, entry));
            }
        }
        let options = ws.options().with_explicit_files(vec![first_file, second_file], false);
        let sources = ConfigSources::discover(&options);
        if approved && present[1] {
            sources.approve(&[plexus_config::ServerName::new("s").unwrap()]).unwrap();
        }
        // A project entry not approved never hides the user's entry of the same name.
        let set_aside = match defined.last() {
            Some((Scope::Project, _, _)) if !approved && defined.len() > 1 => {
                let (scope, file, _) = defined.pop().unwrap();
                Some(EntryOrigin { scope, file })
            }
            _ => None,
        };
        let merged = sources.load();
        prop_assert_eq!(&merged.server("s").map(|server| server.set_aside.clone()), &defined.last().map(|_| set_aside));
        match defined.last() {
            None => prop_assert!(merged.server("s").is_none()),
            Some((scope, path, entry)) => {
                let server = merged.server("s").unwrap();
                prop_assert_eq!(server.scope, *scope);
                prop_assert_eq!(&server.source, path);
                prop_assert_eq!(&server.config, &ServerConfig::from_json(entry).unwrap().0);
                let overridden: Vec<EntryOrigin> = defined[..defined.len() - 1]
                    .iter()
                    .rev()
                    .map(|(scope, path, _)| EntryOrigin { scope: *scope, file: path.clone() })
                    .collect();
                prop_assert_eq!(&server.overridden, &overridden);
            }
        }
    }

    #[test]
    fn expansion_never_panics_and_leaves_text_without_references_alone(
        text in ".{0,40}",
        pieces in vec(prop_oneof![Just("$".to_owned()), Just("${".to_owned()), Just("}".to_owned()), Just(":-".to_owned()), "[A-Z]{1,3}", ".{0,3}"], 0..12),
        env in btree_map("[A-Z]{1,3}", ".{0,5}", 0..4),
    ) {
        let env_vars: Environment = env.clone().into_iter().collect();
        let noisy = pieces.concat();
        let _ = expand_vars(&noisy, &env_vars);
        let expanded = expand_vars(&text, &env_vars).unwrap();
        if !text.contains("${") {
            prop_assert_eq!(&expanded.text, &text);
            prop_assert!(expanded.missing.is_empty());
        }
    }

    #[test]
    fn references_and_defaults_expand_as_documented(
        name in "[A-Z][A-Z0-9_]{0,6}",
        value in proptest::option::of("[^}]{0,6}"),
        default in "[^}]{0,6}",
        before in "[^$]{0,5}",
        after in "[^$]{0,5}",
    ) {
        let env_vars: Environment = value.iter().map(|value| (name.clone(), value.clone())).collect();
        let with_default = expand_vars(&format!("{before}${{{name}:-{default}}}{after}"), &env_vars).unwrap();
        let chosen = match &value {
            Some(value) if !value.is_empty() => value.clone(),
            _ => default.clone(),
        };
        prop_assert_eq!(with_default.text, format!("{before}{chosen}{after}"));
        prop_assert!(with_default.missing.is_empty());

        let plain = expand_vars(&format!("{before}${{{name}}}{after}"), &env_vars).unwrap();
        match &value {
            Some(value) => {
                prop_assert_eq!(plain.text, format!("{before}{value}{after}"));
                prop_assert!(plain.missing.is_empty());
            }
            None => {
                prop_assert_eq!(plain.text, format!("{before}${{{name}}}{after}"));
                prop_assert_eq!(plain.missing, vec![name.clone()]);
            }
        }
    }

    #[test]
    fn canonical_json_ignores_key_order_and_spacing_and_tells_values_apart(
        a in json_value(),
        b in json_value(),
        seeds in vec(any::<usize>(), 64),
        space in prop_oneof![Just(""), Just(" "), Just("\n  "), Just("\t")],
    ) {
        let text = write_shuffled(&a, &mut seeds.into_iter(), space);
        let reread: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(canonical_json(&reread), canonical_json(&a));
        prop_assert_eq!(canonical_json(&a) == canonical_json(&b), a == b);
        prop_assert_eq!(serde_json::from_str::<Value>(&canonical_json(&a)).unwrap(), a);
    }

    #[test]
    fn the_cache_key_is_stable_across_writing_and_changes_with_any_value(
        entry in stdio_entry("k"),
        unknown in json_value(),
        seeds in vec(any::<usize>(), 64),
        space in prop_oneof![Just(""), Just(" "), Just("\n")],
        field in 0usize..5,
    ) {
        let mut entry = entry;
        entry["x-extra"] = unknown;
        let ws = Workspace::new();
        ws.write(&ws.user_file(), format!(r#"{{"mcpServers": {{"s": {}}}}}"#, serde_json::to_string(&entry).unwrap()));
        let key = ws.load().server("s").unwrap().cache_key().to_owned();
        ws.write(&ws.user_file(), format!(r#"{{"mcpServers":{space}{{"s":{space}{}}}}}"#, write_shuffled(&entry, &mut seeds.into_iter(), space)));
        let reread = ws.load().server("s").unwrap().cache_key().to_owned();
        prop_assert_eq!(&reread, &key);

        let mut changed = entry.clone();
        match field {
            0 => changed["command"] = json!("other-server"),
            1 => {
                let mut args = vec![json!("--changed")];
                args.extend(entry.get("args").and_then(Value::as_array).into_iter().flatten().cloned());
                changed["args"] = Value::Array(args);
            }
            2 => changed["env"]["ZZZZZ"] = json!("v"),
            3 => changed["timeout"] = json!(entry.get("timeout").and_then(Value::as_u64).unwrap_or(1000) + 1),
            _ => changed["x-extra"] = json!([entry["x-extra"].clone()]),
        }
        ws.write_json(&ws.user_file(), &servers(json!({ "s": changed })));
        let changed_key = ws.load().server("s").unwrap().cache_key().to_owned();
        prop_assert_ne!(&changed_key, &key);
    }

    #[test]
    fn writing_keeps_unknown_keys_and_removing_restores_the_file(
        unknown in btree_map("[a-z][a-zA-Z]{0,8}", json_value(), 0..5),
        existing in btree_map("[a-z]{1,5}", stdio_entry("e"), 0..3),
        entry in stdio_entry("new"),
        seeds in vec(any::<usize>(), 64),
        space in prop_oneof![Just(""), Just(" "), Just("\n  ")],
    ) {
        let mut top: Map<String, Value> = unknown.into_iter().filter(|(key, _)| key != "mcpServers").collect();
        let unknown = top.clone();
        top.insert("mcpServers".into(), json!(existing));
        let original = write_shuffled(&Value::Object(top), &mut seeds.into_iter(), space);
        let ws = Workspace::new();
        ws.write(&ws.user_file(), &original);

        let name = ServerName::new("zz-new").unwrap();
        let mut edit = SettingsEdit::open(ws.user_file()).unwrap();
        edit.add_server(&name, &entry).unwrap();
        prop_assert!(edit.commit().unwrap());
        let written: Map<String, Value> = serde_json::from_str(&std::fs::read_to_string(ws.user_file()).unwrap()).unwrap();
        for (key, value) in &unknown {
            prop_assert_eq!(written.get(key), Some(value));
        }
        let mut expected_servers: BTreeMap<String, Value> = existing.clone();
        expected_servers.insert("zz-new".into(), entry.clone());
        prop_assert_eq!(&written["mcpServers"], &json!(expected_servers));
        prop_assert_eq!(written.len(), unknown.len() + 1);

        let mut edit = SettingsEdit::open(ws.user_file()).unwrap();
        prop_assert_eq!(edit.remove_server("zz-new").unwrap(), entry);
        edit.commit().unwrap();
        let restored = std::fs::read_to_string(ws.user_file()).unwrap();
        if existing.is_empty() {
            // An emptied object is written `{}`, whatever spacing it had before.
            prop_assert_eq!(serde_json::from_str::<Value>(&restored).unwrap(), serde_json::from_str::<Value>(&original).unwrap());
        } else {
            prop_assert_eq!(restored, original);
        }
    }
}

/// A remote entry with some random content: `url` and `headers`.
fn http_entry() -> impl Strategy<Value = Value> {
    (
        "[a-z]{1,8}",
        btree_map("X-[A-Z][a-z]{0,5}", "[a-zA-Z0-9${}_]{0,8}", 0..3),
    )
        .prop_map(|(host, headers)| {
            let mut entry = json!({"type": "http", "url": format!("https://{host}.example/mcp")});
            if !headers.is_empty() {
                entry["headers"] = json!(headers);
            }
            entry
        })
}

/// `entry` with one bound field changed (`field` picks which): the changed field's path.
fn change_bound_field(entry: &mut Value, field: usize) -> String {
    let stdio = entry.get("command").is_some();
    match (stdio, field % 3) {
        (true, 0) => {
            entry["command"] = json!("changed-server");
            "command".to_owned()
        }
        (true, 1) => {
            let mut args: Vec<Value> = entry.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
            args.push(json!("--more"));
            entry["args"] = Value::Array(args);
            "args".to_owned()
        }
        (true, _) => {
            let old = entry["env"]["ZZ"].as_str().unwrap_or("").to_owned();
            entry["env"]["ZZ"] = json!(format!("{old}changed"));
            "env.ZZ".to_owned()
        }
        (false, 0 | 1) => {
            entry["url"] = json!(format!("{}/changed", entry["url"].as_str().unwrap()));
            "url".to_owned()
        }
        (false, _) => {
            let old = entry["headers"]["X-Zz"].as_str().unwrap_or("").to_owned();
            entry["headers"]["X-Zz"] = json!(format!("{old}changed"));
            "headers.X-Zz".to_owned()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// An approval is bound to the entry as written: rewriting it with other key order and
    /// spacing keeps it approved; changing any bound field makes it wait again, with that field
    /// named in the diff, and no secret value of `env` or `headers` is ever written to the
    /// approvals.
    #[test]
    fn an_approval_is_bound_to_the_entry_as_written(
        entry in prop_oneof![stdio_entry("p"), http_entry()],
        seeds in vec(any::<usize>(), 64),
        space in prop_oneof![Just(""), Just(" "), Just("\n  "), Just("\t")],
        field in 0usize..6,
    ) {
        let ws = Workspace::new();
        let name = ServerName::new("p").unwrap();
        ws.write_json(&ws.project_file(), &servers(json!({ "p": entry })));
        let sources = ws.sources();
        prop_assert_eq!(sources.load().server("p").unwrap().status.label(), "pending-approval");
        sources.approve(std::slice::from_ref(&name)).unwrap();
        prop_assert!(sources.load().server("p").unwrap().is_active());
        let approvals = std::fs::read_to_string(ws.local_file()).unwrap();
        for secrets in ["env", "headers"] {
            for value in entry.get(secrets).and_then(Value::as_object).into_iter().flat_map(|map| map.values()) {
                let value = value.as_str().unwrap();
                prop_assume!(value.len() > 2);
                prop_assert!(!approvals.contains(&serde_json::to_string(value).unwrap()), "{approvals}");
            }
        }

        let rewritten = write_shuffled(&servers(json!({ "p": entry })), &mut seeds.into_iter(), space);
        ws.write(&ws.project_file(), &rewritten);
        prop_assert!(sources.load().server("p").unwrap().is_active(), "{rewritten}");

        let mut changed = entry.clone();
        let path = change_bound_field(&mut changed, field);
        ws.write_json(&ws.project_file(), &servers(json!({ "p": changed })));
        let merged = sources.load();
        let server = merged.server("p").unwrap();
        prop_assert_eq!(server.status.label(), "pending-approval");
        let pending = server.pending.clone().unwrap();
        prop_assert_eq!(pending.changed_fields(), vec![path.as_str()]);

        // Approving again binds to the new entry; going back to the old one waits again.
        sources.approve(std::slice::from_ref(&name)).unwrap();
        prop_assert!(sources.load().server("p").unwrap().is_active());
        ws.write_json(&ws.project_file(), &servers(json!({ "p": entry })));
        prop_assert_eq!(sources.load().server("p").unwrap().status.label(), "pending-approval");
    }
}

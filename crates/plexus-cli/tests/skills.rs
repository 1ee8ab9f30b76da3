//! `plexus skills` and `plexus skill` against the demo server serving skills (`--skills`): the
//! listing (a table and `--json`) reads no skill file; a loaded skill's SKILL.md is printed once
//! verified, and a tampered one is refused with exit code 3 and not printed; a server without
//! skills lists none.

mod support;

use serde_json::{Value, json};
use support::{Workspace, demo};

const PDF: &str = "skill://pdf-processing/SKILL.md";

/// A workspace with `good` (skills), `bad` (its pdf-processing SKILL.md tampered with) and
/// `plain` (no skills).
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.write_servers(
        ws.user_file(),
        &json!({
            "good": demo(&["--skills"]),
            "bad": demo(&["--skills", "--tamper-skill", "size"]),
            "plain": demo(&[]),
        }),
    );
    ws
}

#[test]
fn skills_are_listed_by_server_and_uri_from_their_entries() {
    let ws = workspace();
    let out = ws.run(&["skills"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let rows: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        rows,
        [
            "SERVER  NAME            FILES      URI                                    DESCRIPTION",
            "bad     pdf-processing  4 (257 B)  skill://pdf-processing/SKILL.md        Extract, fill, and assemble PDF documents",
            "bad     refunds         2 (154 B)  skill://acme/billing/refunds/SKILL.md  Process customer refund requests per company policy",
            "good    pdf-processing  4 (257 B)  skill://pdf-processing/SKILL.md        Extract, fill, and assemble PDF documents",
            "good    refunds         2 (154 B)  skill://acme/billing/refunds/SKILL.md  Process customer refund requests per company policy",
        ]
    );
    let out = ws.run(&["--json", "skills", "good"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(listed[0]["server"], "good");
    assert_eq!(listed[0]["uri"], PDF);
    assert_eq!(listed[0]["frontmatter"]["metadata"], json!({"version": "2.1"}));
    assert_eq!(listed[0]["resources"].as_array().map(Vec::len), Some(4));
    assert_eq!(listed[1]["name"], "refunds");
    let out = ws.run(&["skills", "plain"]);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "no skills\n"), "{out:?}");
}

#[test]
fn a_skill_is_printed_once_verified_and_refused_when_it_is_not_what_its_entry_says() {
    let ws = workspace();
    let out = ws.run(&["skill", "good", PDF]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .starts_with("---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n"),
        "{out:?}"
    );
    let out = ws.run(&["--json", "skill", "good", "skill://acme/billing/refunds/SKILL.md"]);
    let loaded: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(loaded["frontmatter"]["license"], "Apache-2.0");
    assert!(loaded["instructions"].as_str().unwrap().contains("examples/email.md"));

    let refused = ws.run(&["skill", "bad", PDF]);
    assert_eq!(refused.code, Some(3), "{refused:?}");
    assert_eq!(refused.stdout, "", "nothing of the tampered skill is printed");
    let entry_size = "skill://pdf-processing/SKILL.md: 225 bytes where the entry says 193; the content is not used";
    assert!(
        refused.stderr.contains(&format!(
            "plexus: error: the skills of server \"bad\"\n  caused by: skill file {entry_size}\n"
        )),
        "{refused:?}"
    );
    let unknown = ws.run(&["skill", "good", "skill://nope/SKILL.md"]);
    assert_eq!(unknown.code, Some(3), "{unknown:?}");
    assert!(
        unknown
            .stderr
            .contains("no skill has the URI \"skill://nope/SKILL.md\" (invalid params, code -32602)"),
        "{unknown:?}"
    );
}

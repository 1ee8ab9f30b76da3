//! The skills extension (SEP-2640) between plexus-client and this server's binary (`--skills`),
//! in both protocol eras: listing reads no file; loading a skill reads its `SKILL.md` alone and
//! verifies it (size, digest, front matter); a loaded skill reads only the files its entry lists,
//! each verified; `skills/get` and `resources/directory/read`; a tampered `SKILL.md` is refused
//! and nothing more is read; a server without the extension is never asked.

mod support;

use plexus_client::{Client, ClientError, ClientOptions, SkillError, VerificationProblem};
use plexus_jsonrpc::ErrorCode;
use plexus_protocol::ProtocolVersion;
use serde_json::Value;
use support::{config, connect_with, events, handshake_options, temp_dir};

const PDF: &str = "skill://pdf-processing/SKILL.md";
const REFUNDS: &str = "skill://acme/billing/refunds/SKILL.md";

/// A session with `plexus-testserver stdio ARGS` in each era: the default (a probe, which this
/// server answers in the stateless era) and the `initialize` handshake.
async fn sessions(args: &[&str]) -> Vec<(&'static str, Client)> {
    let mut sessions = Vec::new();
    for (era, options) in [
        ("stateless", ClientOptions::new("skills")),
        ("initialize", handshake_options("skills")),
    ] {
        let client = connect_with(config(args), options).await.unwrap();
        let expected = if era == "stateless" {
            ProtocolVersion::V2026_07_28
        } else {
            ProtocolVersion::LATEST
        };
        assert_eq!(client.server().protocol_version, expected);
        sessions.push((era, client));
    }
    sessions
}

/// The URIs the server was asked to read, in order.
fn reads(log: &std::path::Path) -> Vec<String> {
    events(log)
        .into_iter()
        .filter(|event| event["event"] == "request" && event["method"] == "resources/read")
        .map(|event| event["params"]["uri"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_listing_reads_no_file_and_a_loaded_skill_reads_only_what_its_entry_lists() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    for (era, client) in sessions(&["--skills", "--event-log", log.to_str().unwrap()]).await {
        let before = reads(&log).len();
        let since = || reads(&log)[before..].to_vec();
        assert_eq!(client.skills_support().map(|s| s.directory_read), Some(true), "{era}");
        let skills = client.list_skills().await.unwrap();
        let names: Vec<_> = skills.iter().map(|skill| (skill.uri.as_str(), skill.name())).collect();
        assert_eq!(names, [(PDF, "pdf-processing"), (REFUNDS, "refunds")], "{era}");
        assert_eq!(since(), Vec::<String>::new(), "{era}: listing reads nothing");

        let loaded = client.load_skill(&skills[0]).await.unwrap();
        assert!(
            loaded.instructions().starts_with("---\nname: pdf-processing\n"),
            "{era}"
        );
        assert_eq!(since(), [PDF], "{era}: loading reads the SKILL.md alone");
        let forms = loaded.read(&client, "references/FORMS.md").await.unwrap();
        assert_eq!(forms, b"# Forms\n\nField names are case-sensitive.\n", "{era}");
        for outside in [
            "../refunds/SKILL.md",
            "scripts/extract.py",
            REFUNDS,
            "templates//invoice.md",
        ] {
            let error = loaded.read(&client, outside).await.unwrap_err();
            assert!(matches!(error, SkillError::Unlisted { .. }), "{era} {outside}: {error}");
        }
        assert_eq!(
            since(),
            [PDF, "skill://pdf-processing/references/FORMS.md"],
            "{era}: an unlisted file is not asked for"
        );

        let got = client.get_skill(REFUNDS).await.unwrap();
        assert_eq!(got, skills[1], "{era}");
        let SkillError::Client(ClientError::Rpc { error, .. }) =
            client.get_skill("skill://nope/SKILL.md").await.unwrap_err()
        else {
            panic!("{era}: not the server's error")
        };
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{era}");

        let root = client.read_directory("skill://pdf-processing", None).await.unwrap();
        let children: Vec<_> = root
            .resources
            .iter()
            .map(|child| (child.uri.as_str(), child.mime_type.as_deref().unwrap_or_default()))
            .collect();
        assert_eq!(
            children,
            [
                (PDF, "text/markdown"),
                ("skill://pdf-processing/references", "inode/directory"),
                ("skill://pdf-processing/templates", "inode/directory"),
            ],
            "{era}"
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_tampered_skill_md_is_refused_and_nothing_more_is_read() {
    for tamper in ["digest", "size", "frontmatter"] {
        let dir = temp_dir();
        let log = dir.path().join("events.jsonl");
        let args = [
            "--skills",
            "--tamper-skill",
            tamper,
            "--event-log",
            log.to_str().unwrap(),
        ];
        for (era, client) in sessions(&args).await {
            let skills = client.list_skills().await.unwrap();
            let error = client.load_skill(&skills[0]).await.unwrap_err();
            let SkillError::Verification { uri, problem } = &error else {
                panic!("{tamper} {era}: {error}")
            };
            assert_eq!(uri, PDF);
            match (tamper, problem) {
                ("digest", VerificationProblem::Digest { .. })
                | ("size", VerificationProblem::Size { .. })
                | ("frontmatter", VerificationProblem::Frontmatter(_)) => {}
                _ => panic!("{tamper} {era}: {error}"),
            }
            // The other skill is whole.
            client.load_skill(&skills[1]).await.unwrap();
            client.close().await.unwrap();
        }
        assert_eq!(
            reads(&log),
            [PDF, REFUNDS, PDF, REFUNDS],
            "{tamper}: nothing else was read"
        );
    }
    // What the user is told of a front matter that differs.
    let client = connect_with(
        config(&["--skills", "--tamper-skill", "frontmatter"]),
        handshake_options("skills"),
    )
    .await
    .unwrap();
    let skill = &client.list_skills().await.unwrap()[0];
    let SkillError::Verification {
        problem: VerificationProblem::Frontmatter(why),
        ..
    } = client.load_skill(skill).await.unwrap_err()
    else {
        panic!("not a front matter mismatch")
    };
    assert_eq!(
        why.to_string(),
        r#""description" is "Exfiltrate credentials" in the SKILL.md but "Extract, fill, and assemble PDF documents" in the entry"#
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_without_the_extension_is_never_asked() {
    let dir = temp_dir();
    let log = dir.path().join("events.jsonl");
    for (era, client) in sessions(&["--event-log", log.to_str().unwrap()]).await {
        assert_eq!(client.skills_support(), None, "{era}");
        let error = client.list_skills().await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "server \"skills\" does not declare the skills extension (io.modelcontextprotocol/skills)",
            "{era}"
        );
        assert!(
            matches!(client.get_skill(PDF).await, Err(SkillError::NotDeclared { .. })),
            "{era}"
        );
        assert!(
            matches!(
                client.read_directory("skill://pdf-processing", None).await,
                Err(SkillError::NotDeclared { .. })
            ),
            "{era}"
        );
        client.close().await.unwrap();
    }
    let asked: Vec<Value> = events(&log)
        .into_iter()
        .filter(|event| {
            event["event"] == "request"
                && event["method"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("skills/") || m == "resources/directory/read")
        })
        .collect();
    assert!(asked.is_empty(), "{asked:?}");
}

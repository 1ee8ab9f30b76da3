//! The entry `plexus add` (and `--stdio` / `--url`) builds from its arguments: the transport
//! chosen from `--transport` or the target's scheme, `-e KEY=VALUE` and `-H 'Name: value'`
//! checked, then the entry checked as every entry is (`plexus_config::checked_entry`).

use plexus::config::{
    EntryError, Environment, NewEntry, ServerKind, checked_entry, env_name, header_name, header_value,
};
use serde_json::{Map, Value};

/// What is wrong with `plexus add`'s arguments.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ArgsError {
    /// `--transport` names something other than `stdio`, `sse`, `http` or `ws`.
    #[error("unknown transport {given:?}; expected stdio, sse, http or ws")]
    UnknownTransport {
        /// What was given.
        given: String,
    },
    /// Neither a URL nor a command was given.
    #[error("missing the server's URL, or -- COMMAND [ARGS...]")]
    NoTarget,
    /// A remote server was given something other than one URL (a command, or several words).
    #[error("{} {kind} server takes one URL ({}), not a command: got {given:?}", article(*.kind), url_schemes(*.kind))]
    NotOneUrl {
        /// The transport.
        kind: ServerKind,
        /// What was given, joined by spaces.
        given: String,
    },
    /// The one target looks like a URL of a scheme no transport speaks (`ftp://…`).
    #[error(
        "{url:?} is not a URL plexus can connect to (it takes http://, https://, ws:// or wss://); to run a \
         command with it as its only word, say --transport stdio"
    )]
    UnsupportedScheme {
        /// The URL given.
        url: String,
    },
    /// `-e` without `KEY=VALUE`, or with a bad key.
    #[error("invalid -e {arg:?}")]
    BadEnv {
        /// The argument.
        arg: String,
        /// What is wrong.
        #[source]
        problem: ArgProblem,
    },
    /// `-H` without `Name: value`, or with a bad name or value.
    #[error("invalid -H {arg:?}")]
    BadHeader {
        /// The argument.
        arg: String,
        /// What is wrong.
        #[source]
        problem: ArgProblem,
    },
    /// `-e` for a remote server.
    #[error("-e sets environment variables of a stdio server; {} {kind} server takes headers (-H)", article(*.kind))]
    EnvOnRemote {
        /// The transport.
        kind: ServerKind,
    },
    /// `-H` for a stdio server.
    #[error("-H sets headers of a remote server; a stdio server takes environment variables (-e)")]
    HeadersOnStdio,
    /// The entry built is invalid.
    #[error(transparent)]
    Entry(#[from] EntryError),
}

/// What is wrong with one `-e` or `-H` argument.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ArgProblem {
    /// `-e` without `=`.
    #[error("expected KEY=VALUE")]
    NotKeyValue,
    /// `-H` without `:`.
    #[error("expected 'Name: value'")]
    NotNameValue,
    /// The name or the value is not allowed.
    #[error(transparent)]
    Value(#[from] plexus::config::ValueError),
}

/// Parses a `--transport` value: `stdio`, `sse`, `http` (or `streamable-http`) or `ws`.
pub(crate) fn parse_transport(name: &str) -> Result<ServerKind, ArgsError> {
    match ServerKind::from_config_type(name) {
        Some(kind @ (ServerKind::Stdio | ServerKind::Sse | ServerKind::Http | ServerKind::Ws)) => Ok(kind),
        _ => Err(ArgsError::UnknownTransport { given: name.to_owned() }),
    }
}

/// Builds the entry of `plexus add`: `target` is one URL or a command and its arguments, `env`
/// holds `KEY=VALUE` strings (`-e`), `headers` holds `Name: value` strings (`-H`).
///
/// Without a transport, a single `http(s)://` target is an `http` server, a single `ws(s)://`
/// target a `ws` server, and anything else a command. The entry is checked with `env_vars` for
/// `${VAR}` references.
pub(crate) fn entry_from_args(
    transport: Option<ServerKind>,
    target: &[String],
    env: &[String],
    headers: &[String],
    env_vars: &Environment,
) -> Result<NewEntry, ArgsError> {
    if target.is_empty() {
        return Err(ArgsError::NoTarget);
    }
    let kind = match (transport, target) {
        (Some(kind), _) => kind,
        (None, [url]) if has_scheme(url, &["http", "https"]) => ServerKind::Http,
        (None, [url]) if has_scheme(url, &["ws", "wss"]) => ServerKind::Ws,
        (None, [url]) if looks_like_url(url) => return Err(ArgsError::UnsupportedScheme { url: url.clone() }),
        (None, _) => ServerKind::Stdio,
    };
    let mut entry = Map::new();
    entry.insert("type".into(), kind.as_str().into());
    if kind == ServerKind::Stdio {
        if !headers.is_empty() {
            return Err(ArgsError::HeadersOnStdio);
        }
        entry.insert("command".into(), target[0].clone().into());
        if target.len() > 1 {
            entry.insert("args".into(), target[1..].to_vec().into());
        }
        if !env.is_empty() {
            let mut vars = Map::new();
            for arg in env {
                let (name, value) = split_env(arg)?;
                vars.insert(name.to_owned(), value.into());
            }
            entry.insert("env".into(), Value::Object(vars));
        }
    } else {
        if !env.is_empty() {
            return Err(ArgsError::EnvOnRemote { kind });
        }
        let url = match target {
            // A URL, or one that a `${VAR}` reference will complete (checked then).
            [url] if url.contains("://") || url.contains("${") => url,
            _ => {
                return Err(ArgsError::NotOneUrl {
                    kind,
                    given: target.join(" "),
                });
            }
        };
        entry.insert("url".into(), url.clone().into());
        if !headers.is_empty() {
            let mut map = Map::new();
            for arg in headers {
                let (name, value) = split_header(arg)?;
                map.insert(name.to_owned(), value.into());
            }
            entry.insert("headers".into(), Value::Object(map));
        }
    }
    Ok(checked_entry(Value::Object(entry), env_vars)?)
}

/// `a` or `an` before the kind's name, as it is read aloud ("an http server", "a ws server").
fn article(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Http | ServerKind::Sse | ServerKind::SseIde => "an",
        _ => "a",
    }
}

/// The URL schemes of a remote kind, as a message lists them.
fn url_schemes(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Ws | ServerKind::WsIde => "ws:// or wss://",
        _ => "http:// or https://",
    }
}

/// Whether `text` starts like a URL: a scheme (a letter, then letters, digits, `+`, `-`, `.`)
/// and `://`.
fn looks_like_url(text: &str) -> bool {
    text.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

fn has_scheme(text: &str, schemes: &[&str]) -> bool {
    text.split_once("://")
        .is_some_and(|(scheme, _)| schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)))
}

fn split_env(arg: &str) -> Result<(&str, &str), ArgsError> {
    let bad = |problem: ArgProblem| ArgsError::BadEnv {
        arg: arg.to_owned(),
        problem,
    };
    let (name, value) = arg.split_once('=').ok_or_else(|| bad(ArgProblem::NotKeyValue))?;
    env_name(name).map_err(|e| bad(e.into()))?;
    Ok((name, value))
}

fn split_header(arg: &str) -> Result<(&str, &str), ArgsError> {
    let bad = |problem: ArgProblem| ArgsError::BadHeader {
        arg: arg.to_owned(),
        problem,
    };
    let (name, value) = arg.split_once(':').ok_or_else(|| bad(ArgProblem::NotNameValue))?;
    let (name, value) = (name.trim(), value.trim());
    header_name(name).map_err(|e| bad(e.into()))?;
    header_value(value).map_err(|e| bad(e.into()))?;
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use plexus::config::Diagnostic;
    use serde_json::json;

    use super::*;

    fn messages(diagnostics: &[Diagnostic]) -> Vec<String> {
        diagnostics.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn plexus_add_builds_entries_from_its_arguments() {
        let env = Environment::empty();
        let args = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

        let stdio = entry_from_args(
            None,
            &args(&["npx", "-y", "pkg"]),
            &args(&["KEY=a=b", "EMPTY="]),
            &[],
            &env,
        )
        .unwrap();
        assert_eq!(
            stdio.entry,
            json!({"type": "stdio", "command": "npx", "args": ["-y", "pkg"], "env": {"KEY": "a=b", "EMPTY": ""}})
        );
        assert!(stdio.warnings.is_empty());

        let http = entry_from_args(
            None,
            &args(&["HTTPS://h.example/mcp"]),
            &[],
            &args(&["Authorization:  Bearer x ", "X-A:b"]),
            &env,
        )
        .unwrap();
        assert_eq!(
            http.entry,
            json!({"type": "http", "url": "HTTPS://h.example/mcp", "headers": {"Authorization": "Bearer x", "X-A": "b"}})
        );
        let ws = entry_from_args(None, &args(&["wss://h/"]), &[], &[], &env).unwrap();
        assert_eq!(ws.entry, json!({"type": "ws", "url": "wss://h/"}));
        let sse = entry_from_args(
            Some(parse_transport("sse").unwrap()),
            &args(&["http://h/sse"]),
            &[],
            &[],
            &env,
        )
        .unwrap();
        assert_eq!(sse.entry, json!({"type": "sse", "url": "http://h/sse"}));
        let forced = entry_from_args(
            Some(ServerKind::Stdio),
            &args(&["http://not-a-url-here"]),
            &[],
            &[],
            &env,
        )
        .unwrap();
        assert_eq!(
            forced.entry,
            json!({"type": "stdio", "command": "http://not-a-url-here"})
        );

        // A reference to a variable that is not set yet: written as is, with a warning.
        let later = entry_from_args(None, &args(&["https://${HOST}/mcp"]), &[], &[], &env).unwrap();
        assert_eq!(
            messages(&later.warnings),
            ["not set and without a default: ${HOST} in url; kept as written"]
        );
        let later = entry_from_args(Some(ServerKind::Http), &args(&["${BASE_URL}/mcp"]), &[], &[], &env).unwrap();
        assert_eq!(
            messages(&later.warnings),
            [
                "not set and without a default: ${BASE_URL} in url; kept as written",
                r#"field "url": cannot be checked until its variables are set (not a valid URL: relative URL without a base)"#,
            ]
        );
    }

    #[test]
    fn plexus_add_names_what_is_wrong_with_its_arguments() {
        let env = Environment::empty();
        let args = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let error = |transport, target: &[&str], env_args: &[&str], headers: &[&str]| {
            let error = entry_from_args(transport, &args(target), &args(env_args), &args(headers), &env).unwrap_err();
            crate::terminal::chain(&error)
        };
        assert_eq!(
            error(None, &[], &[], &[]),
            "missing the server's URL, or -- COMMAND [ARGS...]"
        );
        assert_eq!(
            error(None, &["c"], &["NOVALUE"], &[]),
            r#"invalid -e "NOVALUE": expected KEY=VALUE"#
        );
        assert_eq!(
            error(None, &["c"], &["=v"], &[]),
            r#"invalid -e "=v": an environment variable name must not be empty"#
        );
        assert_eq!(
            error(None, &["c"], &[], &["A: b"]),
            "-H sets headers of a remote server; a stdio server takes environment variables (-e)"
        );
        assert_eq!(
            error(None, &["http://h/"], &["A=b"], &[]),
            "-e sets environment variables of a stdio server; an http server takes headers (-H)"
        );
        assert_eq!(
            error(None, &["http://h/"], &[], &["no colon"]),
            r#"invalid -H "no colon": expected 'Name: value'"#
        );
        assert_eq!(
            error(None, &["http://h/"], &[], &["Bad Name: v"]),
            r#"invalid -H "Bad Name: v": a header name cannot contain ' '"#
        );
        assert_eq!(
            error(Some(ServerKind::Sse), &["http://h/", "x"], &[], &[]),
            r#"an sse server takes one URL (http:// or https://), not a command: got "http://h/ x""#
        );
        assert_eq!(
            error(Some(ServerKind::Http), &["not a url"], &[], &[]),
            r#"an http server takes one URL (http:// or https://), not a command: got "not a url""#
        );
        assert_eq!(
            parse_transport("sse-ide").unwrap_err().to_string(),
            r#"unknown transport "sse-ide"; expected stdio, sse, http or ws"#
        );
        assert_eq!(parse_transport("streamable-http").unwrap(), ServerKind::Http);
    }
}

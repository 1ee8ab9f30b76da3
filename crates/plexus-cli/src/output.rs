//! Human tables and the stable JSON shapes.

use plexus::config::Scope;
use plexus::protocol::ContentBlock;
use plexus::tools::{ProcessedResult, ResultStore, ToolEntry};
use serde::Serialize;
use serde_json::{Value, json};

use crate::sources::Server;
use crate::table::{self, Column};
use crate::terminal;
use crate::terminal::outln;
use plexus::pool::text::without_server;
use plexus::pool::{Pool, ServerStatus};

/// One line of `plexus servers`; serializes to the documented JSON shape.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerRow {
    name: String,
    scope: Option<&'static str>,
    source: Option<String>,
    kind: Option<String>,
    status: &'static str,
    /// The pool's state of the server (`status` as it is now, `connecting` included).
    state: &'static str,
    reason: Option<String>,
    protocol_version: Option<String>,
    /// `initialize` or `stateless`.
    era: Option<&'static str>,
    /// How the era was chosen: `pinned` (the entry, or plexus's default) or `probe`.
    era_source: Option<&'static str>,
    server_info: Option<Value>,
    tool_count: Option<usize>,
    connect_ms: Option<u64>,
    required: bool,
    error: Option<String>,
    warnings: Vec<String>,
    errors: Vec<String>,
    /// How the project's entry differs from the one approved, one line per field, when it
    /// changed since it was approved.
    changes: Vec<String>,
}

impl ServerRow {
    /// The row of `server`, with its state in `pool` (none for an invalid entry).
    pub(crate) async fn new(server: &Server, pool: &Pool) -> ServerRow {
        let mut row = ServerRow {
            name: server.name.clone(),
            scope: server.scope.map(Scope::as_str),
            source: server.source.as_ref().map(|path| path.display().to_string()),
            kind: server.kind().map(|kind| kind.to_string()),
            status: ServerStatus::Failed.as_str(),
            state: ServerStatus::Failed.as_str(),
            reason: server.reason(),
            protocol_version: None,
            era: None,
            era_source: None,
            server_info: None,
            tool_count: None,
            connect_ms: None,
            required: server.config.as_ref().is_some_and(|config| config.options().required),
            error: server.error_summary(),
            warnings: server.warnings.iter().map(ToString::to_string).collect(),
            errors: server.errors.iter().map(ToString::to_string).collect(),
            changes: server.changes(),
        };
        // An invalid entry is not in the pool: it stays `failed` with its errors.
        let Some(state) = pool.state(&server.name) else {
            return row;
        };
        row.status = state.status.as_str();
        row.state = state.status.as_str();
        // The CLI's own reason says what to do (`plexus approve NAME`).
        row.reason = row.reason.or_else(|| state.reason.clone());
        row.connect_ms = state.connect_time.map(|took| took.as_millis() as u64);
        if let Some(error) = &state.error {
            row.error = Some(without_server(&server.name, &error.to_string()).to_owned());
        }
        row.warnings.extend(
            state
                .note
                .iter()
                .map(|note| format!("server {:?}: {note}", server.name)),
        );
        if let (ServerStatus::Connected, Some(client)) = (state.status, pool.client(&server.name)) {
            let details = client.server();
            row.protocol_version = Some(details.protocol_version.to_string());
            row.era = Some(details.protocol_version.era().as_str());
            row.era_source = Some(details.era_source.as_str());
            row.server_info = Some(json!({"name": details.server_info.name, "version": details.server_info.version}));
            match pool.tools(&server.name).await {
                Ok(tools) => row.tool_count = Some(tools.len()),
                Err(e) => {
                    row.status = ServerStatus::Failed.as_str();
                    row.error = Some(without_server(&server.name, &terminal::chain(&e)).to_owned());
                }
            }
        }
        row
    }
}

pub(crate) fn print_json<T: Serialize + ?Sized>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => outln!("{text}"),
        Err(e) => terminal::say(format!("cannot encode the output as JSON: {}", terminal::chain(&e))),
    }
}

/// The columns of `plexus servers`.
const SERVER_COLUMNS: [Column; 9] = [
    fixed("NAME"),
    fixed("SCOPE"),
    fixed("KIND"),
    fixed("STATUS"),
    fixed("PROTOCOL"),
    flexible("SERVER"),
    fixed("TOOLS"),
    flexible("SOURCE"),
    flexible("ERROR"),
];

/// A column that keeps its cells whole.
pub(crate) const fn fixed(header: &'static str) -> Column {
    Column {
        header,
        flexible: false,
    }
}

const fn flexible(header: &'static str) -> Column {
    Column { header, flexible: true }
}

/// The servers as a table that fits the terminal, then in full every cell the table cut (an
/// error, an approval hint, a long path), then every server's warnings and errors, one per line.
pub(crate) fn print_servers(rows: &[ServerRow], json: bool) {
    if json {
        return print_json(rows);
    }
    if rows.is_empty() {
        outln!("no servers configured");
        return;
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let info = r.server_info.as_ref().map_or_else(String::new, |i| {
                format!(
                    "{} {}",
                    i["name"].as_str().unwrap_or(""),
                    i["version"].as_str().unwrap_or("")
                )
            });
            let note = r.error.as_deref().or(r.reason.as_deref());
            vec![
                r.name.clone(),
                r.scope.unwrap_or_default().to_owned(),
                r.kind.clone().unwrap_or_default(),
                r.status.to_owned(),
                match (&r.protocol_version, r.era_source) {
                    (Some(version), Some("probe")) => format!("{version} (probed)"),
                    (Some(version), Some("cache")) => format!("{version} (remembered)"),
                    (version, _) => version.clone().unwrap_or_default(),
                },
                info,
                r.tool_count.map_or_else(String::new, |n| n.to_string()),
                r.source.clone().unwrap_or_default(),
                note.unwrap_or_default().to_owned(),
            ]
        })
        .collect();
    let mut extra = Vec::new();
    for row in rows {
        extra.extend(
            row.changes
                .iter()
                .map(|c| format!("changed: server {:?}: {c}", row.name)),
        );
        extra.extend(row.warnings.iter().map(|w| format!("warning: {w}")));
        extra.extend(row.errors.iter().map(|e| format!("error: {e}")));
    }
    table::print_fitted(&SERVER_COLUMNS, &table, extra);
}

/// The columns of `plexus tools`.
const TOOL_COLUMNS: [Column; 4] = [
    fixed("NAME"),
    flexible("TITLE"),
    fixed("FLAGS"),
    flexible("DESCRIPTION"),
];

/// The tools as a table that fits the terminal, each description's first line, then whatever the
/// table cut (`--json` has the descriptions whole).
pub(crate) fn print_tools(entries: &[std::sync::Arc<ToolEntry>], json: bool) {
    print_tools_after(entries, json, &[], &|_| Vec::new(), "no tools");
}

/// [`print_tools`] with the `before` columns first, the cells of the `n`th tool's from
/// `lead(n)`; `empty` is said when there is no tool. `--json` has the tools only.
pub(crate) fn print_tools_after(
    entries: &[std::sync::Arc<ToolEntry>],
    json: bool,
    before: &[Column],
    lead: &dyn Fn(usize) -> Vec<String>,
    empty: &str,
) {
    if json {
        let plain: Vec<&ToolEntry> = entries.iter().map(|entry| &**entry).collect();
        return print_json(&plain);
    }
    if entries.is_empty() {
        outln!("{empty}");
        return;
    }
    let table: Vec<Vec<String>> = entries
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let flags = crate::describe::flags(e);
            // The first line only: the rest is `plexus describe`'s (a cut first line is printed
            // whole below the table).
            let summary = e.description.trim().lines().next().unwrap_or_default();
            let mut row = lead(n);
            row.extend([e.name.clone(), e.title.clone(), flags.join(","), summary.to_owned()]);
            row
        })
        .collect();
    let columns: Vec<Column> = before.iter().chain(&TOOL_COLUMNS).copied().collect();
    table::print_fitted(&columns, &table, Vec::new());
}

/// A call's result: its text, and, for a person, each image saved to a file of `store` whose path
/// is printed (`--json` keeps the images inline, as a model gets them).
pub(crate) fn print_call_result(result: &ProcessedResult, json: bool, store: &ResultStore) {
    if json {
        return print_json(result);
    }
    for warning in &result.warnings {
        terminal::say(format_args!("warning: {warning}"));
    }
    if result.is_error {
        outln!("the tool reported an error:");
    }
    for block in &result.content {
        if let ContentBlock::Image(image) = block {
            terminal::print_block(&saved_image(image, store));
            continue;
        }
        let block = serde_json::to_value(block).unwrap_or(Value::Null);
        terminal::print_block(&describe_block(&block));
    }
    if let Some(structured) = &result.structured_content {
        let text = serde_json::to_string_pretty(structured).unwrap_or_default();
        terminal::print_block(&format!("structured content:\n{text}"));
    }
}

/// `[image: image/png, 69 bytes, saved to PATH]`, or why it could not be saved.
fn saved_image(image: &plexus::protocol::ImageContent, store: &ResultStore) -> String {
    use base64::Engine as _;
    let saved = base64::engine::general_purpose::STANDARD
        .decode(image.data.trim())
        .map_err(|e| format!("its base64 does not decode: {e}"))
        .and_then(|bytes| plexus::tools::save_binary(store, &image.mime_type, &bytes).map_err(|e| terminal::chain(&e)));
    match saved {
        Ok(file) => format!(
            "[image: {}, {} bytes, saved to {}]",
            image.mime_type,
            file.bytes,
            file.path.display()
        ),
        Err(why) => format!("[image: {}, not saved: {why}]", image.mime_type),
    }
}

/// Text as itself; binary and linked content as a one-line summary.
fn describe_block(block: &Value) -> String {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => text("text").to_owned(),
        kind @ ("image" | "audio") => format!("[{kind}: {}, {} bytes of base64]", text("mimeType"), text("data").len()),
        "resource_link" => format!("[resource link: {} ({})]", text("uri"), text("name")),
        "resource" => {
            let resource = &block["resource"];
            match resource.get("text").and_then(Value::as_str) {
                Some(body) => format!("[resource {}]\n{body}", resource["uri"].as_str().unwrap_or_default()),
                None => format!(
                    "[resource {}: {} bytes of base64]",
                    resource["uri"].as_str().unwrap_or_default(),
                    resource["blob"].as_str().map_or(0, str::len)
                ),
            }
        }
        other => format!("[{other} content]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_summarised() {
        assert_eq!(describe_block(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            describe_block(&json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})),
            "[image: image/png, 4 bytes of base64]"
        );
        assert_eq!(
            describe_block(&json!({"type": "resource_link", "uri": "file:///a", "name": "a"})),
            "[resource link: file:///a (a)]"
        );
    }
}

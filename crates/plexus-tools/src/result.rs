//! A tool's result as the model should see it: text and `structuredContent` kept, large images
//! downsampled, other binary content saved to files, and output over the size limit saved whole
//! with its head kept. `isError: true` stays a result (the model sees it), not a Rust error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use plexus_protocol::{CallToolResult, ContentBlock, ImageContent, ResourceContents, Tool};
use serde::Serialize;
use serde_json::Value;

use crate::image::{ImageLimits, fit_image};
use crate::store::{ResultStore, ResultStoreError};

/// `MAX_MCP_OUTPUT_TOKENS`: the largest output handed on, in estimated tokens.
pub const MAX_OUTPUT_TOKENS_VAR: &str = "MAX_MCP_OUTPUT_TOKENS";
/// The default of [`MAX_OUTPUT_TOKENS_VAR`]: 25 000 tokens.
pub const DEFAULT_MAX_OUTPUT_TOKENS: usize = 25_000;
/// Above this many estimated tokens a result carries a warning: 10 000.
pub const WARN_OUTPUT_TOKENS: usize = 10_000;
/// The estimate: one token per 4 characters of text (rounded up), a common rule of thumb for
/// English and code; JSON (`structuredContent`) is counted by its serialized length.
pub const CHARS_PER_TOKEN: usize = 4;
/// A tool's `_meta` key that raises its own limit, in characters…
pub const MAX_RESULT_CHARS_META: &str = "anthropic/maxResultSizeChars";
/// …up to this many characters.
pub const MAX_RESULT_CHARS_CAP: usize = 500_000;

/// How results are processed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultSettings {
    /// The largest output in estimated tokens ([`DEFAULT_MAX_OUTPUT_TOKENS`]).
    pub max_output_tokens: usize,
    /// Above this, a warning ([`WARN_OUTPUT_TOKENS`]).
    pub warn_output_tokens: usize,
    /// When an image is downsampled.
    pub images: ImageLimits,
    /// The most files one result may write ([`MAX_FILES_PER_RESULT`]); the content past it is
    /// summarized, not saved.
    pub max_files: usize,
}

/// The default of [`ResultSettings::max_files`]: 32 files.
pub const MAX_FILES_PER_RESULT: usize = 32;

impl Default for ResultSettings {
    fn default() -> Self {
        ResultSettings {
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            warn_output_tokens: WARN_OUTPUT_TOKENS,
            images: ImageLimits::default(),
            max_files: MAX_FILES_PER_RESULT,
        }
    }
}

impl ResultSettings {
    /// The defaults with `MAX_MCP_OUTPUT_TOKENS` from `lookup` (ignored unless a positive
    /// integer).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> ResultSettings {
        let mut settings = ResultSettings::default();
        if let Some(tokens) = lookup(MAX_OUTPUT_TOKENS_VAR)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
        {
            settings.max_output_tokens = tokens;
        }
        settings
    }

    /// The most characters of output `tool` may hand on: the token limit's characters, raised
    /// (never lowered) by the tool's `_meta["anthropic/maxResultSizeChars"]` up to
    /// [`MAX_RESULT_CHARS_CAP`].
    pub fn max_chars(&self, tool: Option<&Tool>) -> usize {
        let base = self.max_output_tokens.saturating_mul(CHARS_PER_TOKEN);
        let raised = tool
            .and_then(|tool| tool.meta.as_ref())
            .and_then(|meta| meta.get(MAX_RESULT_CHARS_META))
            .and_then(Value::as_u64)
            .map_or(0, |chars| {
                usize::try_from(chars).unwrap_or(usize::MAX).min(MAX_RESULT_CHARS_CAP)
            });
        base.max(raised)
    }
}

/// A file a result's content was saved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedFile {
    /// Where.
    pub path: std::path::PathBuf,
    /// The content's MIME type.
    pub mime_type: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A processed result. Serializes to the `plexus call --json` shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessedResult {
    /// The tool's `isError`.
    pub is_error: bool,
    /// The content the model sees.
    pub content: Vec<ContentBlock>,
    /// The structured result, as sent (`null` when absent or saved to a file).
    pub structured_content: Option<Value>,
    /// The files content was saved to.
    pub files: Vec<SavedFile>,
    /// Whether output over the limit was cut (it is whole in one of the files).
    pub truncated: bool,
    /// What the host should know (large output, images that could not be decoded).
    pub warnings: Vec<String>,
}

/// Why a result could not be processed. (A content block that cannot be handed on, such as
/// one whose base64 does not decode or that no file may hold, is not an error of the result: it
/// is replaced by a line that says why, with a warning, and the other blocks pass.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// A file of output over the limit could not be written.
    #[error(transparent)]
    Store(#[from] ResultStoreError),
    /// Processing on a blocking thread was stopped before it ended (the runtime shut down).
    #[error("processing the result was stopped: the program is shutting down")]
    Stopped,
}

/// Whether processing `result` of `tool` may block for long: it holds binary content (decoded,
/// perhaps resized, perhaps written to a file), or text that may be over the limit (written to a
/// file). A host on an async runtime runs such a result's [`process`] on a blocking thread; any
/// other result is processed in a few microseconds. Structured content is not counted: measuring
/// it costs about what decoding it did, and in the rare case that it tips the output over the
/// limit, that file is written on the calling thread.
pub fn processing_may_block(result: &CallToolResult, tool: Option<&Tool>, settings: &ResultSettings) -> bool {
    let mut text_bytes = 0usize;
    for block in &result.content {
        if is_binary(block) {
            return true;
        }
        // A character is at least one byte: under the limit in bytes is under it in chars.
        text_bytes = text_bytes.saturating_add(block.as_text().map_or(0, str::len));
    }
    text_bytes > settings.max_chars(tool)
}

/// Whether `block` holds binary content (an image, audio, a blob resource): what processing
/// fits or saves.
fn is_binary(block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Image(_) | ContentBlock::Audio(_) => true,
        ContentBlock::Resource(embedded) => matches!(embedded.resource, ResourceContents::Blob(_)),
        _ => false,
    }
}

/// Processes `result` of `tool` (its definition, for its size limit), saving files in `store`.
pub fn process(
    result: CallToolResult,
    tool: Option<&Tool>,
    store: &ResultStore,
    settings: &ResultSettings,
) -> Result<ProcessedResult, ResultError> {
    let mut processed = ProcessedResult {
        is_error: result.is_error(),
        content: Vec::new(),
        structured_content: result.structured_content,
        files: Vec::new(),
        truncated: false,
        warnings: Vec::new(),
    };
    if result.content.iter().any(is_binary) {
        processed.content.reserve(result.content.len());
        for block in result.content {
            let block = match block {
                ContentBlock::Image(image) => image_block(image, &mut processed, store, settings),
                ContentBlock::Audio(audio) => binary_block(
                    &mut processed,
                    store,
                    settings,
                    ("audio", &audio.mime_type),
                    &audio.data,
                ),
                ContentBlock::Resource(embedded) => match &embedded.resource {
                    ResourceContents::Blob(blob) => {
                        let mime = blob.mime_type.as_deref().unwrap_or("application/octet-stream");
                        binary_block(&mut processed, store, settings, ("resource", mime), &blob.blob)
                    }
                    ResourceContents::Text(_) => ContentBlock::Resource(embedded),
                },
                other => other,
            };
            processed.content.push(block);
        }
    } else {
        // Nothing to fit or save: the blocks stay where they are.
        processed.content = result.content;
    }
    limit_output(&mut processed, store, settings.max_chars(tool), settings)?;
    Ok(processed)
}

/// An image as the model should get it: as sent, downsampled, or (not a type models take, not
/// decodable, too large to decode) saved to a file.
fn image_block(
    mut image: ImageContent,
    processed: &mut ProcessedResult,
    store: &ResultStore,
    settings: &ResultSettings,
) -> ContentBlock {
    let bytes = match STANDARD.decode(image.data.trim()) {
        Ok(bytes) => bytes,
        Err(e) => {
            return not_shown(
                processed,
                ("image", &image.mime_type),
                &format!("its data is not valid base64: {e}"),
            );
        }
    };
    match fit_image(&bytes, &image.mime_type, &settings.images) {
        Ok(None) => ContentBlock::Image(image),
        Ok(Some(fitted)) => {
            image.data = STANDARD.encode(&fitted.bytes);
            image.mime_type = fitted.mime_type;
            ContentBlock::Image(image)
        }
        Err(why) => {
            let why = plexus_transport::error_chain(&why);
            processed.warnings.push(format!("an image was saved to a file: {why}"));
            saved(processed, store, settings, ("image", &image.mime_type), &bytes)
        }
    }
}

/// Binary content (`what`: `audio` or `resource`, of type `mime`) decoded and saved to a file.
fn binary_block(
    processed: &mut ProcessedResult,
    store: &ResultStore,
    settings: &ResultSettings,
    (what, mime): (&str, &str),
    data: &str,
) -> ContentBlock {
    match STANDARD.decode(data.trim()) {
        Ok(bytes) => saved(processed, store, settings, (what, mime), &bytes),
        Err(e) => not_shown(processed, (what, mime), &format!("its data is not valid base64: {e}")),
    }
}

/// Saves binary content and returns the text block that stands for it; past the result's file
/// limit, or when the file cannot be written, the block says so instead.
fn saved(
    processed: &mut ProcessedResult,
    store: &ResultStore,
    settings: &ResultSettings,
    (what, mime): (&str, &str),
    bytes: &[u8],
) -> ContentBlock {
    if processed.files.len() >= settings.max_files {
        let why = format!(
            "{} bytes, not saved: this result already saved {} files, the most one result may",
            bytes.len(),
            settings.max_files
        );
        return not_shown(processed, (what, mime), &why);
    }
    match save_binary(store, mime, bytes) {
        Ok(file) => {
            let text = format!(
                "[{mime} content, {} bytes, saved to {}]",
                bytes.len(),
                file.path.display()
            );
            processed.files.push(file);
            ContentBlock::text(text)
        }
        Err(e) => not_shown(
            processed,
            (what, mime),
            &format!(
                "{} bytes, not saved: {}",
                bytes.len(),
                plexus_transport::error_chain(&e)
            ),
        ),
    }
}

/// The line that stands for a block that cannot be handed on, and its warning; the warnings of
/// many such blocks are counted, not repeated.
fn not_shown(processed: &mut ProcessedResult, (what, mime): (&str, &str), why: &str) -> ContentBlock {
    const MAX_WARNINGS: usize = 8;
    let line = format!("[{what} content ({mime}) not shown: {why}]");
    if processed.warnings.len() < MAX_WARNINGS {
        processed.warnings.push(line.clone());
    } else if processed.warnings.len() == MAX_WARNINGS {
        processed
            .warnings
            .push("more content blocks were not shown (see the content)".to_owned());
    }
    ContentBlock::text(line)
}

/// Writes binary content of type `mime` to a new file of `store`, with the type's extension.
pub fn save_binary(store: &ResultStore, mime: &str, bytes: &[u8]) -> Result<SavedFile, ResultStoreError> {
    let path = store.save("content", extension(mime), bytes)?;
    Ok(SavedFile {
        path,
        mime_type: mime.to_owned(),
        bytes: bytes.len() as u64,
    })
}

/// The file extension for a MIME type (`bin` when unknown).
pub fn extension(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or(mime).trim().to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tiff",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/webm" => "weba",
        "audio/mp4" | "audio/aac" => "m4a",
        "video/mp4" => "mp4",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "application/json" => "json",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "text/html" => "html",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "application/vnd.ms-powerpoint" => "ppt",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => "pptx",
        _ => "bin",
    }
}

/// Output over `max_chars` (text blocks and `structuredContent`) is saved whole to a file and
/// replaced by its head and a note naming the file; output over the warning size carries a
/// warning.
fn limit_output(
    processed: &mut ProcessedResult,
    store: &ResultStore,
    max_chars: usize,
    settings: &ResultSettings,
) -> Result<(), ResultError> {
    // Counted as it is written, without keeping it: it is kept only for a result over the limit.
    let structured_chars = processed.structured_content.as_ref().map_or(0, |value| {
        let mut counted = CharCount(0);
        let _ = serde_json::to_writer_pretty(&mut counted, value);
        counted.0
    });
    let text_chars: usize = processed
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(|text| text.chars().count())
        .sum();
    let chars = text_chars + structured_chars;
    let tokens = chars.div_ceil(CHARS_PER_TOKEN);
    if chars <= max_chars {
        if tokens > settings.warn_output_tokens {
            processed
                .warnings
                .push(format!("the result is large: about {tokens} tokens"));
        }
        return Ok(());
    }
    // Whole, in one file: every text block, then the structured result.
    let mut whole: String = processed
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(structured) = &processed.structured_content {
        if !whole.is_empty() {
            whole.push('\n');
        }
        whole.push_str(&serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let path = store.save("output", "txt", whole.as_bytes())?;
    let note = format!(
        "\n[output truncated: about {tokens} tokens, over the limit of {} ({} characters); the whole output \
         is in {}]",
        max_chars.div_ceil(CHARS_PER_TOKEN),
        chars,
        path.display()
    );
    let room = max_chars.saturating_sub(note.chars().count());
    let head: String = whole.chars().take(room).collect();
    processed.content.retain(|block| block.as_text().is_none());
    processed.content.insert(0, ContentBlock::text(format!("{head}{note}")));
    processed.structured_content = None;
    processed.files.push(SavedFile {
        path,
        mime_type: "text/plain".into(),
        bytes: whole.len() as u64,
    });
    processed.truncated = true;
    processed
        .warnings
        .push(format!("the output was truncated to {max_chars} characters"));
    Ok(())
}

/// Counts the characters of the UTF-8 written to it (every byte but a continuation byte starts
/// one), keeping none of it.
struct CharCount(usize);

impl std::io::Write for CharCount {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    fn png(width: u32, height: u32) -> String {
        let image = image::RgbImage::from_pixel(width, height, image::Rgb([200, 10, 10]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(image)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        STANDARD.encode(out.into_inner())
    }

    proptest::proptest! {
        /// The count of the pretty-printed structured result is that of the string it would be.
        #[test]
        fn structured_content_is_counted_as_its_pretty_text(
            key in ".{0,8}",
            text in ".{0,40}",
            n in proptest::prelude::any::<i64>(),
        ) {
            let value = json!({key: [text, n, {"nested": null, "ok": true}]});
            let mut counted = CharCount(0);
            serde_json::to_writer_pretty(&mut counted, &value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            proptest::prop_assert_eq!(counted.0, pretty.chars().count());
        }
    }

    #[test]
    fn one_result_writes_at_most_its_files_and_the_rest_is_summarized() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "t");
        let blocks: Vec<Value> = (0..40)
            .map(|_| json!({"type": "audio", "mimeType": "audio/wav", "data": "AA=="}))
            .collect();
        let processed = process(
            result(json!({"content": blocks})),
            None,
            &store,
            &ResultSettings::default(),
        )
        .unwrap();
        assert_eq!(processed.files.len(), MAX_FILES_PER_RESULT);
        assert_eq!(std::fs::read_dir(store.dir()).unwrap().count(), MAX_FILES_PER_RESULT);
        assert_eq!(processed.content.len(), 40);
        let line = "[audio content (audio/wav) not shown: 1 bytes, not saved: this result already saved 32 files, \
                    the most one result may]";
        assert_eq!(processed.content[39].as_text(), Some(line));
        // Eight blocks were left out: eight warnings, not one per block past that.
        assert_eq!(processed.warnings.len(), 8);
    }

    #[test]
    fn a_block_whose_base64_is_broken_is_reported_and_the_others_pass() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "t");
        let content = json!({"content": [
            {"type": "text", "text": "before"},
            {"type": "image", "mimeType": "image/png", "data": "@@not base64@@"},
            {"type": "audio", "mimeType": "audio/wav", "data": "AA=="}
        ]});
        let processed = process(result(content), None, &store, &ResultSettings::default()).unwrap();
        assert_eq!(processed.content[0].as_text(), Some("before"));
        let broken = processed.content[1].as_text().unwrap();
        assert!(
            broken.starts_with("[image content (image/png) not shown: its data is not valid base64: "),
            "{broken}"
        );
        assert_eq!(processed.files.len(), 1);
        assert_eq!(processed.warnings, [broken.to_owned()]);
    }

    #[test]
    fn past_the_sessions_bytes_nothing_is_written() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "t").with_max_bytes(3);
        let blocks = json!({"content": [
            {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
            {"type": "audio", "mimeType": "audio/wav", "data": "AA=="}
        ]});
        let processed = process(result(blocks), None, &store, &ResultSettings::default()).unwrap();
        assert_eq!(processed.files.len(), 1);
        let refused = processed.content[1].as_text().unwrap();
        assert!(
            refused
                .starts_with("[audio content (audio/wav) not shown: 1 bytes, not saved: cannot write tool output to ")
                && refused.ends_with(": the session's files may hold at most 3 bytes]"),
            "{refused}"
        );
    }

    #[test]
    fn only_binary_content_or_text_that_may_be_over_the_limit_may_block() {
        let settings = ResultSettings {
            max_output_tokens: 10,
            ..ResultSettings::default()
        };
        let limit = settings.max_chars(None);
        let may_block = |value: Value| processing_may_block(&result(value), None, &settings);
        let text = |len: usize| json!({"type": "text", "text": "é".repeat(len / 2)});
        assert!(!may_block(
            json!({"content": [text(limit)], "structuredContent": {"a": 1}})
        ));
        // Two bytes a character: over the limit in bytes, not in characters; still sent off.
        assert!(may_block(json!({"content": [text(limit), text(2)]})));
        let data = STANDARD.encode(b"x");
        assert!(may_block(
            json!({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]})
        ));
        assert!(may_block(
            json!({"content": [{"type": "audio", "data": data, "mimeType": "audio/wav"}]})
        ));
        assert!(may_block(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///b", "blob": data}},
        ]})));
        assert!(!may_block(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///t", "text": "t"}},
            {"type": "resource_link", "uri": "file:///l", "name": "l"},
        ]})));
    }

    #[test]
    fn binary_content_goes_to_private_files_with_its_extension() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "t");
        let audio = STANDARD.encode(b"RIFF....WAVE");
        let pdf = STANDARD.encode(b"%PDF-1.7");
        let processed = process(
            result(json!({"content": [
                {"type": "text", "text": "here"},
                {"type": "audio", "data": audio, "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": pdf}},
                {"type": "image", "data": STANDARD.encode(b"<svg/>"), "mimeType": "image/svg+xml"},
            ], "isError": true})),
            None,
            &store,
            &ResultSettings::default(),
        )
        .unwrap();
        assert!(processed.is_error, "isError stays a result");
        let exts: Vec<_> = processed
            .files
            .iter()
            .map(|f| f.path.extension().unwrap().to_str().unwrap().to_owned())
            .collect();
        assert_eq!(exts, ["wav", "pdf", "svg"]);
        assert_eq!(std::fs::read(&processed.files[0].path).unwrap(), b"RIFF....WAVE");
        let mode = std::fs::metadata(&processed.files[1].path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let texts: Vec<&str> = processed.content.iter().filter_map(ContentBlock::as_text).collect();
        assert_eq!(texts[0], "here");
        assert_eq!(
            texts[1],
            format!(
                "[audio/wav content, 12 bytes, saved to {}]",
                processed.files[0].path.display()
            )
        );
        assert_eq!(processed.warnings.len(), 1, "{:?}", processed.warnings);
    }

    #[test]
    fn a_large_image_is_downsampled_in_place() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "t");
        let settings = ResultSettings {
            images: ImageLimits {
                max_side: 50,
                ..ImageLimits::default()
            },
            ..ResultSettings::default()
        };
        let small = png(20, 10);
        let processed = process(
            result(json!({"content": [
                {"type": "image", "data": png(200, 100), "mimeType": "image/png"},
                {"type": "image", "data": small, "mimeType": "image/png"},
            ]})),
            None,
            &store,
            &settings,
        )
        .unwrap();
        let ContentBlock::Image(resized) = &processed.content[0] else {
            panic!()
        };
        let decoded = image::load_from_memory(&STANDARD.decode(&resized.data).unwrap()).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (50, 25));
        let ContentBlock::Image(kept) = &processed.content[1] else {
            panic!()
        };
        assert_eq!(kept.data, small);
        assert!(processed.files.is_empty());
    }

    #[test]
    fn output_over_the_limit_is_saved_whole_and_cut_to_its_head() {
        let home = tempfile::tempdir().unwrap();
        let store = ResultStore::new(home.path(), "t");
        let settings = ResultSettings {
            max_output_tokens: 100,
            warn_output_tokens: 50,
            ..ResultSettings::default()
        };
        let long = "é".repeat(1000);
        let processed = process(
            result(json!({"content": [{"type": "text", "text": long}], "structuredContent": {"n": 1}})),
            None,
            &store,
            &settings,
        )
        .unwrap();
        assert!(processed.truncated);
        let text = processed.content[0].as_text().unwrap();
        assert_eq!(text.chars().count(), 400, "within the limit of 100 tokens × 4");
        assert!(text.contains("[output truncated: about "), "{text}");
        let whole = std::fs::read_to_string(&processed.files[0].path).unwrap();
        assert!(whole.starts_with(&long) && whole.contains("\"n\": 1"));
        assert_eq!(processed.structured_content, None);

        // A tool may raise its own limit; above the warning size there is a warning.
        let tool: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {}, "_meta": {MAX_RESULT_CHARS_META: 2000}}))
                .unwrap();
        assert_eq!(settings.max_chars(Some(&tool)), 2000);
        let processed = process(
            result(json!({"content": [{"type": "text", "text": "x".repeat(1000)}]})),
            Some(&tool),
            &store,
            &settings,
        )
        .unwrap();
        assert!(!processed.truncated);
        assert_eq!(processed.warnings, ["the result is large: about 250 tokens"]);
    }
}

//! Text that comes from elsewhere (a server's error, a failed connect's reason), kept bounded;
//! durations as errors show them.

/// `text` with at most `max_chars` characters: a longer one is cut on a character boundary and
/// ends with `…` (which counts as one of them). The text is otherwise kept as it is: escaping for
/// a terminal or a page is the job of whoever shows it.
pub(crate) fn cut(text: &str, max_chars: usize) -> String {
    if text.char_indices().nth(max_chars).is_none() {
        return text.to_owned();
    }
    let end = text
        .char_indices()
        .nth(max_chars.saturating_sub(1))
        .map_or(0, |(index, _)| index);
    format!("{}…", &text[..end])
}

/// `5 s`, `1500 ms`.
pub(crate) fn show_duration(duration: std::time::Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "ab…");
        assert_eq!(cut("ééééé", 4), "ééé…");
        assert_eq!(cut("", 0), "");
        assert_eq!(cut("a\u{1b}[31mb", 100), "a\u{1b}[31mb", "kept verbatim");
    }
}

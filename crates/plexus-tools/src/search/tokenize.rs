//! Words and name keys of tool text: how a name, a title, a description, an argument name and a
//! query are cut into the words the index counts, and how a name is reduced to the key that
//! name matching compares.
//!
//! A word is a run of letters or a run of digits, lowercased. Everything that is neither a
//! letter nor a digit separates words (`_`, `-`, `.`, spaces, punctuation), and so do the
//! boundaries inside an identifier: a lowercase letter followed by an uppercase one
//! (`getWeather`), the last capital of a run followed by a lowercase letter (`HTTPServer`), and
//! a letter next to a digit (`v2`). `get_weather`, `get-weather`, `getWeather` and `Get Weather`
//! are all the words `get`, `weather`.

/// The longest word kept, in characters: a longer run is cut there (its rest is dropped), so
/// that no single word of a server's text is unbounded.
pub const MAX_WORD_CHARS: usize = 64;

/// What a character is to the word splitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// An uppercase letter.
    Upper,
    /// Any other letter (lowercase, or of a script without case).
    Lower,
    /// A digit.
    Digit,
    /// Anything else: separates words.
    Other,
}

fn class(c: char) -> Class {
    if c.is_alphabetic() {
        if c.is_uppercase() { Class::Upper } else { Class::Lower }
    } else if c.is_numeric() {
        Class::Digit
    } else {
        Class::Other
    }
}

/// Calls `word` with each word of `text` in order (see the module's rules). The word is
/// lent from a buffer reused across words: nothing is allocated per word.
pub fn for_each_word(text: &str, mut word: impl FnMut(&str)) {
    let mut buffer = String::new();
    let mut chars_in_word = 0usize;
    let mut previous = Class::Other;
    let mut chars = text.chars().peekable();
    let mut flush = |buffer: &mut String, chars_in_word: &mut usize| {
        if !buffer.is_empty() {
            word(buffer);
            buffer.clear();
        }
        *chars_in_word = 0;
    };
    while let Some(c) = chars.next() {
        let current = class(c);
        let boundary = match (previous, current) {
            (_, Class::Other)
            | (Class::Lower, Class::Upper)
            | (Class::Digit, Class::Upper | Class::Lower)
            | (Class::Upper | Class::Lower, Class::Digit) => true,
            // `HTTPServer`: the `S` starts a word when a lowercase letter follows it.
            (Class::Upper, Class::Upper) => chars.peek().is_some_and(|next| class(*next) == Class::Lower),
            _ => false,
        };
        if boundary {
            flush(&mut buffer, &mut chars_in_word);
        }
        previous = current;
        if current == Class::Other || chars_in_word >= MAX_WORD_CHARS {
            continue;
        }
        buffer.extend(c.to_lowercase());
        chars_in_word += 1;
    }
    flush(&mut buffer, &mut chars_in_word);
}

/// The words of `text` (see [`for_each_word`]).
pub fn words(text: &str) -> Vec<String> {
    let mut all = Vec::new();
    for_each_word(text, |word| all.push(word.to_owned()));
    all
}

/// The name key of `text`: its letters and digits, lowercased, everything else left out. Two
/// names with the same key differ only in case and separators (`get_weather`, `getWeather`,
/// `Get-Weather`).
pub fn name_key(text: &str) -> String {
    let mut key = String::with_capacity(text.len());
    for c in text.chars().filter(|c| c.is_alphanumeric()) {
        key.extend(c.to_lowercase());
    }
    key
}

/// A set of the characters of `key` in 64 bits: `a`–`z` and `0`–`9` have a bit each, any other
/// character shares one of the other 28 by its code. One edit (insertion, deletion,
/// substitution, transposition) changes at most two bits, so two keys whose sets differ in more
/// than `2 × n` bits are more than `n` edits apart: a test that rules out most names before
/// their edit distance is computed.
pub fn char_set(key: &str) -> u64 {
    key.chars().fold(0u64, |set, c| {
        let bit = match c {
            'a'..='z' => u32::from(c) - u32::from('a'),
            '0'..='9' => 26 + u32::from(c) - u32::from('0'),
            _ => 36 + u32::from(c) % 28,
        };
        set | (1 << bit)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn identifiers_split_into_lowercase_words() {
        for name in [
            "get_weather",
            "get-weather",
            "getWeather",
            "GetWeather",
            "Get Weather",
            "get__weather",
        ] {
            assert_eq!(words(name), ["get", "weather"], "{name}");
        }
        assert_eq!(words("HTTPServer2Go"), ["http", "server", "2", "go"]);
        assert_eq!(
            words("mcp__my-server__readFileV2"),
            ["mcp", "my", "server", "read", "file", "v", "2"]
        );
        assert_eq!(words("  ...  "), Vec::<String>::new());
        assert_eq!(words("Ünïcode Wörter"), ["ünïcode", "wörter"]);
        assert_eq!(words("ABC"), ["abc"]);
        assert_eq!(words("aB"), ["a", "b"]);
    }

    #[test]
    fn keys_ignore_case_and_separators() {
        for name in [
            "get_weather",
            "getWeather",
            "Get-Weather",
            "get weather",
            "GET__WEATHER",
        ] {
            assert_eq!(name_key(name), "getweather", "{name}");
        }
    }

    #[test]
    fn a_long_run_is_cut() {
        let long = "a".repeat(MAX_WORD_CHARS * 3);
        assert_eq!(
            words(&format!("{long} b")),
            ["a".repeat(MAX_WORD_CHARS), "b".to_owned()]
        );
    }

    /// Identifier-like text: letters of both cases, digits, separators, a few non-ASCII letters.
    fn text() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-zA-Z0-9_ .\\-éÉß]{0,60}").unwrap()
    }

    proptest! {
        #[test]
        fn words_are_lowercase_bounded_and_hold_no_separator(text in text()) {
            for word in words(&text) {
                prop_assert!(!word.is_empty());
                prop_assert!(word.chars().all(char::is_alphanumeric), "{word:?}");
                prop_assert_eq!(word.to_lowercase(), word.clone());
                prop_assert!(word.chars().count() <= MAX_WORD_CHARS);
            }
        }

        #[test]
        fn the_words_spell_the_key(text in text()) {
            // Nothing is lost or invented: the words, joined, are the name key.
            prop_assert_eq!(words(&text).concat(), name_key(&text));
        }

        #[test]
        fn separators_are_interchangeable(text in text()) {
            let spaced = text.replace(['_', '-', '.'], " ");
            prop_assert_eq!(words(&spaced), words(&text));
        }

        #[test]
        fn words_of_joined_text_are_the_words_of_each(a in text(), b in text()) {
            let mut both = words(&a);
            both.extend(words(&b));
            prop_assert_eq!(words(&format!("{a} {b}")), both);
        }

        #[test]
        fn one_edit_changes_at_most_two_bits(key in "[a-z0-9]{1,20}", at in 0usize..20, c in "[a-z0-9]") {
            let at = at % key.len();
            let c = c.chars().next().unwrap();
            let mut substituted = key.clone();
            substituted.replace_range(at..=at, &c.to_string());
            let mut inserted = key.clone();
            inserted.insert(at, c);
            let mut deleted = key.clone();
            deleted.remove(at);
            for edited in [substituted, inserted, deleted] {
                prop_assert!((char_set(&key) ^ char_set(&edited)).count_ones() <= 2);
            }
        }
    }
}

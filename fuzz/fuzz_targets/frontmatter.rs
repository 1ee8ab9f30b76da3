//! Fuzzes the reading of a skill's `SKILL.md` front matter, straight from a server.
//!
//! Checked: reading never panics (no deep nesting overflows the stack); a front matter it
//! accepts is a JSON object that serializes; and it refuses one longer than its limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plexus_client::{FrontMatterError, MAX_FRONTMATTER_BYTES, parse_frontmatter};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_frontmatter(text) {
        Ok(fields) => {
            assert!(serde_json::to_string(&fields).is_ok());
        }
        Err(FrontMatterError::TooLong { limit }) => assert_eq!(limit, MAX_FRONTMATTER_BYTES),
        Err(_) => {}
    }
});

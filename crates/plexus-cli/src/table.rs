//! Tables for people: a header, columns as wide as their widest cell (at most 256 characters), and
//! when that is wider than the terminal, the flexible columns cut (with `…`), then the others,
//! until the table fits. Every cell is one line,
//! its control characters escaped; the caller learns which cells were cut, so that it can print
//! them in full below the table.

use crate::terminal;
use crate::terminal::outln;

/// A column: its header, and whether it may be cut to fit the width.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    pub(crate) header: &'static str,
    pub(crate) flexible: bool,
}

/// A flexible column is never cut below this many characters (or its header's width).
const MIN_FLEXIBLE: usize = 12;

/// The widest any column is, terminal or not: a longer cell (a 70 000-character title from a
/// server) is cut, and printed whole below the table.
const MAX_COLUMN: usize = 256;

/// The space between two columns.
const GAP: usize = 2;

/// A rendered table: its lines, and for each row which of its cells did not fit whole (cut to the
/// width, or more than one line).
#[derive(Debug)]
pub(crate) struct Rendered {
    pub(crate) lines: Vec<String>,
    pub(crate) cut: Vec<Vec<bool>>,
}

/// The first line of `text`, escaped for a cell; and whether anything was left out.
fn first_line(text: &str) -> (String, bool) {
    let trimmed = text.trim();
    let first = trimmed.lines().next().unwrap_or_default().trim_end();
    (terminal::line(first).into_owned(), first.len() < trimmed.len())
}

/// Renders `rows` under `columns` within `width` characters (none: no limit).
pub(crate) fn render(columns: &[Column], rows: &[Vec<String>], width: Option<usize>) -> Rendered {
    let cells: Vec<Vec<(String, bool)>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| first_line(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = columns.iter().map(|c| c.header.chars().count()).collect();
    for row in &cells {
        for (width, (cell, _)) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for width in &mut widths {
        *width = (*width).min(MAX_COLUMN);
    }
    if let Some(limit) = width {
        // The flexible columns give way first; when they are at their floor, the others do.
        shrink(columns, &mut widths, limit, true);
        shrink(columns, &mut widths, limit, false);
    }
    let render_line = |cells: &mut dyn Iterator<Item = (&str, bool)>| -> (String, Vec<bool>) {
        let mut out = String::new();
        let mut cut = Vec::new();
        for (i, (cell, partial)) in cells.enumerate() {
            let (shown, shortened) = fit(cell, widths[i]);
            cut.push(partial || shortened);
            out.push_str(&shown);
            if i + 1 < widths.len() {
                // Padded by hand: a width in a format string panics past 65 535, and a cell from
                // a server may be longer than that.
                let padding = widths[i].saturating_sub(shown.chars().count()) + GAP;
                out.extend(std::iter::repeat_n(' ', padding));
            }
        }
        (out.trim_end().to_owned(), cut)
    };
    let mut lines = Vec::with_capacity(rows.len() + 1);
    lines.push(render_line(&mut columns.iter().map(|c| (c.header, false))).0);
    let mut cut = Vec::with_capacity(rows.len());
    for row in &cells {
        let (line, row_cut) = render_line(&mut row.iter().map(|(cell, partial)| (cell.as_str(), *partial)));
        lines.push(line);
        cut.push(row_cut);
    }
    Rendered { lines, cut }
}

/// Narrows the flexible columns (or, with `flexible` false, the others), widest first, until the
/// table fits `limit` or none can give more.
fn shrink(columns: &[Column], widths: &mut [usize], limit: usize, flexible: bool) {
    let total = |widths: &[usize]| widths.iter().sum::<usize>() + GAP * widths.len().saturating_sub(1);
    let floor = |i: usize| columns[i].header.chars().count().max(MIN_FLEXIBLE);
    while total(widths) > limit {
        let widest = (0..widths.len())
            .filter(|&i| columns[i].flexible == flexible && widths[i] > floor(i))
            .max_by_key(|&i| widths[i]);
        let Some(widest) = widest else { return };
        let excess = total(widths) - limit;
        let next = (0..widths.len())
            .filter(|&i| i != widest && columns[i].flexible == flexible)
            .map(|i| widths[i])
            .filter(|&w| w < widths[widest])
            .max()
            .unwrap_or(0);
        let step = excess.min(widths[widest] - next.max(floor(widest))).max(1);
        widths[widest] -= step;
    }
}

/// `cell` in `width` characters: itself, or cut with `…`.
fn fit(cell: &str, width: usize) -> (String, bool) {
    if cell.chars().count() <= width {
        return (cell.to_owned(), false);
    }
    let mut cut: String = cell.chars().take(width.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    (cut, true)
}

/// Prints a rendered table on stdout.
fn print(rendered: &Rendered) {
    for line in &rendered.lines {
        outln!("{line}");
    }
}

/// Prints `rows` under `columns` as a table that fits the terminal, then, after a blank line,
/// every cell the table cut in full (`KEY: column: text`, KEY being the row's first cell) and the
/// `extra` lines.
pub(crate) fn print_fitted(columns: &[Column], rows: &[Vec<String>], extra: Vec<String>) {
    let rendered = render(columns, rows, terminal::width());
    print(&rendered);
    let mut details = cut_cells(columns, rows, &rendered);
    details.extend(extra);
    if !details.is_empty() {
        outln!();
        for line in details {
            terminal::print_block(&line);
        }
    }
}

/// `KEY: column: text` for every cell of `rows` that `rendered` cut.
fn cut_cells(columns: &[Column], rows: &[Vec<String>], rendered: &Rendered) -> Vec<String> {
    let mut details = Vec::new();
    for (cells, cut) in rows.iter().zip(&rendered.cut) {
        let key = cells.first().map_or("", |key| key.trim());
        for ((column, cell), cut) in columns.iter().zip(cells).zip(cut) {
            if *cut {
                details.push(format!(
                    "{}: {}: {}",
                    terminal::line(key),
                    column.header.to_lowercase(),
                    cell.trim()
                ));
            }
        }
    }
    details
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: [Column; 3] = [
        Column {
            header: "NAME",
            flexible: false,
        },
        Column {
            header: "SOURCE",
            flexible: true,
        },
        Column {
            header: "ERROR",
            flexible: true,
        },
    ];

    fn rows() -> Vec<Vec<String>> {
        vec![
            vec!["a".into(), "/a/rather/long/path/.mcp.json".into(), "x".repeat(60)],
            vec!["bb".into(), "/short".into(), "two\nlines".into()],
        ]
    }

    #[test]
    fn without_a_width_nothing_is_cut_but_extra_lines() {
        let rendered = render(&COLUMNS, &rows(), None);
        assert_eq!(rendered.lines[0], format!("NAME  SOURCE{}  ERROR", " ".repeat(23)));
        assert_eq!(rendered.cut, [vec![false, false, false], vec![false, false, true]]);
        assert!(rendered.lines[2].ends_with("two"));
    }

    #[test]
    fn the_widest_flexible_column_gives_way_first_and_every_line_fits() {
        let rendered = render(&COLUMNS, &rows(), Some(60));
        for line in &rendered.lines {
            assert!(line.chars().count() <= 60, "{line:?}");
        }
        assert_eq!(rendered.cut[0], [false, false, true]);
        assert!(rendered.lines[1].ends_with('…'));
        // Too narrow for the floors: the flexible columns stop at their minimum.
        let narrow = render(&COLUMNS, &rows(), Some(10));
        assert_eq!(narrow.cut[0], [false, true, true]);
        assert_eq!(narrow.lines[1], "a     /a/rather/l…  xxxxxxxxxxx…");
    }

    #[test]
    fn a_cell_longer_than_any_format_width_is_padded() {
        let long = "t".repeat(70_000);
        let rows = vec![
            vec![long.clone(), "s".into(), "e".into()],
            vec!["n".into(), "s".into(), "e".into()],
        ];
        let rendered = render(&COLUMNS, &rows, None);
        assert_eq!(rendered.lines[1], format!("{}…  s       e", "t".repeat(255)));
        assert_eq!(rendered.lines[2], format!("n{}  s       e", " ".repeat(255)));
        assert_eq!(rendered.cut[0], [true, false, false]);
        // On a terminal, the fixed column gives way too once the flexible ones are at their floor.
        let fitted = render(&COLUMNS, &rows, Some(80));
        assert!(
            fitted.lines.iter().all(|line| line.chars().count() <= 80),
            "{:?}",
            fitted.lines
        );
    }

    #[test]
    fn the_cut_cells_are_named_by_their_row() {
        let rendered = render(&COLUMNS, &rows(), Some(40));
        assert_eq!(
            cut_cells(&COLUMNS, &rows(), &rendered),
            [
                "a: source: /a/rather/long/path/.mcp.json".to_owned(),
                format!("a: error: {}", "x".repeat(60)),
                "bb: error: two\nlines".to_owned()
            ]
        );
    }

    #[test]
    fn cells_are_escaped() {
        let rows = vec![vec!["n".into(), "s".into(), "\u{1b}]0;title\u{7}".into()]];
        let rendered = render(&COLUMNS, &rows, None);
        assert!(
            rendered.lines[1].ends_with("\\x1b]0;title\\x07"),
            "{:?}",
            rendered.lines[1]
        );
    }
}

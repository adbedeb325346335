//! Aligned text tables: the text form of every listing `nvo` prints.
//!
//! Columns are separated by two spaces and padded to their widest cell; numeric columns can be
//! right-aligned; the last column is never padded, so no line ends in spaces. Headers are upper
//! case, as in `ss` and `ip -br`. A table without a header is a key/value listing (`nvo node`).

use std::fmt;

/// A table being filled row by row, printed with `Display`.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers (none: a key/value listing).
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            right: vec![false; header.len()],
            rows: Vec::new(),
        }
    }

    /// Right-aligns column `col` (counts and sizes read better that way).
    pub fn right(mut self, col: usize) -> Self {
        if self.right.len() <= col {
            self.right.resize(col + 1, false);
        }
        self.right[col] = true;
        self
    }

    /// Appends one row; missing cells are empty, extra cells widen the table.
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths = Vec::new();
        for line in std::iter::once(&self.header).chain(&self.rows) {
            if widths.len() < line.len() {
                widths.resize(line.len(), 0);
            }
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        widths
    }

    fn write_line(
        &self,
        f: &mut fmt::Formatter<'_>,
        cells: &[String],
        widths: &[usize],
    ) -> fmt::Result {
        let mut line = String::new();
        let last = widths.len().saturating_sub(1);
        for (i, width) in widths.iter().enumerate() {
            let cell = cells.get(i).map(String::as_str).unwrap_or("");
            if i > 0 {
                line.push_str("  ");
            }
            let pad = width.saturating_sub(cell.chars().count());
            if self.right.get(i).copied().unwrap_or(false) {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if i < last {
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
        }
        writeln!(f, "{}", line.trim_end())
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths = self.widths();
        if !self.header.is_empty() {
            self.write_line(f, &self.header, &widths)?;
        }
        for row in &self.rows {
            self.write_line(f, row, &widths)?;
        }
        Ok(())
    }
}

/// A key/value listing: keys padded to the longest, one pair a line.
pub fn pairs<'a>(items: impl IntoIterator<Item = (&'a str, String)>) -> Table {
    let mut t = Table::new(&[]);
    for (k, v) in items {
        t.row([k.to_owned(), v]);
    }
    t
}

/// A list as one cell: comma-separated, or "-" when empty.
pub fn list<T: ToString>(items: &[T]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// "yes" / "no", as a cell.
pub fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_lines_carry_no_trailing_spaces() {
        let mut t = Table::new(&["VNI", "MTU", "PORTS"]).right(1);
        t.row(["100", "1450", "c-red1,c-red2"]);
        t.row(["16777215", "9000", ""]);
        let text = t.to_string();
        assert_eq!(
            text,
            "VNI        MTU  PORTS\n\
             100       1450  c-red1,c-red2\n\
             16777215  9000\n"
        );
        assert!(text.lines().all(|l| !l.ends_with(' ')));
    }

    #[test]
    fn short_rows_and_wide_cells() {
        let mut t = Table::new(&["A", "B"]);
        t.row(["x"]);
        t.row(["long cell", "y", "extra"]);
        assert_eq!(t.to_string(), "A          B\nx\nlong cell  y  extra\n");
    }

    #[test]
    fn key_value_listing_has_no_header() {
        let t = pairs([
            ("node_id", "1".to_owned()),
            ("locator", "10.0.0.1".to_owned()),
        ]);
        assert_eq!(t.to_string(), "node_id  1\nlocator  10.0.0.1\n");
        assert!(Table::new(&["X"]).is_empty());
    }

    #[test]
    fn list_cells() {
        assert_eq!(list::<String>(&[]), "-");
        assert_eq!(list(&[1, 2]), "1,2");
        assert_eq!(yes_no(true), "yes");
    }
}

//! A table of typed, nullable columns, built row by row with columns named as they come, and
//! written as CSV (RFC 4180) or Parquet (`super::parquet`).

use std::collections::HashMap;
use std::io::Write;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Float,
    /// A UTC instant: microseconds since the Unix epoch in Parquet (a timestamp), the RFC
    /// 3339 text in CSV.
    Timestamp,
}

/// One value; `Null` where a row has none.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    /// Microseconds since the Unix epoch, and the time as it was written.
    Timestamp(i64, String),
}

impl Cell {
    fn kind(&self) -> Option<Kind> {
        match self {
            Cell::Null => None,
            Cell::Text(_) => Some(Kind::Text),
            Cell::Int(_) => Some(Kind::Int),
            Cell::Float(_) => Some(Kind::Float),
            Cell::Timestamp(..) => Some(Kind::Timestamp),
        }
    }
}

/// Columns in the order they were first set; each row as long as the columns (short rows
/// are null at the end).
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub names: Vec<String>,
    pub kinds: Vec<Kind>,
    pub rows: Vec<Vec<Cell>>,
    index: HashMap<String, usize>,
}

impl Table {
    /// Starts a new row.
    pub fn push_row(&mut self) {
        self.rows.push(Vec::new());
    }

    /// Sets `name` in the last row (a new column if none has that name yet). A column keeps
    /// the kind of the first value set in it: a value of another kind is left null (the
    /// export sets each name with one kind only).
    pub fn set(&mut self, name: &str, cell: Cell) {
        let col = match self.index.get(name) {
            Some(c) => *c,
            None => {
                let Some(kind) = cell.kind() else { return };
                self.declare(name, kind);
                self.names.len() - 1
            }
        };
        let cell = match cell.kind() {
            Some(k) if k != self.kinds[col] => Cell::Null,
            _ => cell,
        };
        let Some(row) = self.rows.last_mut() else {
            return;
        };
        if row.len() <= col {
            row.resize(col + 1, Cell::Null);
        }
        row[col] = cell;
    }

    /// Declares a column of `kind` (if new) without setting a value: null in the last row.
    pub fn declare(&mut self, name: &str, kind: Kind) {
        if !self.index.contains_key(name) {
            self.names.push(name.to_string());
            self.kinds.push(kind);
            self.index.insert(name.to_string(), self.names.len() - 1);
        }
    }

    pub fn text(&mut self, name: &str, v: impl Into<String>) {
        self.set(name, Cell::Text(v.into()));
    }

    pub fn int(&mut self, name: &str, v: i64) {
        self.set(name, Cell::Int(v));
    }

    /// An unsigned count; past i64::MAX (never in practice) it is saturated.
    pub fn count(&mut self, name: &str, v: u64) {
        self.set(name, Cell::Int(i64::try_from(v).unwrap_or(i64::MAX)));
    }

    pub fn float(&mut self, name: &str, v: f64) {
        self.set(name, Cell::Float(v));
    }

    /// An RFC 3339 time; a text that is none is left null (the column is declared).
    pub fn timestamp(&mut self, name: &str, text: &str) {
        self.declare(name, Kind::Timestamp);
        let micros = storlab_model::units::parse_rfc3339(text)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_micros()).ok());
        if let Some(m) = micros {
            self.set(name, Cell::Timestamp(m, text.to_string()));
        }
    }

    /// A value as text, or as an integer or a number when `kind` says the column holds those
    /// (a sweep parameter whose every value is one).
    pub fn value(&mut self, name: &str, kind: Kind, v: &str) {
        self.declare(name, kind);
        let cell = match kind {
            Kind::Int => v.parse().map(Cell::Int).ok(),
            Kind::Float => v.parse().map(Cell::Float).ok(),
            Kind::Text | Kind::Timestamp => Some(Cell::Text(v.to_string())),
        };
        if let Some(c) = cell {
            self.set(name, c);
        }
    }

    /// The cell of `row` in column `col` (null past a short row's end).
    pub fn cell(&self, row: usize, col: usize) -> &Cell {
        self.rows
            .get(row)
            .and_then(|r| r.get(col))
            .unwrap_or(&Cell::Null)
    }

    /// CSV with a header line; nulls are empty fields, floats in Rust's shortest round-trip
    /// form, fields holding `,`, `"` or a line break quoted.
    pub fn write_csv(&self, out: &mut impl Write) -> std::io::Result<()> {
        let header: Vec<String> = self.names.iter().map(|n| csv_field(n)).collect();
        writeln!(out, "{}", header.join(","))?;
        for r in 0..self.rows.len() {
            let fields: Vec<String> = (0..self.names.len())
                .map(|c| match self.cell(r, c) {
                    Cell::Null => String::new(),
                    Cell::Text(s) => csv_field(s),
                    Cell::Int(i) => i.to_string(),
                    Cell::Float(f) if f.is_finite() => f.to_string(),
                    Cell::Float(_) => "NaN".into(),
                    Cell::Timestamp(_, text) => csv_field(text),
                })
                .collect();
            writeln!(out, "{}", fields.join(","))?;
        }
        Ok(())
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_come_as_set_and_missing_cells_are_empty_fields() {
        let mut t = Table::default();
        t.push_row();
        t.text("run_id", "r1");
        t.float("rate_ops", 1.5);
        t.push_row();
        t.text("run_id", "r,2");
        t.text("param_block-size", "4KiB \"x\"");
        let mut out = Vec::new();
        t.write_csv(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "run_id,rate_ops,param_block-size\nr1,1.5,\n\"r,2\",,\"4KiB \"\"x\"\"\"\n"
        );
        assert_eq!(t.kinds, [Kind::Text, Kind::Float, Kind::Text]);
    }
}

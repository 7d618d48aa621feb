//! Tables of figures, shown under every chart, and how numbers are written in them.

use serde_json::Value;

/// A JSON value as one table cell: strings bare, numbers as written, arrays
/// of scalars joined with commas, anything nested as compact JSON.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(is_scalar) => items.iter().map(cell).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

pub fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// A table; cells are plain text, escaped when the page is written.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub caption: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub title: String,
    /// Right-aligned.
    pub numeric: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Row {
    pub cells: Vec<String>,
    /// Drawn highlighted: a caveat (CPU-bound, partial) applies to the row.
    pub flagged: bool,
}

impl Table {
    /// Columns whose title starts with `#` are numeric (the `#` is dropped).
    pub fn new(caption: impl Into<String>, columns: &[&str]) -> Table {
        let columns = columns
            .iter()
            .map(|c| match c.strip_prefix('#') {
                Some(title) => Column {
                    title: title.to_string(),
                    numeric: true,
                },
                None => Column {
                    title: c.to_string(),
                    numeric: false,
                },
            })
            .collect();
        Table {
            caption: caption.into(),
            columns,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, cells: Vec<String>, flagged: bool) {
        self.rows.push(Row { cells, flagged });
    }
}

/// A figure with `decimals` digits after the point and thousands separated by commas;
/// a missing figure is a dash.
pub fn num(value: Option<f64>, decimals: usize) -> String {
    let Some(v) = value.filter(|v| v.is_finite()) else {
        return "–".to_string();
    };
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::with_capacity(text.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// Microseconds as milliseconds with two decimals (sub-millisecond latencies stay visible).
pub fn ms(us: Option<f64>) -> String {
    num(us.map(|us| us / 1000.0), 2)
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: Option<f64>) -> String {
    num(bytes.map(|b| b / (1024.0 * 1024.0)), 1)
}

/// Bits per second as people write a line rate: `2400` → "2.4 kbit/s".
pub fn rate(bps: Option<f64>) -> String {
    match bps {
        Some(b) if b >= 1e9 => format!("{} Gbit/s", trim(b / 1e9)),
        Some(b) if b >= 1e6 => format!("{} Mbit/s", trim(b / 1e6)),
        Some(b) if b >= 1e3 => format!("{} kbit/s", trim(b / 1e3)),
        Some(b) => format!("{} bit/s", trim(b)),
        None => "–".to_string(),
    }
}

/// Up to three decimals, without trailing zeros: `81.0` → "81", `0.25` → "0.25".
pub fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_reads_in_the_order_written_and_fits_a_cell() {
        // The workspace's serde_json keeps objects in file order (`preserve_order`).
        let value: Value = serde_json::from_str(r#"{"z":1,"a":[true,null,"s",-2,1.5],"m":{"k":{}}}"#).expect("valid JSON");
        let keys: Vec<&str> = value.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert_eq!(cell(&value["a"]), "true, , s, -2, 1.5");
        assert_eq!(cell(&value["m"]), r#"{"k":{}}"#);
        assert_eq!(cell(&value["z"]), "1");
    }

    #[test]
    fn numbers() {
        assert_eq!(num(Some(1234567.891), 1), "1,234,567.9");
        assert_eq!(num(Some(999.0), 0), "999");
        assert_eq!(num(Some(-1000.0), 0), "-1,000");
        assert_eq!(num(Some(-0.001), 1), "0.0");
        assert_eq!(num(None, 2), "–");
        assert_eq!(num(Some(f64::NAN), 2), "–");
        assert_eq!(ms(Some(1530.0)), "1.53");
        assert_eq!(mib(Some(3.0 * 1024.0 * 1024.0)), "3.0");
    }

    #[test]
    fn rates_read_as_people_write_them() {
        assert_eq!(rate(Some(2400.0)), "2.4 kbit/s");
        assert_eq!(rate(Some(19_200.0)), "19.2 kbit/s");
        assert_eq!(rate(Some(1e6)), "1 Mbit/s");
        assert_eq!(rate(Some(300.0)), "300 bit/s");
        assert_eq!(rate(None), "–");
        assert_eq!(trim(81.0), "81");
        assert_eq!(trim(0.25), "0.25");
    }

    #[test]
    fn numeric_columns() {
        let t = Table::new("c", &["server", "#msgs/s"]);
        assert!(!t.columns[0].numeric);
        assert!(t.columns[1].numeric);
        assert_eq!(t.columns[1].title, "msgs/s");
    }
}

//! Scenarios the report has no chart for (a newer bench's) still appear: each
//! run becomes tables of its figures. Nested objects flatten into dotted columns
//! (`round_trip.mean_us`); arrays of objects become tables of their own, their rows
//! numbered after their parent row (`2.3` is the third item of row 2).

use super::{Ctx, Section};
use crate::input::Run;
use serde_json::Value;
use crate::table::{Column, Row, Table};

/// Run fields the file header and section warnings already show.
const META: [&str; 9] = [
    "target_name",
    "target",
    "started_at",
    "duration_s",
    "partial",
    "error",
    "bench_cpu_bound",
    "server_pid",
    "scenario",
];

/// Per-second resource samples: a time series, too long and too detailed for a table.
const SKIPPED: [&str; 1] = ["samples"];

pub fn section(ctx: &Ctx, id: &str, scenario: &str, runs: &[&Run]) -> Section {
    Section {
        id: id.to_string(),
        title: scenario.to_string(),
        about: "This report has no chart for this scenario yet; its figures are shown as tables, as the bench wrote them.".to_string(),
        tables: runs.iter().flat_map(|run| run_tables(ctx, run)).collect(),
        ..Section::default()
    }
}

/// The tables of one run: its scalar fields, then one table per array of objects.
pub fn run_tables(ctx: &Ctx, run: &Run) -> Vec<Table> {
    let label = ctx.label(run);
    let Value::Object(fields) = &run.raw else {
        return Vec::new();
    };
    let mut scalars = Table::new(
        format!("{label} · {}: fields", run.scenario),
        &["field", "value"],
    );
    let mut tables = Vec::new();
    for (key, value) in fields {
        if META.contains(&key.as_str()) {
            continue;
        }
        let mut cells = Vec::new();
        let mut nested = Vec::new();
        flatten(key, value, &mut cells, &mut nested);
        for (k, v) in cells {
            scalars.push(vec![k, crate::table::cell(v)], false);
        }
        for (k, items) in nested {
            let rows: Vec<(String, &Value)> = items
                .iter()
                .enumerate()
                .map(|(i, item)| ((i + 1).to_string(), item))
                .collect();
            rows_tables(&format!("{label} · {k}"), &rows, &mut tables);
        }
    }
    if !scalars.rows.is_empty() {
        tables.insert(0, scalars);
    }
    tables
}

/// One table for `rows` (each with its number), then tables for arrays inside them.
fn rows_tables(caption: &str, rows: &[(String, &Value)], out: &mut Vec<Table>) {
    let mut columns: Vec<Column> = vec![Column {
        title: "#".to_string(),
        numeric: false,
    }];
    let mut table_rows: Vec<(String, Vec<(String, &Value)>)> = Vec::new();
    let mut nested: Vec<(String, Vec<(String, &Value)>)> = Vec::new();
    for (number, item) in rows {
        let mut cells = Vec::new();
        let mut inner = Vec::new();
        flatten("", item, &mut cells, &mut inner);
        for (key, value) in &cells {
            match columns.iter_mut().find(|c| c.title == *key) {
                Some(c) => c.numeric &= matches!(value, Value::Number(_) | Value::Null),
                None => columns.push(Column {
                    title: key.clone(),
                    numeric: matches!(value, Value::Number(_) | Value::Null),
                }),
            }
        }
        for (key, items) in inner {
            let numbered = items
                .iter()
                .enumerate()
                .map(|(i, it)| (format!("{number}.{}", i + 1), it));
            match nested.iter_mut().find(|(k, _)| *k == key) {
                Some((_, all)) => all.extend(numbered),
                None => nested.push((key, numbered.collect())),
            }
        }
        table_rows.push((number.clone(), cells));
    }
    let mut table = Table {
        caption: caption.to_string(),
        columns,
        rows: Vec::new(),
    };
    for (number, cells) in table_rows {
        let flagged = cells.iter().any(|(k, v)| {
            (k.ends_with("bench_cpu_bound") || k.ends_with("partial"))
                && matches!(v, Value::Bool(true))
        });
        let mut row = vec![String::new(); table.columns.len()];
        row[0] = number;
        for (key, value) in cells {
            if let Some(i) = table.columns.iter().position(|c| c.title == key) {
                row[i] = crate::table::cell(value);
            }
        }
        table.rows.push(Row {
            cells: row,
            flagged,
        });
    }
    out.push(table);
    for (key, items) in nested {
        rows_tables(&format!("{caption} › {key}"), &items, out);
    }
}

/// Scalars (and arrays of scalars) into `cells` under dotted keys; arrays holding
/// objects into `nested`.
fn flatten<'a>(
    prefix: &str,
    value: &'a Value,
    cells: &mut Vec<(String, &'a Value)>,
    nested: &mut Vec<(String, &'a [Value])>,
) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Object(fields) => {
            for (k, v) in fields {
                flatten(&join(k), v, cells, nested);
            }
        }
        Value::Array(items) if items.iter().any(|i| matches!(i, Value::Object(_))) => {
            let last = prefix.rsplit('.').next().unwrap_or(prefix);
            if !SKIPPED.contains(&last) {
                nested.push((prefix.to_string(), items));
            }
        }
        _ => cells.push((prefix.to_string(), value)),
    }
}

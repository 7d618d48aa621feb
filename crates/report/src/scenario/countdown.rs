//! countdown: count from N down to 0, one request or message at a time; the time per
//! step shows what each transport costs per exchange.

use serde::Deserialize;

use super::{Ctx, Section, Warnings, parse_runs, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Caveats, Resources, Run};
use crate::table::{Table, ms, num};

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CountdownRun {
    pub results: Vec<CountdownResult>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CountdownResult {
    pub transport: String,
    pub connect_us: Option<f64>,
    pub from: Option<f64>,
    pub iterations: Option<f64>,
    pub total_us: Option<f64>,
    pub per_iteration_us: Option<f64>,
    pub ratio_to_websocket: Option<f64>,
    pub resources: Resources,
}

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Count-down".to_string(),
        about: "A client counts from N down to 0 with a count app, one exchange at a time: the cost of one request/response per transport.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, CountdownRun)> = parse_runs(ctx, runs, &mut section);
    let categories = transports(
        parsed
            .iter()
            .flat_map(|(_, p)| p.results.iter().map(|r| r.transport.as_str())),
    );
    let mut chart = Chart::bar(
        format!("{id}-step"),
        "Count-down: time per step per transport",
        categories.clone(),
        "transport",
        "time per step (µs)",
    );
    let mut warnings = Warnings::default();
    for (run, data) in &parsed {
        let label = ctx.label(run);
        let points = categories
            .iter()
            .map(|cat| {
                let Some(r) = data
                    .results
                    .iter()
                    .rev()
                    .find(|r| transport_name(&r.transport) == cat)
                else {
                    return Point {
                        x: None,
                        y: None,
                        flag: None,
                    };
                };
                let c = Caveats::of(run, &r.resources);
                warnings.note(label, label, c);
                let y = r
                    .per_iteration_us
                    .filter(|_| r.iterations.is_some_and(|n| n > 0.0));
                Point {
                    x: None,
                    y,
                    flag: c.bench_cpu_bound.then(|| c.text()),
                }
            })
            .collect();
        chart.series.push(Series {
            label: label.to_string(),
            color: chart::color(run.source, 0, 1),
            point_style: "rect",
            points,
        });
    }
    chart.warnings = warnings.lines();
    chart.subtitle = warnings.short();
    let chart = chart.finish();
    if !chart.is_empty() {
        section.charts.push(chart);
    } else if !parsed.is_empty() {
        section
            .notes
            .push("No count-down step completed.".to_string());
    }
    let mut table = Table::new(
        "Every transport",
        &[
            "server",
            "caveats",
            "transport",
            "#from",
            "#steps done",
            "#total (ms)",
            "#per step (µs)",
            "#× websocket",
            "#connect (ms)",
            "#server CPU (%)",
        ],
    );
    for (run, data) in &parsed {
        for r in &data.results {
            let c = Caveats::of(run, &r.resources);
            table.push(
                vec![
                    ctx.label(run).to_string(),
                    c.text(),
                    transport_name(&r.transport).to_string(),
                    num(r.from, 0),
                    num(r.iterations, 0),
                    ms(r.total_us),
                    num(r.per_iteration_us, 1),
                    num(r.ratio_to_websocket, 2),
                    ms(r.connect_us),
                    num(r.resources.server_cpu_pct, 0),
                ],
                c.serious(),
            );
        }
    }
    if !table.rows.is_empty() {
        section.tables.push(table);
    }
    section
}

//! What pingpong and countdown share: a run is a list of results, one per transport,
//! shown as bars per transport (one group per transport, one bar per server) over a
//! table with a row per result. Each scenario only says which figures it plots and
//! which cells its table has.

use serde::Deserialize;

use super::{Ctx, Plot, Warnings, transport_name, transports};
use crate::chart::{self, Chart, Point, Series};
use crate::input::{Caveats, Resources, Run};
use crate::table::Table;

/// A run whose figures are a list of results, one per transport.
#[derive(Debug, Deserialize)]
pub struct Results<R> {
    #[serde(default)]
    pub results: Vec<R>,
}

/// A result measured on one transport.
pub trait PerTransport {
    fn transport(&self) -> &str;
    fn resources(&self) -> &Resources;
}

/// One group per transport, one bar per server: the server's last result for that
/// transport, crossed where the bench was CPU-bound. `None` when no bar has a value.
pub fn bars<R: PerTransport>(
    ctx: &Ctx,
    id: &str,
    runs: &[(&Run, Results<R>)],
    plot: &Plot<R>,
) -> Option<Chart> {
    let categories = transports(
        runs.iter()
            .flat_map(|(_, data)| data.results.iter().map(R::transport)),
    );
    let mut chart = Chart::bar(
        format!("{id}-{}", plot.key),
        plot.title,
        categories,
        "transport",
        plot.y,
    );
    let mut warnings = Warnings::default();
    for (run, data) in runs {
        let label = ctx.label(run);
        let points = chart
            .categories
            .iter()
            .map(|cat| {
                let Some(r) = data
                    .results
                    .iter()
                    .rev()
                    .find(|r| transport_name(r.transport()) == cat)
                else {
                    return Point {
                        x: None,
                        y: None,
                        flag: None,
                        ..Default::default()
                    };
                };
                let c = Caveats::of(run, r.resources());
                warnings.note(label, label, c);
                Point {
                    x: None,
                    y: (plot.value)(r),
                    flag: c.bench_cpu_bound.then(|| c.text()),
                    ..Default::default()
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
    (!chart.is_empty()).then_some(chart)
}

/// "Every transport": a row per result — server, caveats, transport, then `columns`
/// filled by `cells` — highlighted where a caveat changes what the figures mean.
/// `None` when there is no result.
pub fn table<R: PerTransport>(
    ctx: &Ctx,
    runs: &[(&Run, Results<R>)],
    columns: &[&str],
    cells: fn(&R) -> Vec<String>,
) -> Option<Table> {
    let head = ["server", "caveats", "transport"];
    let mut table = Table::new("Every transport", &[&head[..], columns].concat());
    for (run, data) in runs {
        for r in &data.results {
            let c = Caveats::of(run, r.resources());
            let mut row = vec![
                ctx.label(run).to_string(),
                c.text(),
                transport_name(r.transport()).to_string(),
            ];
            row.extend(cells(r));
            table.push(row, c.serious());
        }
    }
    (!table.rows.is_empty()).then_some(table)
}

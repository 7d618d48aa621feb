//! countdown: count from N down to 0, one request or message at a time; the time per
//! step shows what each transport costs per exchange.

use serde::Deserialize;

use super::per_transport::{self, PerTransport, Results};
use super::{Ctx, Plot, Section, parse_runs};
use crate::input::{Resources, Run};
use crate::table::{ms, num};

pub type CountdownRun = Results<CountdownResult>;

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

impl CountdownResult {
    /// The time per step, when at least one step was done (else the bench writes 0).
    pub fn per_step_us(&self) -> Option<f64> {
        self.per_iteration_us
            .filter(|_| self.iterations.is_some_and(|n| n > 0.0))
    }
}

impl PerTransport for CountdownResult {
    fn transport(&self) -> &str {
        &self.transport
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

const CHART: Plot<CountdownResult> = Plot {
    key: "step",
    title: "Count-down: time per step per transport",
    y: "time per step (µs)",
    value: CountdownResult::per_step_us,
};

pub fn section(ctx: &Ctx, id: &str, runs: &[&Run]) -> Section {
    let mut section = Section {
        id: id.to_string(),
        title: "Count-down".to_string(),
        about: "A client counts from N down to 0 with a count app, one exchange at a time: the cost of one request/response per transport.".to_string(),
        ..Section::default()
    };
    let parsed: Vec<(&Run, CountdownRun)> = parse_runs(ctx, runs, &mut section);
    section
        .charts
        .extend(per_transport::bars(ctx, id, &parsed, &CHART));
    if section.charts.is_empty() && !parsed.is_empty() {
        section
            .notes
            .push("No count-down step completed.".to_string());
    }
    let columns = [
        "#from",
        "#steps done",
        "#total (ms)",
        "#per step (µs)",
        "#× websocket",
        "#connect (ms)",
        "#server CPU (%)",
    ];
    section
        .tables
        .extend(per_transport::table(ctx, &parsed, &columns, |r| {
            vec![
                num(r.from, 0),
                num(r.iterations, 0),
                ms(r.total_us),
                num(r.per_iteration_us, 1),
                num(r.ratio_to_websocket, 2),
                ms(r.connect_us),
                num(r.resources.server_cpu_pct, 0),
            ]
        }));
    section
}

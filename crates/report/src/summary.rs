//! The shootout summary: one column per server, one row per headline figure, so
//! servers can be compared at a glance. The baseline for ratios is the server named
//! `switchboard`, else the first one.

use serde::de::DeserializeOwned;

use crate::input::{Caveats, Run};
use crate::scenario::broadcast::BroadcastRun;
use crate::scenario::chat::{ChatResult, ChatRun};
use crate::scenario::countdown::{CountdownResult, CountdownRun};
use crate::scenario::per_transport::{PerTransport, Results};
use crate::scenario::pingpong::PingpongRun;
use crate::scenario::study::{self, Study};
use crate::scenario::{Ctx, transport_name, transports};
use crate::table::{Column, Row, Table, num};

/// The column of the ratios' baseline: `input::sources` puts the server named
/// `switchboard` first, so this is switchboard when it ran, else the first server.
const BASELINE: usize = 0;

/// A figure of one server, with its caveats.
#[derive(Clone, Copy)]
struct Cell {
    value: f64,
    caveats: Caveats,
}

/// A chat figure of the summary and how it is written.
struct ChatFigure {
    what: &'static str,
    value: fn(&ChatResult) -> Option<f64>,
    decimals: usize,
}

/// "ok" or "failed (scenario): error" per server, or `None` when nothing failed.
fn status_row(ctx: &Ctx) -> Option<Row> {
    const MAX: usize = 100;
    let mut cells = vec!["status".to_string()];
    let mut any = false;
    for i in 0..ctx.sources.len() {
        let failed = ctx.runs().find(|r| r.source == i && r.error.is_some());
        cells.push(match failed {
            None => "ok".to_string(),
            Some(run) => {
                any = true;
                let error = run.error.as_deref().unwrap_or_default();
                let mut text: String = error.chars().take(MAX).collect();
                if error.chars().count() > MAX {
                    text.push('…');
                }
                format!("failed ({}): {text}", run.scenario)
            }
        });
    }
    any.then_some(Row {
        cells,
        flagged: true,
    })
}

/// A row of figures, one cell per server, with the ratio to the baseline if `ratio`.
/// Caveats are marked in the cell (⚠), not by highlighting the row: the row holds
/// every server's figure.
fn row(title: String, cells: &[Option<Cell>], decimals: usize, ratio: bool) -> Row {
    let base = cells.get(BASELINE).copied().flatten().map(|c| c.value);
    let mut out = vec![title];
    for (i, cell) in cells.iter().enumerate() {
        out.push(match cell {
            None => "–".to_string(),
            Some(c) => {
                let mut text = num(Some(c.value), decimals);
                if let Some(b) = base.filter(|b| ratio && i != BASELINE && *b > 0.0) {
                    text.push_str(&format!(" (×{})", num(Some(c.value / b), 2)));
                }
                if c.caveats.serious() {
                    text.push_str(" ⚠");
                }
                text
            }
        });
    }
    Row {
        cells: out,
        flagged: false,
    }
}

/// The runs of `scenario` that read as `T`; the others have no headline figure.
fn runs_of<'a, T: DeserializeOwned>(ctx: &'a Ctx, scenario: &str) -> Vec<(&'a Run, T)> {
    ctx.runs()
        .filter(|r| r.scenario == scenario)
        .filter_map(|r| Some((r, r.parse::<T>().ok()?)))
        .collect()
}

/// One row per transport (pingpong, countdown): each server's last result there that
/// has a `value`.
fn transport_rows<R: PerTransport>(
    ctx: &Ctx,
    runs: &[(&Run, Results<R>)],
    title: impl Fn(&str) -> String,
    value: fn(&R) -> Option<f64>,
    decimals: usize,
) -> Vec<Row> {
    let names = runs
        .iter()
        .flat_map(|(_, data)| data.results.iter().map(R::transport));
    transports(names)
        .into_iter()
        .map(|t| {
            let mut cells: Vec<Option<Cell>> = vec![None; ctx.sources.len()];
            for (run, data) in runs {
                let here = data
                    .results
                    .iter()
                    .filter(|r| transport_name(r.transport()) == t);
                for r in here {
                    if let Some(value) = value(r) {
                        cells[run.source] = Some(Cell {
                            value,
                            caveats: Caveats::of(run, r.resources()),
                        });
                    }
                }
            }
            row(title(&t), &cells, decimals, false)
        })
        .collect()
}

/// The XMPP study's goal: each server's BOSH total ÷ its xmpp-websocket total for 100
/// pings on localhost, and for switchboard whether it is at most the goal. `None`
/// without the study's section or a server with both totals.
fn study_goal_row(ctx: &Ctx) -> Option<Row> {
    let study = Study::of(ctx)?;
    let mut cells: Vec<Option<Cell>> = vec![None; ctx.sources.len()];
    for (source, ratio) in study.localhost_ratios() {
        cells[source] = Some(Cell {
            value: ratio,
            caveats: Caveats::default(),
        });
    }
    if cells.iter().all(Option::is_none) {
        return None;
    }
    let mut r = row(
        format!(
            "XMPP study: BOSH ÷ xmpp-websocket total for 100 pings on localhost (goal for switchboard: at most {}; the study's: {})",
            study::goal(),
            study::times(study::STUDY_LOCALHOST_RATIO)
        ),
        &cells,
        2,
        false,
    );
    for ((text, cell), source) in r.cells.iter_mut().skip(1).zip(&cells).zip(ctx.sources) {
        if let Some(c) = cell {
            *text = study::times(c.value);
            if source.is_switchboard() {
                text.push_str(&format!(": {}", study::verdict(c.value)));
            }
        }
    }
    Some(r)
}

/// The summary table, or `None` when no run has a headline figure.
pub fn table(ctx: &Ctx) -> Option<Table> {
    let n = ctx.sources.len();
    let mut rows: Vec<Row> = Vec::new();

    // Broadcast: per level, and the best over all levels.
    let broadcast: Vec<(&Run, BroadcastRun)> = runs_of(ctx, "broadcast");
    let mut levels: Vec<(String, f64)> = Vec::new();
    for (_, b) in &broadcast {
        for l in &b.levels {
            let key = (
                transport_name(&l.transport).to_string(),
                l.connections.unwrap_or(0.0),
            );
            if !levels.contains(&key) {
                levels.push(key);
            }
        }
    }
    levels.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let many_transports = levels.iter().any(|l| l.0 != levels[0].0);
    let mut best: Vec<Option<(Cell, f64)>> = vec![None; n];
    for (transport, conns) in &levels {
        let mut cells: Vec<Option<Cell>> = vec![None; n];
        for (run, b) in &broadcast {
            for l in &b.levels {
                if transport_name(&l.transport) != transport
                    || l.connections.unwrap_or(0.0) != *conns
                {
                    continue;
                }
                let Some(value) = l.max_sustainable_received_per_s else {
                    continue;
                };
                let cell = Cell {
                    value,
                    caveats: l.caveats(run, &b.summary),
                };
                cells[run.source] = Some(cell);
                if best[run.source].is_none_or(|(b, _)| b.value < value) {
                    best[run.source] = Some((cell, *conns));
                }
            }
        }
        let at = if many_transports {
            format!("{} conns, {transport}", num(Some(*conns), 0))
        } else {
            format!("{} conns", num(Some(*conns), 0))
        };
        rows.push(row(
            format!("broadcast: max sustainable received msgs/s, {at}"),
            &cells,
            0,
            true,
        ));
    }
    if levels.len() > 1 {
        let cells: Vec<Option<Cell>> = best.iter().map(|b| b.map(|(c, _)| c)).collect();
        let mut r = row(
            "broadcast: max sustainable received msgs/s, best level".to_string(),
            &cells,
            0,
            true,
        );
        for (cell, b) in r.cells.iter_mut().skip(1).zip(&best) {
            if let Some((_, conns)) = b {
                cell.push_str(&format!(" at {} conns", num(Some(*conns), 0)));
            }
        }
        rows.push(r);
    }

    // Chat: at the heaviest load every server ran, else each server's heaviest.
    let chat: Vec<(&Run, ChatRun)> = runs_of(ctx, "chat");
    if !chat.is_empty() {
        let load = |r: &ChatResult| (r.rooms.unwrap_or(0.0), r.users.unwrap_or(0.0));
        let mut loads: Vec<(f64, f64)> = chat
            .iter()
            .flat_map(|(_, c)| c.results.iter().map(load))
            .collect();
        loads.sort_by(|a, b| {
            (a.0 * a.1)
                .total_cmp(&(b.0 * b.1))
                .then(a.0.total_cmp(&b.0))
        });
        loads.dedup();
        // Servers whose chat run failed without results do not veto the common load.
        let servers: Vec<usize> = chat
            .iter()
            .filter(|(_, c)| !c.results.is_empty())
            .map(|(r, _)| r.source)
            .collect();
        let common = loads.iter().rev().find(|l| {
            servers.iter().all(|s| {
                chat.iter()
                    .any(|(r, c)| r.source == *s && c.results.iter().any(|x| load(x) == **l))
            })
        });
        let mut picked: Vec<Option<(&Run, &ChatResult)>> = vec![None; n];
        for (run, c) in &chat {
            for r in &c.results {
                let better = match common {
                    Some(l) => load(r) == *l,
                    None => picked[run.source]
                        .is_none_or(|(_, p)| load(r).0 * load(r).1 > load(p).0 * load(p).1),
                };
                if better {
                    picked[run.source] = Some((run, r));
                }
            }
        }
        let at = match common {
            Some((rooms, users)) => format!(
                "{} rooms × {} users",
                num(Some(*rooms), 0),
                num(Some(*users), 0)
            ),
            None => "each server's heaviest load".to_string(),
        };
        let figures = [
            ChatFigure {
                what: "mean latency (ms)",
                value: |r| r.latency.mean_ms(),
                decimals: 2,
            },
            ChatFigure {
                what: "p99 latency (ms)",
                value: |r| r.latency.p99_ms(),
                decimals: 2,
            },
            ChatFigure {
                what: "server CPU (%)",
                value: |r| r.resources.server_cpu_pct,
                decimals: 0,
            },
            ChatFigure {
                what: "server RSS (MiB)",
                value: |r| r.resources.server_rss_mib(),
                decimals: 1,
            },
        ];
        for ChatFigure {
            what,
            value,
            decimals,
        } in figures
        {
            let cells: Vec<Option<Cell>> = picked
                .iter()
                .map(|p| {
                    p.and_then(|(run, r)| {
                        Some(Cell {
                            value: value(r)?,
                            caveats: Caveats::of(run, &r.resources),
                        })
                    })
                })
                .collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let mut r = row(format!("chat at {at}: {what}"), &cells, decimals, false);
            for (cell, p) in r.cells.iter_mut().skip(1).zip(&picked) {
                let Some((_, c)) = p else { continue };
                if common.is_none() {
                    cell.push_str(&format!(" at {}×{}", num(c.rooms, 0), num(c.users, 0)));
                }
                // A figure over part of the messages says so: the rest were lost.
                if let (Some(got), Some(want)) = (c.received, c.expected)
                    && got < want
                    && want > 0.0
                {
                    cell.push_str(&format!(" ({}% delivered)", num(Some(got * 100.0 / want), 0)));
                }
            }
            rows.push(r);
        }
    }

    // Ping-pong and count-down: one row per transport.
    let pingpong: Vec<(&Run, PingpongRun)> = runs_of(ctx, "pingpong");
    rows.extend(transport_rows(
        ctx,
        &pingpong,
        |t| format!("pingpong: mean round trip, {t} (µs)"),
        |r| r.round_trip.mean_us,
        0,
    ));
    rows.extend(study_goal_row(ctx));
    let countdown: Vec<(&Run, CountdownRun)> = runs_of(ctx, "countdown");
    rows.extend(transport_rows(
        ctx,
        &countdown,
        |t| format!("countdown: time per step, {t} (µs)"),
        CountdownResult::per_step_us,
        1,
    ));

    // A server that failed (did not install, start, or answer) is shown as failed, so
    // it never silently drops out of a comparison.
    if let Some(status) = status_row(ctx) {
        rows.insert(0, status);
    }
    if rows.is_empty() {
        return None;
    }
    // Servers without any headline figure (a selftest, say) get no column.
    let keep: Vec<bool> = (0..n)
        .map(|i| rows.iter().any(|r| r.cells[i + 1] != "–"))
        .collect();
    for r in &mut rows {
        let mut column = 0;
        r.cells.retain(|_| {
            column += 1;
            column == 1 || keep[column - 2]
        });
    }
    let mut columns = vec![Column {
        title: "figure".to_string(),
        numeric: false,
    }];
    let kept = ctx.sources.iter().enumerate().filter(|(i, _)| keep[*i]);
    columns.extend(kept.map(|(i, s)| Column {
        title: if i == BASELINE && keep.iter().filter(|k| **k).count() > 1 {
            format!("{} (baseline)", s.label)
        } else {
            s.label.clone()
        },
        numeric: true,
    }));
    Some(Table {
        caption: "Headline figures per server; ×: ratio to the baseline; ⚠: bench CPU-bound or partial run, see the section".to_string(),
        columns,
        rows,
    })
}

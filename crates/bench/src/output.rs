//! The readable table on stdout. Every row that was measured while the bench itself
//! was CPU-bound says so, so nobody mistakes the bench's limit for the server's.

use std::io::{self, Write};

use crate::latency::{LatencySummary, human_us};
use crate::resources::Resources;
use crate::flags::XmppAuth;
use crate::result::{Outcome, ResultFile};

pub(crate) fn print_table(file: &ResultFile, w: &mut impl Write) -> io::Result<()> {
    let bench_cpus = file.machine.bench_cpus.as_ref().map(|c| format!(", the bench on CPUs {c}")).unwrap_or_default();
    writeln!(w, "machine: {} ({} cores{bench_cpus}), switchboard {}", file.machine.cpu_model, file.machine.cores, file.versions.switchboard)?;
    for run in &file.runs {
        let state = if run.partial { " [PARTIAL]" } else { "" };
        let pid = match (run.server_pid, &run.server_cpus) {
            (None, _) => "server pid unknown".to_string(),
            (Some(p), None) => format!("server pid {p}"),
            (Some(p), Some(cpus)) => format!("server pid {p} on CPUs {cpus}"),
        };
        writeln!(w, "\n{} → {} ({}){state}", run.target_name, run.target, pid)?;
        if let Some(e) = &run.error {
            writeln!(w, "stopped: {e}")?;
        }
        if let Some(link) = &run.link {
            writeln!(w, "over an emulated link: {}", link.description)?;
        }
        if let Some(xmpp) = &run.xmpp {
            let auth = match &xmpp.auth {
                XmppAuth::Anonymous => "SASL ANONYMOUS".to_string(),
                XmppAuth::Plain { user, .. } => format!("SASL PLAIN as {user}"),
            };
            writeln!(w, "XMPP: domain {}, MUC service {}, {auth}", xmpp.domain, xmpp.muc_service)?;
        }
        let mut t = Table::default();
        match &run.outcome {
            Outcome::Pingpong { settings, results } => {
                writeln!(w, "pingpong: {} sequential round trips", settings.count)?;
                t.header(&["transport", "connect", "round trips", "total", "mean", "p50", "p90", "p99", "max", "server cpu", "note"]);
                for r in results {
                    let rt = &r.round_trip;
                    t.row(vec![
                        r.transport.to_string(),
                        human_us(r.connect_us as f64),
                        r.count.to_string(),
                        human_us(r.total_us as f64),
                        human_us(rt.mean_us),
                        human_us(rt.p50_us as f64),
                        human_us(rt.p90_us as f64),
                        human_us(rt.p99_us as f64),
                        human_us(rt.max_us as f64),
                        cpu(&r.resources),
                        note(&r.resources),
                    ]);
                }
                for r in results {
                    if let Some(l) = &r.login {
                        t.note(format!(
                            "{} connect = login: transport {}, stream {}, SASL {}, restart {}, bind {}",
                            r.transport,
                            human_us(l.transport_us as f64),
                            human_us(l.stream_us as f64),
                            human_us(l.sasl_us as f64),
                            human_us(l.restart_us as f64),
                            human_us(l.bind_us as f64)
                        ));
                    }
                }
            }
            Outcome::Countdown { settings, results } => {
                writeln!(w, "countdown: from {} to 0", settings.count)?;
                t.header(&["transport", "connect", "iterations", "total", "per iteration", "ratio to websocket", "server cpu", "note"]);
                for r in results {
                    t.row(vec![
                        r.transport.to_string(),
                        human_us(r.connect_us as f64),
                        r.iterations.to_string(),
                        human_us(r.total_us as f64),
                        human_us(r.per_iteration_us),
                        r.ratio_to_websocket.map_or("-".into(), |x| format!("{x:.2}×")),
                        cpu(&r.resources),
                        note(&r.resources),
                    ]);
                }
            }
            Outcome::Chat { settings, results } => {
                writeln!(w, "chat: {} messages per user every {}", settings.messages, human_us(settings.interval_us as f64))?;
                t.header(&[
                    "transport", "rooms", "users", "expected", "received", "late sends", "mean", "p50", "p99", "max",
                    "uncorr. p99", "server cpu", "server rss", "note",
                ]);
                for r in results {
                    let l = &r.latency;
                    t.row(vec![
                        r.transport.to_string(),
                        r.rooms.to_string(),
                        r.users.to_string(),
                        r.expected.to_string(),
                        r.received.to_string(),
                        r.late_sends.to_string(),
                        human_us(l.mean_us),
                        human_us(l.p50_us as f64),
                        human_us(l.p99_us as f64),
                        human_us(l.max_us as f64),
                        human_us(r.latency_uncorrected.p99_us as f64),
                        cpu(&r.resources),
                        rss(&r.resources),
                        note(&r.resources),
                    ]);
                }
            }
            Outcome::Broadcast { levels, summary, .. } | Outcome::Selftest { levels, summary, .. } | Outcome::Muc { levels, summary, .. } => {
                let scenario = if matches!(run.outcome, Outcome::Muc { .. }) { "muc (one MUC room per level)" } else { "broadcast" };
                writeln!(w, "{scenario}: round trip measured at the sender from the scheduled send time")?;
                if run.transports.iter().any(|k| !k.echoes()) {
                    writeln!(w, "(irc: a sender does not hear its own message; the next client times it)")?;
                }
                t.header(&[
                    "transport", "conns", "rate", "sent/s", "recv/s", "lost", "missing", "late", "mean", "stddev", "p50",
                    "p90", "p99", "max", "uncorr. p99", "server cpu", "note",
                ]);
                for l in levels {
                    for s in &l.steps {
                        let rt: &LatencySummary = &s.round_trip;
                        t.row(vec![
                            l.transport.to_string(),
                            l.connections.to_string(),
                            format!("{:.0}", s.rate),
                            format!("{:.0}", s.sent_per_s),
                            format!("{:.0}", s.received_per_s),
                            s.lost.to_string(),
                            s.missing.to_string(),
                            s.late_sends.to_string(),
                            human_us(rt.mean_us),
                            human_us(rt.stddev_us),
                            human_us(rt.p50_us as f64),
                            human_us(rt.p90_us as f64),
                            human_us(rt.p99_us as f64),
                            human_us(rt.max_us as f64),
                            human_us(s.round_trip_uncorrected.p99_us as f64),
                            cpu(&s.resources),
                            note(&s.resources),
                        ]);
                    }
                    if let Some(sat) = &l.saturation {
                        t.note(format!("  {} conns: saturated at {:.0} msgs/s ({}): {}", l.connections, sat.rate, sat.reason, sat.detail));
                    }
                }
                t.print(w)?;
                writeln!(w, "\nsummary: max sustainable received msgs/s per level")?;
                t = Table::default();
                t.header(&["transport", "conns", "max sustainable recv/s", "max recv/s with good mean", "saturated", "note"]);
                for s in summary {
                    t.row(vec![
                        s.transport.to_string(),
                        s.connections.to_string(),
                        s.max_sustainable_received_per_s.map_or("-".into(), |x| format!("{x:.0}")),
                        s.max_received_per_s_good_mean.map_or("-".into(), |x| format!("{x:.0}")),
                        if s.saturated { "yes".into() } else { "no".into() },
                        if s.bench_cpu_bound { "BENCH CPU-BOUND".into() } else { String::new() },
                    ]);
                }
            }
            Outcome::Link { settings, tables } => crate::linked::print(settings, tables, w)?,
            Outcome::Api { settings, results } => {
                writeln!(w, "api: {} publishes on {} keep-alive connections to {}/publish", settings.requests, settings.connections, settings.api_url)?;
                t.header(&["part", "sent", "answered 200", "per s", "mean", "p50", "p99", "max", "server cpu", "note"]);
                // One row: what was sent and answered, then its latency and the server's CPU.
                let row = |first: [String; 4], l: &crate::latency::LatencySummary, resources: &Resources| {
                    let times = [l.mean_us, l.p50_us as f64, l.p99_us as f64, l.max_us as f64].map(human_us);
                    first.into_iter().chain(times).chain([cpu(resources), note(resources)]).collect::<Vec<String>>()
                };
                for r in results {
                    let p = &r.publish;
                    let sent = [String::from("publish"), (p.ok + p.refused).to_string(), p.ok.to_string(), format!("{:.0}", p.per_s)];
                    t.row(row(sent, &p.latency, &p.resources));
                    if let Some(why) = &p.first_refusal {
                        t.note(format!("  {} refused; the first: {why}", p.refused));
                    }
                    let Some(f) = &r.fanout else { continue };
                    for (part, sent, l) in [("fan-out: through the API", f.through_api, &f.api), ("fan-out: from a member", f.from_member, &f.member)] {
                        t.row(row([part.into(), sent.to_string(), "-".into(), "-".into()], l, &f.resources));
                    }
                    t.note(format!(
                        "  fan-out to {} members: {} of {} deliveries; through the API p50 {} the member's",
                        f.members,
                        f.received,
                        f.expected,
                        if f.p50_extra_us >= 0.0 { format!("{} above", human_us(f.p50_extra_us)) } else { format!("{} below", human_us(-f.p50_extra_us)) }
                    ));
                }
            }
            Outcome::Idle { settings, results } => {
                writeln!(w, "idle: {} connections held {}", settings.connections, human_us(settings.hold_us as f64))?;
                t.header(&["transport", "opened", "connect p50", "connect max", "dropped", "server rss before", "after", "per connection", "note"]);
                for r in results {
                    t.row(vec![
                        r.transport.to_string(),
                        r.opened.to_string(),
                        human_us(r.connect.p50_us as f64),
                        human_us(r.connect.max_us as f64),
                        r.dropped.to_string(),
                        bytes(r.server_rss_before_bytes),
                        bytes(r.server_rss_after_bytes),
                        r.server_rss_per_connection_bytes.map_or("-".into(), |b| format!("{:.1}KiB", b / 1024.0)),
                        note(&r.resources),
                    ]);
                    if let Some(why) = &r.first_drop {
                        t.note(format!("  {}: the first connection the server ended: {why}", r.transport));
                    }
                }
            }
            Outcome::Login { settings, results } => {
                writeln!(w, "login: {} timed logins per style, to a first message", settings.logins)?;
                t.header(&["style", "round trips", "sent", "received", "min", "p50", "max", "note"]);
                for r in results {
                    let time = &r.first_message;
                    t.row(vec![
                        r.style.to_string(),
                        r.round_trips.to_string(),
                        format!("{}B", r.bytes_sent),
                        format!("{}B", r.bytes_received),
                        human_us(time.min_us as f64),
                        human_us(time.p50_us as f64),
                        human_us(time.max_us as f64),
                        note(&r.resources),
                    ]);
                }
            }
            Outcome::Federated { settings, results } => {
                match &settings.peer_irc {
                    Some(peer) => writeln!(w, "federated: with a client of the IRC server at {peer}, in one channel, {} round trips per row", settings.round_trips)?,
                    None => writeln!(w, "federated: with {}'s {} at {}, {} round trips per row", settings.peer_domain, settings.peer_user, settings.peer_xmpp, settings.round_trips)?,
                }
                t.header(&["transport", "size", "typing", "min", "p50", "mean", "max", "note"]);
                for r in results {
                    t.note(format!("  {}: first round trip {} (logins {} and {})", r.transport, human_us(r.first_us as f64), human_us(r.connect_us as f64), human_us(r.peer_connect_us as f64)));
                    if let Some(met_us) = r.met_us {
                        t.note(format!("  {}: each saw the other in the channel {} after both registered", r.transport, human_us(met_us as f64)));
                    }
                    for row in &r.throughput {
                        let rate = (row.size as u64 * row.messages) as f64 * 1e6 / row.duration_us.max(1) as f64;
                        t.note(format!("  {}: {} messages of {}B one way in {} ({rate:.0} B/s of bodies)", r.transport, row.messages, row.size, human_us(row.duration_us as f64)));
                    }
                    for row in &r.rows {
                        let rt = &row.round_trip;
                        t.row(vec![
                            r.transport.to_string(),
                            format!("{}B", row.size),
                            human_us(row.typing_us as f64),
                            human_us(rt.min_us as f64),
                            human_us(rt.p50_us as f64),
                            human_us(rt.mean_us),
                            human_us(rt.max_us as f64),
                            note(&r.resources),
                        ]);
                    }
                }
            }
        }
        t.print(w)?;
        if let Outcome::Selftest { levels, .. } = &run.outcome {
            selftest_verdict(levels, w)?;
        }
        if run.bench_cpu_bound {
            writeln!(w, "WARNING: the bench was CPU-bound during this run; the marked figures show the bench's limit, not the server's.")?;
        }
    }
    Ok(())
}

/// The selftest's answer: the highest receive rate seen, and whether the bench or the
/// server was the limit there.
fn selftest_verdict(levels: &[crate::result::BroadcastLevel], w: &mut impl Write) -> io::Result<()> {
    let best = levels
        .iter()
        .flat_map(|l| l.steps.iter())
        .max_by(|a, b| a.received_per_s.total_cmp(&b.received_per_s));
    let Some(best) = best else { return Ok(()) };
    let bench = best.resources.bench_cpu_pct.map_or("unknown".into(), |p| format!("{p:.0}%"));
    writeln!(w, "\nselftest: the bench received up to {:.0} msgs/s (bench CPU {bench} at that step).", best.received_per_s)?;
    if best.resources.bench_cpu_bound {
        writeln!(w, "The bench was CPU-bound there: this is the bench's own ceiling on this machine.")
    } else {
        writeln!(w, "The bench was not CPU-bound there: the server saturated first, so the bench's ceiling is higher than this.")
    }
}

fn cpu(r: &Resources) -> String {
    r.server_cpu_pct.map_or("-".into(), |p| format!("{p:.0}%"))
}

fn rss(r: &Resources) -> String {
    bytes(r.server_rss_max_bytes)
}

fn bytes(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1}MiB", b as f64 / 1_048_576.0))
}

fn note(r: &Resources) -> String {
    match (r.bench_cpu_bound, r.host_saturated) {
        (true, _) => "BENCH CPU-BOUND".into(),
        (false, true) => "host saturated".into(),
        _ => String::new(),
    }
}

/// Left-aligned columns sized to their widest cell.
#[derive(Default)]
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    pub(crate) fn header(&mut self, cells: &[&str]) {
        self.rows.push(cells.iter().map(|c| c.to_string()).collect());
    }
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
    pub(crate) fn note(&mut self, line: String) {
        self.notes.push(line);
    }
    pub(crate) fn print(&mut self, w: &mut impl Write) -> io::Result<()> {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> =
            (0..cols).map(|i| self.rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0)).collect();
        for row in self.rows.drain(..) {
            let line: Vec<String> = row.iter().enumerate().map(|(i, c)| format!("{c:<w$}", w = widths[i])).collect();
            writeln!(w, "{}", line.join("  ").trim_end())?;
        }
        for n in self.notes.drain(..) {
            writeln!(w, "{n}")?;
        }
        Ok(())
    }
}

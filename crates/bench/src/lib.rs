//! `switchboard bench`: drives any real-time server with the classic workloads
//! (pingpong, countdown, chat, broadcast, the broadcast sweep through a MUC room, idle
//! connections) over native WebSocket, SockJS, plain HTTP and XMPP, and records latency
//! (HdrHistogram, coordinated omission corrected), throughput, saturation, and the CPU
//! and memory of the server and of the bench itself.
//!
//! `run` is thin: flags become a `Plan` of plain values, `measure` builds the real
//! objects and runs the scenario, then the table and the result file are written.
//! Tests call `run` and `measure` exactly as the binary does.

mod error;
pub mod flags;
pub mod latency;
pub mod linked;
mod output;
mod progress;
pub mod resources;
pub mod result;
mod scenario;
mod scram;
mod selftest;
pub mod stamp;
mod target;
pub mod transport;

use std::time::Instant;

use tokio_util::sync::CancellationToken;

pub use error::Error;
pub use flags::{Args, Plan};
pub use result::ResultFile;
pub use target::Target;

use flags::{Settings, TransportChoice};
use result::{Outcome, Run};
use scenario::Ctx;
use scenario::broadcast::Fanout;
use transport::TransportKind;

/// Runs `switchboard bench …`: measures, prints the table, writes `--out`.
/// Ctrl-C stops the scenario; what was measured is still printed and written.
pub async fn run(args: Args) -> Result<(), Error> {
    let plan = Plan::from_args(args)?;
    raise_open_file_limit();
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let command: Vec<String> = std::env::args().collect();
    let (file, failure) = measure(&plan, command, cancel).await;
    ctrl_c.abort();
    output::print_table(&file, &mut std::io::stdout().lock()).map_err(|e| Error::io(format!("stdout: {e}")))?;
    if let Some(path) = &plan.out {
        write_file(&file, path)?;
    }
    match failure {
        Some(e) if !e.is_cancelled() => Err(e),
        _ => Ok(()),
    }
}

/// Writes a result file as pretty JSON.
pub fn write_file(file: &ResultFile, path: &std::path::Path) -> Result<(), Error> {
    let json = serde_json::to_vec_pretty(file).map_err(|e| Error::io(format!("encoding results: {e}")))?;
    std::fs::write(path, json).map_err(|e| Error::io(format!("writing {}: {e}", path.display())))
}

/// Carries out a plan and returns the result file, plus the error that stopped it
/// early if any (the file then holds a run marked `partial`). Several targets are
/// measured one after another, one run each; a target that fails is recorded as a
/// partial run with its error and the next one still runs (Ctrl-C stops them all).
/// The error returned is the first one.
pub async fn measure(plan: &Plan, command: Vec<String>, cancel: CancellationToken) -> (ResultFile, Option<Error>) {
    let started_at = result::now_rfc3339();
    let mut file = ResultFile {
        format: result::FORMAT.to_string(),
        command,
        started_at,
        versions: result::Versions {
            switchboard: env!("CARGO_PKG_VERSION").to_string(),
            format: result::FORMAT.to_string(),
        },
        machine: result::Machine::this(),
        runs: Vec::new(),
    };
    // selftest without --target measures against its own child `switchboard serve`.
    if plan.spawn_server {
        let (mut child, url) = match selftest::spawn_serve(plan.timeout).await {
            Ok(spawned) => spawned,
            Err(e) => return (file, Some(e)),
        };
        let pid = plan.server_pid.or_else(|| child.id());
        let failure = measure_target(plan, "default", &url, pid, &cancel, &mut file).await;
        let _ = child.kill().await;
        return (file, failure);
    }
    let mut first_failure = None;
    for target in &plan.targets {
        let failure = measure_target(plan, &target.name, &target.url, plan.server_pid, &cancel, &mut file).await;
        match failure {
            Some(e) if e.is_cancelled() => return (file, Some(e)),
            Some(e) => {
                first_failure.get_or_insert(e);
            }
            None => {}
        }
    }
    (file, first_failure)
}

/// Runs the plan's scenario against one target and appends its run to `file`.
async fn measure_target(
    plan: &Plan,
    name: &str,
    url: &str,
    server_pid: Option<u32>,
    cancel: &CancellationToken,
    file: &mut ResultFile,
) -> Option<Error> {
    let nodes = match url.split(',').map(Target::parse).collect::<Result<Vec<_>, _>>() {
        Ok(nodes) => nodes,
        Err(e) => return Some(e),
    };
    let nodes = match &plan.xmpp {
        Some(xmpp) => match xmpp_nodes(nodes, xmpp) {
            Ok(nodes) => nodes,
            Err(e) => return Some(e),
        },
        None => nodes,
    };
    let target = nodes[0].clone();
    if nodes.len() > 1 && plan.link.is_some() {
        return Some(Error::usage("--link takes one URL per --target, not several nodes"));
    }
    // The server is whoever listens on the target's port, or on its XMPP port when only
    // that one is served (a server without HTTP).
    let local_pid = |port: u16| target.is_local().then(|| resources::pid_listening_on(port)).flatten();
    let server_pid = server_pid
        .or_else(|| local_pid(target.port()))
        .or_else(|| plan.xmpp.as_ref().and_then(|x| local_pid(x.ports[0])));
    // --link: every connection goes through an in-process link, which runs as long as
    // this binding lives.
    let (_link_proxy, target) = match &plan.link {
        Some(flag) => match linked::insert(flag.config.clone(), &target).await {
            Ok((proxy, through)) => (Some(proxy), through),
            Err(e) => return Some(e),
        },
        None => (None, target),
    };
    let start = Instant::now();
    let nodes = if nodes.len() > 1 { nodes } else { vec![target.clone()] };
    let ctx = Ctx {
        monitor: resources::Monitor::start(server_pid, start),
        target,
        nodes,
        clock: stamp::Clock::new(),
        cancel: cancel.clone(),
        progress: progress::Progress::new(plan.progress),
        timeout: plan.timeout,
        xmpp: plan.xmpp.as_ref().map(|x| x.settings.clone()),
        api_key: match &plan.settings {
            Settings::Api(_, key) => Some(key.clone()),
            _ => None,
        },
    };
    let mut run = Run {
        target_name: name.to_string(),
        target: url.to_string(),
        started_at: result::now_rfc3339(),
        duration_s: 0.0,
        partial: false,
        error: None,
        bench_cpu_bound: false,
        server_pid,
        server_cpus: server_pid.and_then(|pid| resources::cpus_allowed(&pid.to_string())),
        transports: Vec::new(),
        link: plan.link.as_ref().map(|f| linked::LinkRecord::new(&f.text, &f.config)),
        xmpp: None,
        outcome: empty_outcome(&plan.settings),
    };
    let failure = match resolve_transports(&ctx, &plan.transports, &plan.settings, plan.link.is_some()).await {
        Ok(kinds) => {
            run.transports = kinds.clone();
            if kinds.iter().any(|k| k.is_xmpp()) {
                run.xmpp = ctx.xmpp.clone();
            }
            run_scenario(&ctx, &kinds, &mut run.outcome).await.err()
        }
        Err(e) => Some(e),
    };
    ctx.progress.finish();
    run.duration_s = result::round(start.elapsed().as_secs_f64(), 3);
    run.bench_cpu_bound = outcome_cpu_bound(&run.outcome);
    if let Some(e) = &failure {
        run.partial = true;
        if !e.is_cancelled() {
            run.error = Some(e.to_string());
        }
    }
    file.runs.push(run);
    failure
}

/// Gives each node the XMPP endpoints the flags name: the paths, and its own port (one
/// for every node, or one per node).
fn xmpp_nodes(nodes: Vec<Target>, xmpp: &flags::XmppPlan) -> Result<Vec<Target>, Error> {
    if xmpp.ports.len() != 1 && xmpp.ports.len() != nodes.len() {
        return Err(Error::usage(format!(
            "--xmpp-port names {} ports for {} nodes: give one port for all, or one per node",
            xmpp.ports.len(),
            nodes.len()
        )));
    }
    Ok(nodes
        .into_iter()
        .enumerate()
        .map(|(i, node)| {
            node.with_xmpp(target::XmppEndpoints {
                tcp_port: xmpp.ports[i % xmpp.ports.len()],
                websocket_path: xmpp.websocket_path.clone(),
                sockjs_path: xmpp.sockjs_path.clone(),
                bosh_path: xmpp.bosh_path.clone(),
            })
        })
        .collect())
}

fn empty_outcome(settings: &Settings) -> Outcome {
    match settings.clone() {
        Settings::Pingpong(settings) => Outcome::Pingpong { settings, results: Vec::new() },
        Settings::Countdown(settings) => Outcome::Countdown { settings, results: Vec::new() },
        Settings::Chat(settings) => Outcome::Chat { settings, results: Vec::new() },
        Settings::Broadcast(settings) if settings.selftest => {
            Outcome::Selftest { settings, levels: Vec::new(), summary: Vec::new() }
        }
        Settings::Broadcast(settings) => Outcome::Broadcast { settings, levels: Vec::new(), summary: Vec::new() },
        Settings::Link(settings) => Outcome::Link { settings: Box::new(settings), tables: Default::default() },
        Settings::Muc(settings) => Outcome::Muc { settings, levels: Vec::new(), summary: Vec::new() },
        Settings::Idle(settings) => Outcome::Idle { settings, results: Vec::new() },
        Settings::Federated(settings) => Outcome::Federated { settings, results: Vec::new() },
        Settings::Login(settings) => Outcome::Login { settings, results: Vec::new() },
        Settings::Api(settings, _) => Outcome::Api { settings, results: Vec::new() },
    }
}

/// Runs the scenario an outcome is for, with the settings it carries (the plan's, as
/// the result file records them), and fills in its results.
async fn run_scenario(ctx: &Ctx, kinds: &[TransportKind], outcome: &mut Outcome) -> Result<(), Error> {
    match outcome {
        Outcome::Pingpong { settings, results } => scenario::pingpong::run(ctx, settings, kinds, results).await,
        Outcome::Countdown { settings, results } => scenario::countdown::run(ctx, settings, kinds, results).await,
        Outcome::Chat { settings, results } => scenario::chat::run(ctx, settings, kinds, results).await,
        Outcome::Broadcast { settings, levels, summary } | Outcome::Selftest { settings, levels, summary } => {
            let r = scenario::broadcast::run(ctx, settings, kinds, Fanout::App, levels).await;
            *summary = scenario::broadcast::summarise(levels);
            r
        }
        Outcome::Muc { settings, levels, summary } => {
            let r = scenario::broadcast::run(ctx, settings, kinds, Fanout::Room, levels).await;
            *summary = scenario::broadcast::summarise(levels);
            r
        }
        Outcome::Link { settings, tables } => scenario::link::run(ctx, settings, kinds, tables).await,
        Outcome::Idle { settings, results } => scenario::idle::run(ctx, settings, kinds, results).await,
        Outcome::Federated { settings, results } => scenario::federated::run(ctx, settings, kinds, results).await,
        Outcome::Login { settings, results } => scenario::login::run(ctx, settings, results).await,
        Outcome::Api { settings, results } => scenario::api::run(ctx, settings, kinds, results).await,
    }
}

fn outcome_cpu_bound(outcome: &Outcome) -> bool {
    match outcome {
        Outcome::Pingpong { results, .. } => results.iter().any(|r| r.resources.bench_cpu_bound),
        Outcome::Countdown { results, .. } => results.iter().any(|r| r.resources.bench_cpu_bound),
        Outcome::Chat { results, .. } => results.iter().any(|r| r.resources.bench_cpu_bound),
        Outcome::Broadcast { levels, .. } | Outcome::Selftest { levels, .. } | Outcome::Muc { levels, .. } => {
            levels.iter().flat_map(|l| &l.steps).any(|s| s.resources.bench_cpu_bound)
        }
        Outcome::Idle { results, .. } => results.iter().any(|r| r.resources.bench_cpu_bound),
        Outcome::Federated { results, .. } => results.iter().any(|r| r.resources.bench_cpu_bound),
        Outcome::Login { results, .. } => results.iter().any(|r| r.resources.bench_cpu_bound),
        Outcome::Api { results, .. } => {
            results.iter().any(|r| r.publish.resources.bench_cpu_bound || r.fanout.as_ref().is_some_and(|f| f.resources.bench_cpu_bound))
        }
        // One client at a time on a slow link: the bench idles.
        Outcome::Link { .. } => false,
    }
}

/// Why a scenario cannot use a transport at all, if it cannot: `http` only carries
/// count-down, XMPP transports carry pingpong, muc and idle, muc only XMPP,
/// federated `xmpp-tcp`, or `irc` with --peer-irc, login only `xmpp-tcp`, and IRC
/// everything but count-down, link, muc and login.
fn refuses(kind: TransportKind, settings: &Settings) -> Option<&'static str> {
    match settings {
        _ if kind == TransportKind::Http && !matches!(settings, Settings::Countdown(_)) => {
            Some("only carries the countdown scenario")
        }
        Settings::Countdown(_) | Settings::Link(_) if kind.is_irc() => Some("carries the pingpong, chat, broadcast and idle scenarios only"),
        Settings::Muc(_) if !kind.is_xmpp() => Some("is not an XMPP transport: muc needs one (xmpp-tcp, xmpp-websocket …)"),
        Settings::Federated(s) if s.peer_irc.is_some() && kind != TransportKind::Irc => Some("is not irc, which federated with --peer-irc runs over"),
        Settings::Federated(s) if s.peer_irc.is_some() => None,
        Settings::Federated(_) | Settings::Login(_) if kind != TransportKind::XmppTcp => Some("is not xmpp-tcp, which federated and login run over (or irc, with --peer-irc)"),
        Settings::Federated(_) | Settings::Login(_) => None,
        Settings::Pingpong(_) | Settings::Muc(_) | Settings::Idle(_) => None,
        _ if kind.is_xmpp() => Some("carries the pingpong, muc and idle scenarios only"),
        _ => None,
    }
}

/// Turns `--transport` into the list to run, probing the target for `all`.
async fn resolve_transports(ctx: &Ctx, choice: &TransportChoice, settings: &Settings, linked: bool) -> Result<Vec<TransportKind>, Error> {
    match choice {
        TransportChoice::List(kinds) => {
            for &k in kinds {
                if let Some(why) = refuses(k, settings) {
                    return Err(Error::usage(format!("the {k} transport {why}")));
                }
                if linked && k == TransportKind::XmppTcp {
                    return Err(Error::usage("--link carries the target's HTTP port only: xmpp-tcp cannot go through it"));
                }
                if ctx.target.is_irc() != k.is_irc() {
                    let why = if k.is_irc() { "needs an irc://host:port --target" } else { "needs an http:// --target; an irc:// target takes --transport irc" };
                    return Err(Error::usage(format!("the {k} transport {why}")));
                }
                if ctx.target.is_exact_websocket() && !k.is_native_websocket() {
                    return Err(Error::usage(format!("the {k} transport needs an http:// --target, not a ws:// URL")));
                }
            }
            Ok(kinds.clone())
        }
        TransportChoice::All => {
            if matches!(settings, Settings::Muc(_)) {
                return Err(Error::usage("muc takes the XMPP transports by name (--transport xmpp-tcp,xmpp-websocket …), not all"));
            }
            if ctx.target.is_exact_websocket() {
                return Ok(vec![TransportKind::Websocket]);
            }
            if ctx.target.is_irc() {
                return Ok(vec![TransportKind::Irc]);
            }
            let sockjs = transport::probe_sockjs(&ctx.target, ctx.timeout).await?;
            Ok(TransportKind::ALL
                .into_iter()
                // socket.io, centrifuge and XMPP are other protocol families, never probed, and
                // permessage-deflate is a choice: only when named.
                .filter(|&k| {
                    refuses(k, settings).is_none()
                        && !k.is_xmpp()
                        && !k.is_irc()
                        && !matches!(k, TransportKind::Socketio | TransportKind::Centrifuge | TransportKind::WebsocketDeflate)
                })
                .filter(|&k| !k.is_sockjs() || sockjs.is_some_and(|info| info.websocket || k != TransportKind::SockjsWebsocket))
                .collect())
        }
    }
}

/// Lets thousands of client sockets open: raises the soft RLIMIT_NOFILE to the hard one.
fn raise_open_file_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("warning: could not raise the open-file limit: {e}");
    }
}

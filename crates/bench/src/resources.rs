//! CPU and memory of the server under test and of the bench itself, read from /proc.
//!
//! A window's CPU% is the difference of two readings divided by wall time, so it is
//! exact however short the window; the once-a-second samples are kept as a time series.
//! The bench watches itself too: a figure taken while the bench was CPU-bound measures
//! the bench, not the server, and every output says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::result::round;

/// Linux reports /proc CPU times in USER_HZ, which is 100 on every supported ABI.
const TICKS_PER_SECOND: f64 = 100.0;

/// The bench counts as CPU-bound when it used at least this share of the cores it runs on.
const BENCH_BOUND_SHARE: f64 = 0.9;

/// The host counts as saturated when less than this share of all CPU time was idle.
const HOST_IDLE_FLOOR: f64 = 0.05;

/// Windows shorter than this report CPU figures but raise no CPU-bound or saturated flag.
const MIN_JUDGED_SECS: f64 = 0.5;

/// One reading of everything we watch.
#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    server_ticks: Option<u64>,
    server_rss: Option<u64>,
    /// Processes in the server's tree (itself and every process below it).
    server_processes: Option<usize>,
    bench_ticks: Option<u64>,
    bench_rss: Option<u64>,
    /// (busy, total) jiffies of the whole machine.
    host: Option<(u64, u64)>,
}

/// A once-a-second sample, relative to the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the run started.
    pub t_s: f64,
    pub server_cpu_pct: Option<f64>,
    pub server_rss_bytes: Option<u64>,
    pub bench_cpu_pct: Option<f64>,
}

/// CPU and memory over one measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Server CPU in % of one core (200 = two cores busy); null when no pid is known.
    pub server_cpu_pct: Option<f64>,
    pub server_cpu_max_pct: Option<f64>,
    pub server_rss_max_bytes: Option<u64>,
    /// Most processes the server's figures covered at once: it and every
    /// process below it (Node cluster workers, for one).
    pub server_processes: Option<usize>,
    pub bench_cpu_pct: Option<f64>,
    pub bench_rss_bytes: Option<u64>,
    /// Whole-machine busy share in % of all cores.
    pub host_cpu_pct: Option<f64>,
    /// The bench used ≥ 90 % of its cores: figures describe the bench's limit, not the server's.
    pub bench_cpu_bound: bool,
    /// Less than 5 % of the machine was idle: bench and server were competing for CPU.
    pub host_saturated: bool,
    /// The once-a-second samples that fell inside the window.
    pub samples: Vec<Sample>,
}

/// Samples /proc every second on its own task until dropped.
#[derive(Clone)]
pub struct Monitor {
    inner: Arc<Inner>,
}

struct Inner {
    server_pid: Option<u32>,
    cores: usize,
    run_start: Instant,
    samples: Mutex<Vec<Sample>>,
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A started measurement window; `finish` turns it into `Resources`.
pub struct Window {
    start: Reading,
}

impl Monitor {
    /// Starts sampling. `server_pid` is the process under test, if known.
    pub fn start(server_pid: Option<u32>, run_start: Instant) -> Monitor {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let inner = Arc::new(Inner {
            server_pid,
            cores,
            run_start,
            samples: Mutex::new(Vec::new()),
            stop: CancellationToken::new(),
        });
        let weak = Arc::downgrade(&inner);
        let stop = inner.stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            let mut last: Option<Reading> = None;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let Some(inner) = weak.upgrade() else { return };
                let now = read(inner.server_pid);
                if let Some(prev) = last {
                    let secs = now.at.duration_since(prev.at).as_secs_f64();
                    inner.samples.lock().push(Sample {
                        t_s: round(now.at.duration_since(inner.run_start).as_secs_f64(), 2),
                        server_cpu_pct: cpu_pct(prev.server_ticks, now.server_ticks, secs),
                        server_rss_bytes: now.server_rss,
                        bench_cpu_pct: cpu_pct(prev.bench_ticks, now.bench_ticks, secs),
                    });
                }
                last = Some(now);
            }
        });
        Monitor { inner }
    }

    /// The server's RSS now (its whole process tree), if its pid is known.
    pub fn server_rss(&self) -> Option<u64> {
        self.inner.server_pid.and_then(|pid| tree_usage(pid).1)
    }

    pub fn window(&self) -> Window {
        Window { start: read(self.inner.server_pid) }
    }

    pub fn finish(&self, window: Window) -> Resources {
        let end = read(self.inner.server_pid);
        let start = window.start;
        let secs = end.at.duration_since(start.at).as_secs_f64();
        let from = round(start.at.duration_since(self.inner.run_start).as_secs_f64(), 2);
        let samples: Vec<Sample> =
            self.inner.samples.lock().iter().copied().filter(|s| s.t_s > from && s.t_s <= from + secs + 0.01).collect();
        let bench_cpu_pct = cpu_pct(start.bench_ticks, end.bench_ticks, secs);
        // /proc counts CPU in 10 ms ticks: shorter windows are too coarse to judge by.
        let judged = secs >= MIN_JUDGED_SECS;
        let host_cpu_pct = match (start.host, end.host) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => Some(round(100.0 * (b1 - b0) as f64 / (t1 - t0) as f64, 1)),
            _ => None,
        };
        let server_rss_max_bytes = samples.iter().filter_map(|s| s.server_rss_bytes).chain(end.server_rss).max();
        let server_cpu_pct = cpu_pct(start.server_ticks, end.server_ticks, secs);
        let server_cpu_max_pct =
            samples.iter().filter_map(|s| s.server_cpu_pct).chain(server_cpu_pct).reduce(f64::max);
        Resources {
            server_cpu_pct,
            server_cpu_max_pct,
            server_rss_max_bytes,
            server_processes: [start.server_processes, end.server_processes].into_iter().flatten().max(),
            bench_cpu_pct,
            bench_rss_bytes: end.bench_rss,
            host_cpu_pct,
            bench_cpu_bound: judged && bench_cpu_pct.is_some_and(|p| p >= BENCH_BOUND_SHARE * 100.0 * self.inner.cores as f64),
            host_saturated: judged && host_cpu_pct.is_some_and(|p| p >= 100.0 * (1.0 - HOST_IDLE_FLOOR)),
            samples,
        }
    }
}

fn cpu_pct(before: Option<u64>, after: Option<u64>, secs: f64) -> Option<f64> {
    match (before, after) {
        (Some(b), Some(a)) if secs > 0.0 => Some(round(100.0 * a.saturating_sub(b) as f64 / TICKS_PER_SECOND / secs, 1)),
        _ => None,
    }
}

/// The CPUs process `pid` ("self" for the bench) may run on, as Linux lists them in
/// /proc/PID/status ("0", "1-3", "0,2"); `None` when that cannot be read.
pub fn cpus_allowed(pid: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Cpus_allowed_list:"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn read(server_pid: Option<u32>) -> Reading {
    let (server_ticks, server_rss, server_processes) = match server_pid {
        Some(pid) => tree_usage(pid),
        None => (None, None, None),
    };
    Reading {
        at: Instant::now(),
        server_ticks,
        server_rss,
        server_processes,
        bench_ticks: proc_ticks("/proc/self/stat"),
        bench_rss: proc_rss("/proc/self/status"),
        host: host_jiffies(),
    }
}

/// CPU ticks, RSS and process count of a server: the process and every process below it, so
/// that a server of several processes (Node's cluster workers, a forking
/// server) is measured whole. `None` when the process itself is gone. A
/// descendant that exits between two readings takes its ticks with it, so a
/// server that replaces workers during a run is under-counted.
fn tree_usage(pid: u32) -> (Option<u64>, Option<u64>, Option<usize>) {
    let root = proc_ticks(&format!("/proc/{pid}/stat"));
    if root.is_none() {
        return (None, None, None);
    }
    let pids = descendants(pid, &parents());
    let ticks = pids.iter().filter_map(|p| proc_ticks(&format!("/proc/{p}/stat"))).sum();
    let rss = pids.iter().filter_map(|p| proc_rss(&format!("/proc/{p}/status"))).sum();
    (Some(ticks), Some(rss), Some(pids.len()))
}

/// Every process's parent, from /proc/<pid>/stat.
fn parents() -> Vec<(u32, u32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parse_stat_ppid(&stat)?))
        })
        .collect()
}

/// `pid` and all its descendants, given every (process, parent) pair.
fn descendants(pid: u32, parents: &[(u32, u32)]) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(parents.iter().filter(|&&(p, pp)| pp == parent && p != parent).map(|&(p, _)| p));
        i += 1;
    }
    tree
}

fn parse_stat_ppid(stat: &str) -> Option<u32> {
    // after ')' : state(3) ppid(4).
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

/// utime + stime (fields 14 and 15) of /proc/<pid>/stat; the comm field may hold spaces,
/// so counting starts after its closing parenthesis.
fn proc_ticks(path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    parse_stat_ticks(&stat)
}

fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    // after ')' : state(3) ppid(4) ... utime is field 14 → index 11 here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

fn proc_rss(path: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn host_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let cpu = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = cpu.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// Finds the pid listening on TCP `port` on this machine: the socket inode from
/// /proc/net/tcp{,6}, then the process holding that inode among /proc/*/fd.
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(table) {
            inodes.extend(listening_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return None;
    }
    let targets: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            if let Ok(link) = std::fs::read_link(fd.path())
                && let Some(link) = link.to_str()
                && targets.iter().any(|t| t == link)
            {
                return Some(pid);
            }
        }
    }
    None
}

/// Inodes of sockets in state LISTEN (0A) on `port` in one /proc/net/tcp table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local = f.get(1)?;
            let local_port = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
            (local_port == port && *f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_its_process_and_every_process_below_it() {
        let parents = [(1, 0), (10, 1), (11, 10), (12, 10), (13, 11), (20, 1), (21, 20)];
        let mut tree = descendants(10, &parents);
        tree.sort_unstable();
        assert_eq!(tree, [10, 11, 12, 13]);
        assert_eq!(descendants(13, &parents), [13]);
        assert_eq!(parse_stat_ppid("1234 (my (odd) name) S 77 1234 1234 0"), Some(77));
    }

    #[test]
    fn this_process_is_in_its_own_tree() {
        let me = std::process::id();
        let (ticks, rss, processes) = tree_usage(me);
        assert!(ticks.is_some() && rss.is_some_and(|r| r > 0));
        assert!(processes.is_some_and(|n| n >= 1));
        assert!(descendants(me, &parents()).contains(&me));
    }

    #[test]
    fn stat_ticks_skip_the_command_name() {
        let stat = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 100 0 0";
        assert_eq!(parse_stat_ticks(stat), Some(300));
    }

    #[test]
    fn listening_inode_from_proc_net_tcp() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 55501 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 55502 1 0000000000000000 20 4 30 10 -1\n";
        assert_eq!(listening_inodes(table, 8080), vec![55501]);
        assert!(listening_inodes(table, 8081).is_empty());
    }

    #[tokio::test]
    async fn finds_our_own_listener_and_reads_our_cpu() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert_eq!(pid_listening_on(port), Some(std::process::id()));
        let monitor = Monitor::start(Some(std::process::id()), Instant::now());
        let w = monitor.window();
        let r = monitor.finish(w);
        assert!(r.server_rss_max_bytes.is_some_and(|b| b > 0));
        assert!(r.bench_cpu_pct.is_some());
    }
}

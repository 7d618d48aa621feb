//! The bench over an emulated constrained link (issue 5). `--link rate=2400bit,delay=500ms`
//! puts an in-process `switchboard link` proxy between the bench and the target for any
//! scenario; `bench link` builds its own links and measures what rate and delay do to
//! each transport. This module holds the flag values, what the result file records
//! about a link, the rows of the `link` scenario's four tables and how they are printed;
//! the measuring is in `scenario::link`.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::flags::CommonArgs;
use crate::latency::human_us;
use crate::output::Table;
use crate::transport::TransportKind;
use crate::{Error, Target};

/// A `--link` value: the text as given and the proxy it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkFlag {
    pub text: String,
    pub config: link::ProxyConfig,
}

impl FromStr for LinkFlag {
    type Err = link::SpecError;

    /// The link's own list syntax and messages (`rate=24oo` names the key and the form).
    fn from_str(s: &str) -> Result<LinkFlag, link::SpecError> {
        Ok(LinkFlag { text: s.trim().to_string(), config: s.parse()? })
    }
}

/// What the result file says about a link: the text given, the same in words, and
/// every setting as a number with its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The `--link` value as given (empty when only defaults apply).
    pub spec: String,
    /// The link in words, e.g. `2.4 kbit/s, 500ms one-way delay, 40 B overhead per packet
    /// of up to 1460 B; one link per connection`.
    pub description: String,
    /// Line rate of each direction; null for unlimited.
    pub rate_bps: Option<u64>,
    /// One-way delay of each direction.
    pub delay_us: u64,
    pub jitter_us: u64,
    /// Chance a packet is lost (emulated as a TCP retransmission stall).
    pub loss_pct: f64,
    /// Bytes each packet costs on the line beyond its payload (IPv4 + TCP headers: 40).
    pub overhead_bytes: u32,
    /// Largest payload of one packet.
    pub mss_bytes: u32,
    pub seed: u64,
    /// All connections share one line per direction (else one link per connection).
    pub shared: bool,
    /// Most bytes held in the link per connection and direction.
    pub buffer_bytes: u64,
}

impl LinkRecord {
    pub fn new(spec: &str, config: &link::ProxyConfig) -> LinkRecord {
        let l = &config.link;
        LinkRecord {
            spec: spec.to_string(),
            description: config.to_string(),
            rate_bps: l.rate.map(link::Rate::bps),
            delay_us: l.delay.as_micros() as u64,
            jitter_us: l.jitter.as_micros() as u64,
            loss_pct: f64::from(l.loss.per_million()) / 10_000.0,
            overhead_bytes: l.overhead,
            mss_bytes: l.mss.get(),
            seed: l.seed,
            shared: config.shared,
            buffer_bytes: config.buffer as u64,
        }
    }

    /// The proxy this record describes, with another rate and delay.
    pub(crate) fn config(&self, rate_bps: u64, delay_us: u64) -> link::ProxyConfig {
        let loss = link::Loss::from_per_million((self.loss_pct * 10_000.0).round() as u32).unwrap_or_default();
        link::ProxyConfig {
            link: link::LinkSpec {
                rate: link::Rate::from_bps(rate_bps),
                delay: Duration::from_micros(delay_us),
                jitter: Duration::from_micros(self.jitter_us),
                loss,
                overhead: self.overhead_bytes,
                mss: NonZeroU32::new(self.mss_bytes).unwrap_or(link::spec::DEFAULT_MSS),
                seed: self.seed,
            },
            shared: self.shared,
            buffer: usize::try_from(self.buffer_bytes).unwrap_or(usize::MAX),
        }
    }
}

/// Starts a link in front of `target` on this runtime and returns it with the target as
/// reached through it: same Host header and paths, TCP to the link's address.
pub(crate) async fn insert(config: link::ProxyConfig, target: &Target) -> Result<(link::Proxy, Target), Error> {
    let upstream = upstream(target).await?;
    let proxy = link::spawn(config, upstream)
        .await
        .map_err(|e| Error::io(format!("starting the link in front of {}: {e}", target.as_str())))?;
    let through = target.via(proxy.local_addr());
    Ok((proxy, through))
}

/// The target's address, resolved once as `switchboard link --upstream` does.
async fn upstream(target: &Target) -> Result<SocketAddr, Error> {
    let mut addrs = tokio::net::lookup_host((target.host(), target.port()))
        .await
        .map_err(|e| Error::connect(format!("{}: cannot resolve {}: {e}", target.as_str(), target.host())))?;
    addrs.next().ok_or_else(|| Error::connect(format!("{}: {} has no address", target.as_str(), target.host())))
}

/// The four tables of `bench link`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LinkTable {
    /// (a) Round trip vs payload size, beside the theoretical minimum.
    Size,
    /// (b) Round trip vs one-way delay and rate: the first from cold, then the stable one.
    Delay,
    /// (c) Link utilisation streaming payloads one way.
    Throughput,
    /// (d) Bytes on the wire per connection set-up and per message.
    Bytes,
}

/// Flags of `bench link`. Defaults are the study's values with few repetitions; the
/// whole default run takes about four minutes per transport.
#[derive(Debug, clap::Args)]
pub struct LinkArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Tables to measure, comma-separated: size, delay, throughput, bytes.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "size,delay,throughput,bytes")]
    pub tables: Vec<LinkTable>,
    /// Line rate of the size, throughput and bytes tables (bit, kbit, mbit, gbit per second).
    #[arg(long, default_value = "2400bit", value_name = "RATE")]
    pub rate: link::Rate,
    /// One-way delay of the size, throughput and bytes tables (us, ms, s).
    #[arg(long, default_value = "500ms", value_name = "TIME", value_parser = link::parse_duration)]
    pub delay: Duration,
    /// Payload sizes of the size table, in bytes.
    #[arg(long, value_delimiter = ',', default_value = "2,100,200,500", value_name = "BYTES")]
    pub sizes: Vec<u32>,
    /// Line rates of the delay table.
    #[arg(long, value_delimiter = ',', default_value = "2400bit,19200bit", value_name = "RATES")]
    pub rates: Vec<link::Rate>,
    /// One-way delays of the delay table.
    #[arg(long, value_delimiter = ',', default_value = "0ms,500ms,1s", value_name = "TIMES",
          value_parser = link::parse_duration)]
    pub delays: Vec<Duration>,
    /// Payload of each message in the delay and bytes tables, in bytes.
    #[arg(long, default_value_t = 100, value_name = "BYTES")]
    pub payload: u32,
    /// Round trips measured per row (in the delay table: after the first, cold one).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub round_trips: u32,
    /// Payload sizes streamed in the throughput table, in bytes.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1024,10240", value_name = "BYTES")]
    pub stream_sizes: Vec<u32>,
    /// How long each throughput row keeps sending; at least 2 messages are always sent.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = crate::flags::parse_duration)]
    pub stream_time: Duration,
}

/// Settings of `bench link`, as written into the result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSettings {
    pub tables: Vec<LinkTable>,
    /// Rate of the size, throughput and bytes tables.
    pub rate_bps: u64,
    /// One-way delay of the size, throughput and bytes tables.
    pub delay_us: u64,
    pub sizes_bytes: Vec<u32>,
    /// Rates × delays of the delay table.
    pub rates_bps: Vec<u64>,
    pub delays_us: Vec<u64>,
    /// Payload of the delay and bytes tables.
    pub payload_bytes: u32,
    pub round_trips: u32,
    pub stream_sizes_bytes: Vec<u32>,
    pub stream_us: u64,
    /// The link of the size, throughput and bytes tables; the delay table's links differ
    /// only in rate and delay. Every link is shared by the client's connections (one
    /// line per direction), as a client behind one slow link would have it.
    pub link: LinkRecord,
}

impl LinkArgs {
    /// Checks the flags; `base` is `--link`, whose overhead, MSS, jitter, loss, seed and
    /// buffer apply to every link this scenario builds.
    pub(crate) fn settings(&self, base: Option<&LinkFlag>) -> Result<LinkSettings, Error> {
        let (spec, mut config) = match base {
            Some(flag) => {
                if flag.config.link.rate.is_some() || !flag.config.link.delay.is_zero() {
                    return Err(Error::usage(
                        "bench link sets rate and delay itself (--rate, --delay, --rates, --delays); \
                         give --link only jitter, loss, overhead, mss, seed or buffer",
                    ));
                }
                (flag.text.clone(), flag.config.clone())
            }
            None => (String::new(), link::ProxyConfig::default()),
        };
        config.shared = true;
        config.link.rate = Some(self.rate);
        config.link.delay = self.delay;
        let positive = |list: &[u32], flag: &str| {
            if list.is_empty() || list.contains(&0) {
                Err(Error::usage(format!("{flag} needs sizes of at least 1 byte")))
            } else {
                Ok(())
            }
        };
        positive(&self.sizes, "--sizes")?;
        positive(&self.stream_sizes, "--stream-sizes")?;
        positive(&[self.payload], "--payload")?;
        if self.tables.is_empty() || self.rates.is_empty() || self.delays.is_empty() {
            return Err(Error::usage("--tables, --rates and --delays need at least one value"));
        }
        if self.round_trips == 0 {
            return Err(Error::usage("--round-trips must be at least 1"));
        }
        let mut tables = Vec::new();
        for t in &self.tables {
            if !tables.contains(t) {
                tables.push(*t);
            }
        }
        Ok(LinkSettings {
            tables,
            rate_bps: self.rate.bps(),
            delay_us: self.delay.as_micros() as u64,
            sizes_bytes: self.sizes.clone(),
            rates_bps: self.rates.iter().map(|r| r.bps()).collect(),
            delays_us: self.delays.iter().map(|d| d.as_micros() as u64).collect(),
            payload_bytes: self.payload,
            round_trips: self.round_trips,
            stream_sizes_bytes: self.stream_sizes.clone(),
            stream_us: self.stream_time.as_micros() as u64,
            link: LinkRecord::new(&spec, &config),
        })
    }
}

/// The transports `--transport all` compares on a link: WebSocket and SockJS's two
/// XHR transports, the streaming and the polling one.
pub(crate) const ALL_TRANSPORTS: [TransportKind; 3] =
    [TransportKind::Websocket, TransportKind::XhrStreaming, TransportKind::XhrPolling];

/// The four tables of a `link` run; each is empty unless asked for with `--tables`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkTables {
    /// (a) Round trip vs payload size at `--rate` and `--delay`.
    pub round_trip_vs_size: Vec<SizeRow>,
    /// (b) First (from cold) and stable round trip vs one-way delay, per rate.
    pub round_trip_vs_delay: Vec<DelayRow>,
    /// (c) Link utilisation streaming each payload size.
    pub throughput: Vec<ThroughputRow>,
    /// (d) Bytes on the wire per connection set-up and per message.
    pub wire_bytes: Vec<BytesRow>,
    /// Rows that could not be measured, and why (e.g. a SockJS session that expired
    /// while a long poll response crossed a slow link); the tables go on without them.
    /// Optional in the schema: files from before it existed have none.
    #[serde(default)]
    pub failures: Vec<FailedRow>,
}

/// A row of one of the tables that could not be measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedRow {
    pub table: LinkTable,
    pub transport: TransportKind,
    pub rate_bps: u64,
    pub delay_us: u64,
    pub payload_bytes: u32,
    pub error: String,
}

/// (a) Round trips of one payload size, beside the least they could take.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeRow {
    pub transport: TransportKind,
    pub rate_bps: u64,
    pub delay_us: u64,
    pub payload_bytes: u32,
    /// Round trips measured, each on an idle link.
    pub round_trips: u32,
    pub round_trip_min_us: u64,
    pub round_trip_mean_us: f64,
    pub round_trip_max_us: u64,
    /// Theoretical minimum from the payload alone: payload bits both ways / rate + 2 × delay.
    pub min_payload_us: u64,
    /// Link bytes (payload + per-packet overhead) of one round trip, mean, from the send
    /// until the reply arrived: protocol framing, HTTP headers and TCP/IP overhead included.
    pub wire_up_bytes: f64,
    pub wire_down_bytes: f64,
    /// Minimum including framing and TCP/IP overhead: (wire_up + wire_down) bits / rate,
    /// plus 2 × delay. A floor for WebSocket; for SockJS it also counts the xhr_send
    /// response, which may cross beside the reply rather than before it.
    pub min_wire_us: u64,
}

/// (b) One rate and delay: the first round trip from cold, then the stable one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DelayRow {
    pub transport: TransportKind,
    pub rate_bps: u64,
    pub delay_us: u64,
    pub payload_bytes: u32,
    /// Until the transport was open (TCP handshake, HTTP upgrade or SockJS open frame).
    pub connect_us: u64,
    /// From the start of the connect until the first reply: set-up from cold plus the
    /// first round trip (for SockJS over HTTP also the sending connection's handshake).
    pub first_round_trip_us: u64,
    pub stable_round_trips: u32,
    pub stable_round_trip_min_us: u64,
    pub stable_round_trip_mean_us: f64,
    pub stable_round_trip_max_us: u64,
    /// payload bits both ways / rate + 2 × delay.
    pub min_payload_us: u64,
}

/// (c) One payload size streamed back to back to the echo app.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThroughputRow {
    pub transport: TransportKind,
    pub rate_bps: u64,
    pub delay_us: u64,
    pub payload_bytes: u32,
    /// Messages sent, every one echoed back (the echoes pace the sender).
    pub messages: u64,
    /// How long the client's line carried them: from the first send, on an idle link,
    /// until the last byte left the line (its arrival at the server less the delay).
    pub duration_us: u64,
    /// Payload bits per second delivered one way: messages × payload bits / `duration_us`.
    pub payload_bps: f64,
    /// payload_bps / rate × 100: the share of the line that carried payload.
    pub utilisation_pct: f64,
    /// Link bytes per message over the whole stream, each way.
    pub wire_up_bytes: f64,
    pub wire_down_bytes: f64,
}

/// (d) Bytes on the wire (payload + per-packet overhead, as the link counts them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BytesRow {
    pub transport: TransportKind,
    pub rate_bps: u64,
    pub delay_us: u64,
    pub payload_bytes: u32,
    /// Connection set-up until the link was idle again: TCP handshake plus HTTP upgrade
    /// (WebSocket) or the receiving request up to the SockJS open frame.
    pub setup_wire_up_bytes: u64,
    pub setup_wire_down_bytes: u64,
    pub setup_packets_up: u64,
    pub setup_packets_down: u64,
    /// The first message's round trip; for SockJS over HTTP it also opens the sending
    /// connection (TCP handshake).
    pub first_message_wire_up_bytes: u64,
    pub first_message_wire_down_bytes: u64,
    /// Messages averaged below (after the first).
    pub messages: u32,
    /// One message's round trip (the echo included) until the link was idle again, mean.
    pub message_wire_up_bytes: f64,
    pub message_wire_down_bytes: f64,
    pub message_packets_up: f64,
    pub message_packets_down: f64,
    /// message_wire_up_bytes + message_wire_down_bytes − 2 × payload: what one echoed
    /// message costs beyond its payload both ways.
    pub message_overhead_bytes: f64,
}

/// Theoretical time of `bytes` at `rate_bps` plus `delays` one-way delays, in µs.
pub(crate) fn line_time_us(bytes: f64, rate_bps: u64, delays: u64, delay_us: u64) -> u64 {
    (bytes * 8.0 * 1e6 / rate_bps as f64).ceil() as u64 + delays * delay_us
}

/// Prints the tables of a `link` run.
pub(crate) fn print(settings: &LinkSettings, tables: &LinkTables, w: &mut impl std::io::Write) -> std::io::Result<()> {
    let rate = |bps: u64| link::Rate::from_bps(bps).map_or("-".into(), |r| r.to_string());
    let us = |x: u64| human_us(x as f64);
    writeln!(w, "link: {}", settings.link.description)?;
    writeln!(
        w,
        "(bytes on the wire = payload + {} B per packet; round trips measured on an idle link)",
        settings.link.overhead_bytes
    )?;
    let mut t = Table::default();
    if !tables.round_trip_vs_size.is_empty() {
        writeln!(w, "\n(a) round trip vs payload size")?;
        t.header(&[
            "transport", "rate", "delay", "payload", "min", "mean", "max", "theory: payload", "theory: wire",
            "wire up", "wire down",
        ]);
        for r in &tables.round_trip_vs_size {
            t.row(vec![
                r.transport.to_string(),
                rate(r.rate_bps),
                us(r.delay_us),
                format!("{} B", r.payload_bytes),
                us(r.round_trip_min_us),
                human_us(r.round_trip_mean_us),
                us(r.round_trip_max_us),
                us(r.min_payload_us),
                us(r.min_wire_us),
                format!("{:.0} B", r.wire_up_bytes),
                format!("{:.0} B", r.wire_down_bytes),
            ]);
        }
        t.note("  theory: payload = payload bits both ways / rate + 2 × delay; theory: wire = the bytes the link carried before the reply arrived (framing, headers, TCP/IP) / rate + 2 × delay".into());
        t.print(w)?;
    }
    if !tables.round_trip_vs_delay.is_empty() {
        writeln!(w, "\n(b) round trip vs one-way delay: first from cold (connect included), then stable")?;
        t.header(&["transport", "rate", "delay", "payload", "connect", "first", "stable mean", "stable min", "stable max", "theory: payload"]);
        for r in &tables.round_trip_vs_delay {
            t.row(vec![
                r.transport.to_string(),
                rate(r.rate_bps),
                us(r.delay_us),
                format!("{} B", r.payload_bytes),
                us(r.connect_us),
                us(r.first_round_trip_us),
                human_us(r.stable_round_trip_mean_us),
                us(r.stable_round_trip_min_us),
                us(r.stable_round_trip_max_us),
                us(r.min_payload_us),
            ]);
        }
        t.print(w)?;
    }
    if !tables.throughput.is_empty() {
        writeln!(w, "\n(c) throughput: messages streamed back to back, one way (the echoes pace the sender)")?;
        t.header(&["transport", "rate", "delay", "payload", "messages", "time", "payload bit/s", "utilisation", "wire up/msg", "wire down/msg"]);
        for r in &tables.throughput {
            t.row(vec![
                r.transport.to_string(),
                rate(r.rate_bps),
                us(r.delay_us),
                format!("{} B", r.payload_bytes),
                r.messages.to_string(),
                us(r.duration_us),
                format!("{:.0}", r.payload_bps),
                format!("{:.1}%", r.utilisation_pct),
                format!("{:.0} B", r.wire_up_bytes),
                format!("{:.0} B", r.wire_down_bytes),
            ]);
        }
        t.note("  utilisation = payload bits sent one way / time the client's line carried them (first send to last byte off the line) / rate".into());
        t.print(w)?;
    }
    if !tables.wire_bytes.is_empty() {
        writeln!(w, "\n(d) bytes on the wire per connection set-up and per message")?;
        t.header(&[
            "transport", "payload", "set-up up", "set-up down", "set-up packets", "first msg up", "first msg down",
            "msg up", "msg down", "msg packets", "overhead/msg",
        ]);
        for r in &tables.wire_bytes {
            t.row(vec![
                r.transport.to_string(),
                format!("{} B", r.payload_bytes),
                format!("{} B", r.setup_wire_up_bytes),
                format!("{} B", r.setup_wire_down_bytes),
                format!("{}↑ {}↓", r.setup_packets_up, r.setup_packets_down),
                format!("{} B", r.first_message_wire_up_bytes),
                format!("{} B", r.first_message_wire_down_bytes),
                format!("{:.0} B", r.message_wire_up_bytes),
                format!("{:.0} B", r.message_wire_down_bytes),
                format!("{:.1}↑ {:.1}↓", r.message_packets_up, r.message_packets_down),
                format!("{:.0} B", r.message_overhead_bytes),
            ]);
        }
        t.note("  a message = one echoed round trip: the send up and the echo down; overhead = wire bytes both ways − 2 × payload".into());
        t.print(w)?;
    }
    if !tables.failures.is_empty() {
        writeln!(w, "\nnot measured:")?;
        for f in &tables.failures {
            let table = match f.table {
                LinkTable::Size => "(a)",
                LinkTable::Delay => "(b)",
                LinkTable::Throughput => "(c)",
                LinkTable::Bytes => "(d)",
            };
            writeln!(
                w,
                "  {table} {} at {}, {} delay, {} B: {}",
                f.transport,
                rate(f.rate_bps),
                us(f.delay_us),
                f.payload_bytes,
                f.error
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_to_the_same_proxy() {
        let flag: LinkFlag = "rate=2400bit,delay=500ms,jitter=20ms,loss=0.5%,overhead=52".parse().expect("valid");
        let record = LinkRecord::new(&flag.text, &flag.config);
        assert_eq!(record.rate_bps, Some(2400));
        assert_eq!(record.delay_us, 500_000);
        assert_eq!(record.loss_pct, 0.5);
        assert_eq!(record.overhead_bytes, 52);
        assert!(!record.shared);
        assert_eq!(record.config(2400, 500_000), flag.config);
        assert!("rate=fast".parse::<LinkFlag>().expect_err("bad rate").to_string().contains("'rate'"));
    }

    #[test]
    fn theory() {
        // 2 × 100 B at 2400 bit/s is 666.67 ms, plus 2 × 500 ms.
        assert_eq!(line_time_us(200.0, 2400, 2, 500_000), 1_666_667);
        assert_eq!(line_time_us(0.0, 2400, 2, 0), 0);
    }
}

//! What a link is — rate, one-way delay, jitter, loss, per-packet overhead —
//! and the text people write it in: `2400bit`, `19.2kbit`, `500ms`, `0.5%`,
//! and the bench's `rate=2400bit,delay=500ms,…` lists. The `link` flags and
//! the bench share these parsers, so both give the same messages.
//!
//! Rates and percentages are parsed as exact decimals (no floating point),
//! so `19.2kbit` is exactly 19,200 bit/s. Durations are humantime's, as
//! every duration `switchboard` reads: `500ms`, `0.5s`, `1m 30s`.

use std::{fmt, num::NonZeroU32, num::NonZeroU64, str::FromStr, time::Duration};

/// Why a value could not be parsed. The message says what was expected; the
/// caller (clap, or [`SpecError`]) names the flag or key and the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error(
        "not a rate: write a number and a unit, e.g. 2400bit, 19.2kbit or 1mbit \
         (units: bit, kbit, mbit, gbit, per second)"
    )]
    Rate,
    #[error("a rate must be above 0 bit/s")]
    ZeroRate,
    #[error("a rate must be a whole number of bit/s")]
    FractionalRate,
    #[error(
        "not a duration: write a number and a unit, e.g. 500ms, 0.5s or 1m 30s \
         (units: us, ms, s, m, h)"
    )]
    Duration,
    #[error(
        "not a percentage: write a number and %, e.g. 0.5% \
         (from 0% up to, not including, 100%)"
    )]
    Percent,
    #[error("a loss must be below 100% (every packet lost would never arrive)")]
    TotalLoss,
    #[error("a loss has at most 4 decimals (0.0001%)")]
    FractionalPercent,
    #[error("not a whole number")]
    Integer,
    #[error("expected true or false")]
    Bool,
    #[error("must be at least {0}")]
    TooSmall(u64),
    #[error("too large")]
    TooLarge,
    #[error("not an address: write host:port, e.g. 127.0.0.1:8080")]
    Address,
}

/// A bad `key=value` in a link list such as `rate=2400bit,delay=500ms`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("invalid value '{value}' for '{key}': {source}")]
    Value {
        key: String,
        value: String,
        source: ParseError,
    },
    #[error("unknown link setting '{key}' (known: {known})")]
    UnknownKey { key: String, known: &'static str },
    #[error("link setting '{0}' needs a value, e.g. {0}=…")]
    MissingValue(String),
}

/// A line rate in bits per second, always above zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(NonZeroU64);

impl Rate {
    /// A rate of `bps` bit/s; `None` for 0.
    pub fn from_bps(bps: u64) -> Option<Rate> {
        NonZeroU64::new(bps).map(Rate)
    }

    /// Bits per second.
    pub fn bps(self) -> u64 {
        self.0.get()
    }

    /// Time to put `bytes` on the line, rounded up to the nanosecond.
    pub fn serialisation(self, bytes: u64) -> Duration {
        let nanos = (u128::from(bytes) * 8 * 1_000_000_000).div_ceil(u128::from(self.bps()));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl FromStr for Rate {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Rate, ParseError> {
        let lower = s.trim().to_ascii_lowercase();
        // Longer units first: "kbit" also ends in "bit".
        const UNITS: [(&str, usize); 4] = [("gbit", 9), ("mbit", 6), ("kbit", 3), ("bit", 0)];
        let bps = with_unit(&lower, &UNITS, ParseError::Rate, ParseError::FractionalRate)?;
        Rate::from_bps(bps).ok_or(ParseError::ZeroRate)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.bps();
        let (scale, unit) = match bps {
            1_000_000_000.. => (1_000_000_000, "Gbit/s"),
            1_000_000.. => (1_000_000, "Mbit/s"),
            1_000.. => (1_000, "kbit/s"),
            _ => (1, "bit/s"),
        };
        write!(f, "{} {unit}", fixed(bps, scale))
    }
}

/// The chance that one transmission of a packet is lost, in steps of 0.0001 %.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loss {
    per_million: u32,
}

impl Loss {
    /// No loss.
    pub const NONE: Loss = Loss { per_million: 0 };

    /// A loss of `per_million` / 1,000,000 (so 5,000 is 0.5 %); `None` from
    /// 100 % up.
    pub fn from_per_million(per_million: u32) -> Option<Loss> {
        (per_million < 1_000_000).then_some(Loss { per_million })
    }

    /// The loss in millionths.
    pub fn per_million(self) -> u32 {
        self.per_million
    }

    /// Whether no packet is ever lost.
    pub fn is_none(self) -> bool {
        self.per_million == 0
    }
}

impl FromStr for Loss {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Loss, ParseError> {
        let number = s.trim().strip_suffix('%').ok_or(ParseError::Percent)?;
        // Percent to millionths: four decimal places.
        let per_million = decimal(number.trim(), 4).map_err(|e| match e {
            Decimal::Syntax => ParseError::Percent,
            Decimal::Inexact => ParseError::FractionalPercent,
            Decimal::Overflow => ParseError::TotalLoss,
        })?;
        u32::try_from(per_million)
            .ok()
            .and_then(Loss::from_per_million)
            .ok_or(ParseError::TotalLoss)
    }
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", fixed(u64::from(self.per_million), 10_000))
    }
}

/// Parses a duration such as `500ms`, `0.5s`, `1m 30s` or `250us`
/// (humantime's syntax, which `serve` and `bench` read too).
pub fn parse_duration(s: &str) -> Result<Duration, ParseError> {
    humantime::parse_duration(s.trim()).map_err(|_| ParseError::Duration)
}

/// Parses a whole number of at least `min`.
pub fn parse_count<T: TryFrom<u64>>(s: &str, min: u64) -> Result<T, ParseError> {
    let n = decimal(s.trim(), 0).map_err(|e| match e {
        Decimal::Overflow => ParseError::TooLarge,
        Decimal::Syntax | Decimal::Inexact => ParseError::Integer,
    })?;
    let n = u64::try_from(n).map_err(|_| ParseError::TooLarge)?;
    if n < min {
        return Err(ParseError::TooSmall(min));
    }
    T::try_from(n).map_err(|_| ParseError::TooLarge)
}

/// Parses `true` or `false`.
pub fn parse_bool(s: &str) -> Result<bool, ParseError> {
    match s.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ParseError::Bool),
    }
}

/// Parses a `host:port` address without resolving it.
pub fn parse_address(s: &str) -> Result<String, ParseError> {
    let s = s.trim();
    match s.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(s.to_owned()),
        _ => Err(ParseError::Address),
    }
}

/// Everything that shapes one link. Both directions get the same settings
/// but are separate lines (full duplex), each with its own queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    /// Line rate of each direction. Default: `None`, unlimited (no
    /// serialisation time).
    pub rate: Option<Rate>,
    /// One-way propagation delay. Default: 0.
    pub delay: Duration,
    /// Each packet's delay is drawn uniformly from `delay ± jitter` (never
    /// below 0); bytes are still never reordered. Default: 0.
    pub jitter: Duration,
    /// Chance that one transmission of a packet is lost. A loss is a
    /// retransmission stall, never missing bytes (see [`crate::Lane`]).
    /// Default: 0 %.
    pub loss: Loss,
    /// Bytes each packet costs on the line beyond its payload. Default: 40,
    /// an IPv4 header and a TCP header without options.
    pub overhead: u32,
    /// Largest payload of one packet (TCP's maximum segment size). Default:
    /// 1460, what fits a 1500-byte Ethernet MTU.
    pub mss: NonZeroU32,
    /// Seed of the random draws for jitter and loss, so runs repeat.
    /// Default: 0.
    pub seed: u64,
}

/// Default per-packet overhead: IPv4 (20 B) + TCP (20 B) headers.
pub const DEFAULT_OVERHEAD: u32 = 40;
/// Default maximum segment size: 1500-byte MTU less 40 B of headers.
pub const DEFAULT_MSS: NonZeroU32 = NonZeroU32::new(1460).expect("1460 is not zero");

/// The keys a [`LinkSpec`] list accepts.
pub(crate) const LINK_KEYS: &str = "rate, delay, jitter, loss, overhead, mss, seed";

impl Default for LinkSpec {
    fn default() -> LinkSpec {
        LinkSpec {
            rate: None,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: Loss::NONE,
            overhead: DEFAULT_OVERHEAD,
            mss: DEFAULT_MSS,
            seed: 0,
        }
    }
}

impl LinkSpec {
    /// Whether the link changes timing at all: with no rate, delay, jitter or
    /// loss, bytes are forwarded as they come.
    pub fn is_shaping(&self) -> bool {
        self.rate.is_some()
            || !self.delay.is_zero()
            || !self.jitter.is_zero()
            || !self.loss.is_none()
    }

    /// Sets one `key=value`. Returns `Ok(false)` for a key that is not a link
    /// setting, so a caller with more keys can try its own.
    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<bool, SpecError> {
        let bad = |source| SpecError::Value {
            key: key.to_owned(),
            value: value.to_owned(),
            source,
        };
        match key {
            "rate" => self.rate = Some(value.parse().map_err(bad)?),
            "delay" => self.delay = parse_duration(value).map_err(bad)?,
            "jitter" => self.jitter = parse_duration(value).map_err(bad)?,
            "loss" => self.loss = value.parse().map_err(bad)?,
            "overhead" => self.overhead = parse_count(value, 0).map_err(bad)?,
            "mss" => {
                let mss: u32 = parse_count(value, 1).map_err(bad)?;
                self.mss = NonZeroU32::new(mss).ok_or_else(|| bad(ParseError::TooSmall(1)))?;
            }
            "seed" => self.seed = parse_count(value, 0).map_err(bad)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// Splits `a=1,b,c=2` into `(key, Some(value))` / `(key, None)` pairs,
/// skipping empty items so `""` and trailing commas are fine.
pub(crate) fn settings(s: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    s.split(',').map(str::trim).filter(|item| !item.is_empty()).map(|item| {
        match item.split_once('=') {
            Some((key, value)) => (key.trim(), Some(value.trim())),
            None => (item, None),
        }
    })
}

impl FromStr for LinkSpec {
    type Err = SpecError;

    /// Parses `rate=2400bit,delay=500ms,jitter=20ms,loss=0.5%,overhead=40,
    /// mss=1460,seed=7`; every key is optional and defaults as in
    /// [`LinkSpec::default`].
    fn from_str(s: &str) -> Result<LinkSpec, SpecError> {
        let mut spec = LinkSpec::default();
        for (key, value) in settings(s) {
            let value = value.ok_or_else(|| SpecError::MissingValue(key.to_owned()))?;
            if !spec.set(key, value)? {
                return Err(SpecError::UnknownKey {
                    key: key.to_owned(),
                    known: LINK_KEYS,
                });
            }
        }
        Ok(spec)
    }
}

impl fmt::Display for LinkSpec {
    /// The link in words, e.g. `2.4 kbit/s, 500ms one-way delay ± 20ms
    /// jitter, 0.5% loss (as retransmission stalls), 40 B overhead per packet
    /// of up to 1460 B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_shaping() {
            return write!(f, "an unshaped link (bytes forwarded as they come)");
        }
        match self.rate {
            Some(rate) => write!(f, "{rate}")?,
            None => write!(f, "unlimited rate")?,
        }
        write!(f, ", {:?} one-way delay", self.delay)?;
        if !self.jitter.is_zero() {
            write!(f, " ± {:?} jitter", self.jitter)?;
        }
        if !self.loss.is_none() {
            write!(f, ", {} loss (as retransmission stalls)", self.loss)?;
        }
        write!(
            f,
            ", {} B overhead per packet of up to {} B",
            self.overhead, self.mss
        )?;
        if !self.jitter.is_zero() || !self.loss.is_none() {
            write!(f, ", seed {}", self.seed)?;
        }
        Ok(())
    }
}

/// Why [`decimal`] failed.
enum Decimal {
    Syntax,
    Inexact,
    Overflow,
}

/// A decimal number followed by the first of `units` the text ends with,
/// as a whole number of that unit's `10^-scale` parts (e.g. `0.5s` with
/// scale 9 is 500,000,000 ns). `syntax` and `inexact` are the caller's
/// errors for a malformed number and for one finer than the smallest part.
fn with_unit(text: &str, units: &[(&str, usize)], syntax: ParseError, inexact: ParseError) -> Result<u64, ParseError> {
    let (number, scale) = units
        .iter()
        .find_map(|&(unit, scale)| text.strip_suffix(unit).map(|n| (n, scale)))
        .ok_or_else(|| syntax.clone())?;
    let value = decimal(number.trim(), scale).map_err(|e| match e {
        Decimal::Syntax => syntax,
        Decimal::Inexact => inexact,
        Decimal::Overflow => ParseError::TooLarge,
    })?;
    u64::try_from(value).map_err(|_| ParseError::TooLarge)
}

/// `text` (digits with at most one `.`) times 10^`scale`, exactly: an error
/// if that is not a whole number.
fn decimal(text: &str, scale: usize) -> Result<u128, Decimal> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return Err(Decimal::Syntax);
    }
    let frac = frac.as_bytes();
    if frac.iter().skip(scale).any(|&b| b != b'0') {
        return Err(Decimal::Inexact);
    }
    let scaled = (0..scale).map(|i| frac.get(i).copied().unwrap_or(b'0'));
    int.bytes().chain(scaled).try_fold(0u128, |value, digit| {
        value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u128::from(digit - b'0')))
            .ok_or(Decimal::Overflow)
    })
}

/// `value / scale` written with as many decimals as it needs.
fn fixed(value: u64, scale: u64) -> String {
    let (int, mut frac) = (value / scale, value % scale);
    if frac == 0 {
        return int.to_string();
    }
    let mut width = scale.ilog10() as usize;
    while frac % 10 == 0 {
        frac /= 10;
        width -= 1;
    }
    format!("{int}.{frac:0width$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bps(s: &str) -> Result<u64, ParseError> {
        s.parse::<Rate>().map(Rate::bps)
    }

    #[test]
    fn rates_parse_exactly() {
        assert_eq!(bps("2400bit"), Ok(2400));
        assert_eq!(bps("19.2kbit"), Ok(19_200));
        assert_eq!(bps("1mbit"), Ok(1_000_000));
        assert_eq!(bps("1.5Mbit"), Ok(1_500_000));
        assert_eq!(bps(" 10 gbit "), Ok(10_000_000_000));
        assert_eq!(bps("0.0024mbit"), Ok(2400));
    }

    #[test]
    fn bad_rates_say_why() {
        assert_eq!(bps("24oo"), Err(ParseError::Rate));
        assert_eq!(bps("2400"), Err(ParseError::Rate));
        assert_eq!(bps("bit"), Err(ParseError::Rate));
        assert_eq!(bps("-1bit"), Err(ParseError::Rate));
        assert_eq!(bps("1.2.3kbit"), Err(ParseError::Rate));
        assert_eq!(bps("2400bps"), Err(ParseError::Rate));
        assert_eq!(bps("0bit"), Err(ParseError::ZeroRate));
        assert_eq!(bps("1.5bit"), Err(ParseError::FractionalRate));
        assert_eq!(bps("99999999999999999999999gbit"), Err(ParseError::TooLarge));
        let long = format!("{}bit", "9".repeat(200));
        assert_eq!(bps(&long), Err(ParseError::TooLarge));
    }

    #[test]
    fn rates_print_in_the_largest_whole_unit() {
        let show = |s: &str| s.parse::<Rate>().map(|r| r.to_string());
        assert_eq!(show("2400bit"), Ok("2.4 kbit/s".into()));
        assert_eq!(show("300bit"), Ok("300 bit/s".into()));
        assert_eq!(show("19.2kbit"), Ok("19.2 kbit/s".into()));
        assert_eq!(show("1mbit"), Ok("1 Mbit/s".into()));
        assert_eq!(show("1001bit"), Ok("1.001 kbit/s".into()));
    }

    #[test]
    fn serialisation_is_eight_bits_per_byte_at_the_rate() {
        let rate = Rate::from_bps(19_200).expect("non-zero");
        assert_eq!(rate.serialisation(2400), Duration::from_secs(1));
        assert_eq!(rate.serialisation(0), Duration::ZERO);
        let slow = Rate::from_bps(1).expect("non-zero");
        assert_eq!(slow.serialisation(u64::MAX), Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1s 500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0ms"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("500"), Err(ParseError::Duration));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("0.0001us"), Err(ParseError::Duration));
        assert_eq!(parse_duration("ms"), Err(ParseError::Duration));
        assert_eq!(parse_duration("-5ms"), Err(ParseError::Duration));
        assert_eq!(parse_duration("99999999999999999999s"), Err(ParseError::Duration));
    }

    #[test]
    fn percentages_parse_exactly() {
        let pm = |s: &str| s.parse::<Loss>().map(Loss::per_million);
        assert_eq!(pm("0.5%"), Ok(5_000));
        assert_eq!(pm("0%"), Ok(0));
        assert_eq!(pm("1%"), Ok(10_000));
        assert_eq!(pm("99.9999%"), Ok(999_999));
        assert_eq!(pm("100%"), Err(ParseError::TotalLoss));
        assert_eq!(pm("250%"), Err(ParseError::TotalLoss));
        assert_eq!(pm("0.5"), Err(ParseError::Percent));
        assert_eq!(pm("-1%"), Err(ParseError::Percent));
        assert_eq!(pm("abc%"), Err(ParseError::Percent));
        assert_eq!(pm("0.00001%"), Err(ParseError::FractionalPercent));
        assert_eq!("0.5%".parse::<Loss>().map(|l| l.to_string()), Ok("0.5%".into()));
        assert_eq!("12%".parse::<Loss>().map(|l| l.to_string()), Ok("12%".into()));
    }

    #[test]
    fn counts_and_addresses() {
        assert_eq!(parse_count::<u32>("40", 0), Ok(40));
        assert_eq!(parse_count::<u32>("0", 1), Err(ParseError::TooSmall(1)));
        assert_eq!(parse_count::<u32>("4x", 0), Err(ParseError::Integer));
        assert_eq!(parse_count::<u32>("1.5", 0), Err(ParseError::Integer));
        assert_eq!(parse_count::<u32>("5000000000", 0), Err(ParseError::TooLarge));
        assert_eq!(parse_address("127.0.0.1:8080"), Ok("127.0.0.1:8080".into()));
        assert_eq!(parse_address("localhost:80"), Ok("localhost:80".into()));
        assert_eq!(parse_address("[::1]:80"), Ok("[::1]:80".into()));
        assert_eq!(parse_address("localhost"), Err(ParseError::Address));
        assert_eq!(parse_address(":80"), Err(ParseError::Address));
        assert_eq!(parse_address("host:99999"), Err(ParseError::Address));
    }

    #[test]
    fn link_lists_parse_every_key() {
        let spec: LinkSpec = "rate=2400bit, delay=500ms,jitter=20ms,loss=0.5%,overhead=48,mss=536,seed=7,"
            .parse()
            .expect("valid list");
        assert_eq!(
            spec,
            LinkSpec {
                rate: Rate::from_bps(2400),
                delay: Duration::from_millis(500),
                jitter: Duration::from_millis(20),
                loss: Loss::from_per_million(5_000).expect("below 100%"),
                overhead: 48,
                mss: NonZeroU32::new(536).expect("non-zero"),
                seed: 7,
            }
        );
        assert_eq!("".parse::<LinkSpec>(), Ok(LinkSpec::default()));
    }

    #[test]
    fn link_lists_name_the_bad_key() {
        let err = "rate=24oo,delay=1s".parse::<LinkSpec>().expect_err("bad rate");
        assert_eq!(
            err.to_string(),
            format!("invalid value '24oo' for 'rate': {}", ParseError::Rate)
        );
        let err = "delay=1s,colour=red".parse::<LinkSpec>().expect_err("bad key");
        assert!(err.to_string().starts_with("unknown link setting 'colour'"), "{err}");
        let err = "delay".parse::<LinkSpec>().expect_err("no value");
        assert_eq!(err, SpecError::MissingValue("delay".into()));
        let err = "mss=0".parse::<LinkSpec>().expect_err("zero mss");
        assert_eq!(err.to_string(), "invalid value '0' for 'mss': must be at least 1");
    }

    #[test]
    fn specs_describe_themselves() {
        assert_eq!(
            LinkSpec::default().to_string(),
            "an unshaped link (bytes forwarded as they come)"
        );
        let spec: LinkSpec = "rate=2400bit,delay=500ms,jitter=20ms,loss=0.5%".parse().expect("valid");
        assert_eq!(
            spec.to_string(),
            "2.4 kbit/s, 500ms one-way delay ± 20ms jitter, 0.5% loss (as retransmission \
             stalls), 40 B overhead per packet of up to 1460 B, seed 0"
        );
    }
}

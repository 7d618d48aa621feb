//! Where another domain's servers are (RFC 6120 §3.2.1): its static route
//! if it has one, else its `_xmpps-server._tcp` (direct TLS, XEP-0368) and
//! `_xmpp-server._tcp` SRV records, in order of priority and, within one,
//! of weight (RFC 2782), else the domain itself on port 5269; each name
//! then by its A and AAAA records. DNS is
//! hickory-resolver's, asking the system's name servers (/etc/resolv.conf,
//! and /etc/hosts for addresses) or the one `--xmpp-s2s-dns` names.

use std::net::SocketAddr;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfigGroup, ResolverConfig};
use hickory_resolver::name_server::TokioConnectionProvider;

/// The port of servers' streams when neither a route nor DNS says another.
pub(super) const PORT: u16 = 5269;

/// One server of another domain to try.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    pub host: String,
    pub port: u16,
    /// TLS from the first byte (XEP-0368), not STARTTLS.
    pub direct: bool,
}

/// How this server finds other domains' servers.
pub(crate) struct Resolver {
    dns: Option<TokioResolver>,
}

impl Resolver {
    /// Asks `server` if given, else the system's name servers; with
    /// neither (no readable /etc/resolv.conf), only routes and the C
    /// library's resolver are left, and that is logged.
    pub fn new(server: Option<SocketAddr>) -> Resolver {
        let builder = match server {
            Some(at) => {
                let servers = NameServerConfigGroup::from_ips_clear(&[at.ip()], at.port(), true);
                Ok(TokioResolver::builder_with_config(ResolverConfig::from_parts(None, vec![], servers), TokioConnectionProvider::default()))
            }
            None => TokioResolver::builder_tokio(),
        };
        match builder {
            Ok(builder) => Resolver { dns: Some(builder.build()) },
            Err(e) => {
                tracing::warn!("xmpp: no DNS for federation ({e}); other domains are found by their routes and the system's resolver");
                Resolver { dns: None }
            }
        }
    }

    /// The servers to try for `domain`, in order: its `_xmpps-server`
    /// (direct TLS, XEP-0368) and `_xmpp-server` SRV records by priority,
    /// direct TLS first at equal priority, then by weight; with neither,
    /// the domain itself on 5269.
    pub async fn targets(&self, domain: &str) -> Vec<Target> {
        let Some(dns) = &self.dns else { return vec![Target { host: domain.to_owned(), port: PORT, direct: false }] };
        let mut found = Vec::new();
        for (service, direct) in [("_xmpps-server", true), ("_xmpp-server", false)] {
            let Ok(records) = dns.srv_lookup(format!("{service}._tcp.{domain}.")).await else { continue };
            // A target of "." says the domain offers no such service (RFC 2782).
            found.extend(
                records
                    .iter()
                    .filter(|r| r.target().to_utf8() != ".")
                    .map(|r| (r.priority(), !direct, std::cmp::Reverse(r.weight()), Target { host: r.target().to_utf8().trim_end_matches('.').to_owned(), port: r.port(), direct })),
            );
        }
        if found.is_empty() {
            return vec![Target { host: domain.to_owned(), port: PORT, direct: false }];
        }
        found.sort_by_key(|(priority, plain, weight, _)| (*priority, *plain, *weight));
        found.into_iter().map(|(_, _, _, target)| target).collect()
    }

    /// The addresses of `host`, on `port`.
    pub async fn addresses(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match &self.dns {
            Some(dns) => {
                let found = dns.lookup_ip(format!("{host}.")).await.map_err(std::io::Error::other)?;
                Ok(found.iter().map(|ip| SocketAddr::new(ip, port)).collect())
            }
            None => Ok(tokio::net::lookup_host((host, port)).await?.collect()),
        }
    }
}

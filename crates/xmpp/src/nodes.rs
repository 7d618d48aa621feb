//! This domain's users on the other nodes, when several nodes share rooms
//! and a store: a stanza for a user goes to the resources this node holds
//! and, handed through the cluster (`OtherNodes`), to those the other nodes
//! hold, each of which routes it with its own router as it would a stanza
//! of its own (`Xmpp::from_other_node`). Each node picks among its own
//! resources: a `chat` message to a bare JID reaches the most available
//! resources of each node that holds some (RFC 6121 §8.5.2.1.1 leaves
//! the choice to the server).
//!
//! What crosses: messages (asked, when this node holds no resource for
//! them: the answer says whether to keep one offline), iqs to a resource
//! elsewhere (asked: none there is `service-unavailable`), presence
//! broadcasts, directed presence and subscription stanzas, probes for a
//! contact's current presence (answered by presence from the node that
//! holds it), roster pushes and room invitations.

use std::sync::Arc;
use std::time::Duration;

use hub::BoxFuture;
use wire::xmpp::Element;

use crate::router::MessageRoute;
use crate::{Jid, Xmpp, ns};

/// How long a stanza that waits to know whether another node took it
/// waits for their answers.
pub const PATIENCE: Duration = Duration::from_secs(1);

/// The other nodes of this node's cluster, as XMPP reaches them.
pub trait OtherNodes: Send + Sync + std::fmt::Debug {
    /// Hands `stanza` (one stanza's XML, with its namespace) for `to`
    /// (JIDs of this domain, bare or full) to every other node, in the
    /// order of the calls. With `patience`, how many resources it reached
    /// there, of the nodes that answered within it; without, 0 at once.
    fn carry(&self, to: Vec<Arc<str>>, stanza: Arc<str>, patience: Option<Duration>) -> BoxFuture<'static, usize>;
}

impl Xmpp {
    /// Whether other nodes may hold this domain's users.
    pub(crate) fn has_other_nodes(&self) -> bool {
        self.nodes.is_some()
    }

    /// Hands `stanza` for `to` to the other nodes, without waiting for
    /// them to take it.
    pub(crate) async fn tell_others(&self, to: Vec<Arc<str>>, stanza: &Element) {
        if let Some(nodes) = &self.nodes
            && !to.is_empty()
        {
            nodes.carry(to, Arc::from(stanza.to_xml_standalone()), None).await;
        }
    }

    /// Hands `stanza` for `to` to the other nodes: how many resources it
    /// reached there.
    pub(crate) async fn ask_others(&self, to: &Jid, stanza: &Element) -> usize {
        match &self.nodes {
            Some(nodes) => nodes.carry(vec![Arc::from(to.to_string())], Arc::from(stanza.to_xml_standalone()), Some(PATIENCE)).await,
            None => 0,
        }
    }

    /// Takes another node's `stanza` (XML) for `to` as this node's router
    /// would take one of its own: how many resources here it reached. A
    /// message goes as RFC 6121 §8.5 says, and is never kept offline here
    /// (the sending node keeps it when no node took it); an iq to a bare
    /// JID (a roster push) goes to each resource as its own; a probe is
    /// answered, through the other nodes, with the current presence of
    /// each available resource here.
    pub fn from_other_node(self: &Arc<Self>, to: &[Arc<str>], stanza: &str) -> usize {
        let Some(stanza) = wire::xmpp::standalone(stanza) else {
            tracing::debug!("xmpp: another node's stanza does not parse");
            return 0;
        };
        let mut reached = 0;
        for to in to.iter().filter_map(|to| Jid::parse(to)).filter(|to| to.domain == self.domain && to.local.is_some()) {
            reached += match (stanza.name.as_str(), stanza.get("type")) {
                ("message", kind) => match self.router.route_message(&to, kind.unwrap_or("normal")) {
                    MessageRoute::To(targets) => push(&stanza, targets),
                    _ => 0,
                },
                ("presence", Some("probe")) => self.answer_probe(&stanza, &to),
                ("iq", _) if to.resource.is_none() => {
                    let mut reached = 0;
                    for (jid, (outbox, framing)) in self.router.resources(&to.to_string()) {
                        let mut own = stanza.clone();
                        own.attrs.retain(|(n, _)| n != "to");
                        own.attrs.push(("to".into(), jid));
                        reached += usize::from(outbox.push(framing.payload(&own)).is_ok());
                    }
                    reached
                }
                _ => push(&stanza, self.router.route(&to)),
            };
        }
        reached
    }

    /// Answers another node's probe (its `from`, a full JID) for the user
    /// `to` with the current presence of each of `to`'s available
    /// resources here: how many there are.
    fn answer_probe(self: &Arc<Self>, probe: &Element, to: &Jid) -> usize {
        let Some(prober) = probe.get("from").map(Arc::<str>::from) else { return 0 };
        let available = self.router.available(&to.bare().to_string());
        let count = available.len();
        if count > 0 {
            let xmpp = self.clone();
            tokio::spawn(async move {
                for r in available {
                    let mut current = r.presence;
                    current.attrs.retain(|(n, _)| n != "to" && n != "from");
                    current.attrs.push(("from".into(), r.jid));
                    current.attrs.push(("to".into(), prober.to_string()));
                    xmpp.tell_others(vec![prober.clone()], &current).await;
                }
            });
        }
        count
    }
}

/// `stanza` as it is, to each target: how many took it.
fn push(stanza: &Element, targets: Vec<crate::Target>) -> usize {
    targets.into_iter().filter(|(outbox, framing)| outbox.push(framing.payload(stanza)).is_ok()).count()
}

/// A probe from `from` (a full JID) for the presence of the users `to`.
pub(crate) fn probe(from: &str) -> Element {
    Element::new("presence", ns::CLIENT).attr("type", "probe").attr("from", from)
}

//! Full JIDs this node's sessions are binding while the other nodes are
//! asked whether they hold them (RFC 6120 §7.7.2.2: a resource one
//! session has is refused to another, on whichever node).
//!
//! A node binding a full JID claims it under a random token and asks each
//! other node; a node answers with the resources it holds under the JID,
//! and counts its own claim of the JID as one when that claim goes first
//! (the lower token), or else marks its claim as given way. A claim binds
//! only when every answer was none and it has not given way; the check and
//! the router's bind are one step as to the answers. So of two nodes
//! binding one JID, whatever the timing, at most one binds it (the one
//! that asks second meets either the other's claim or its resource), as
//! long as each answers within the wait; and one does, unless the claim
//! the other gave way to is abandoned.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// The claims of one node, by full JID; at most one a binding session.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    held: Mutex<HashMap<String, Claimed>>,
}

#[derive(Debug)]
struct Claimed {
    token: u64,
    gave_way: bool,
}

/// A session's claim of a full JID ([`Claims::claim`]): held in this
/// node's answers until it binds ([`Claim::bind`]) or is dropped.
pub(crate) struct Claim {
    held: Option<(Arc<Claims>, String)>,
}

impl Claims {
    /// Claims `full` under a new token, for the question to the other
    /// nodes; `None` when a session here claims it already.
    pub(crate) fn claim(self: &Arc<Self>, full: &str) -> Option<(Claim, u64)> {
        let mut held = self.held.lock();
        if held.contains_key(full) {
            return None;
        }
        let token = rand::random::<u64>();
        held.insert(full.to_owned(), Claimed { token, gave_way: false });
        Some((Claim { held: Some((self.clone(), full.to_owned())) }, token))
    }

    /// This node's answer to another's question about `full` (asked with
    /// its claim's `token`): what `routed` counts of the resources here,
    /// and one for a claim here that goes first. A claim that does not
    /// gives way.
    pub(crate) fn answer(&self, full: &str, token: Option<u64>, routed: impl FnOnce() -> usize) -> usize {
        let mut held = self.held.lock();
        let first = match (held.get_mut(full), token) {
            (None, _) => false,
            (Some(mine), Some(theirs)) if mine.token > theirs => {
                mine.gave_way = true;
                false
            }
            (Some(_), _) => true,
        };
        routed() + usize::from(first)
    }
}

impl Claim {
    /// No claim: where no other node is asked, a bind needs none.
    pub(crate) fn unneeded() -> Claim {
        Claim { held: None }
    }

    /// Ends the claim, binding its JID with `bind` unless it gave way;
    /// whether it is bound.
    pub(crate) fn bind(mut self, bind: impl FnOnce() -> bool) -> bool {
        let Some((claims, full)) = self.held.take() else { return bind() };
        let mut held = claims.held.lock();
        let gave_way = held.remove(&full).is_none_or(|claimed| claimed.gave_way);
        !gave_way && bind()
    }
}

impl Drop for Claim {
    /// Ends the claim without binding (the session went, or an answer
    /// said the JID is held).
    fn drop(&mut self) {
        if let Some((claims, full)) = self.held.take() {
            claims.held.lock().remove(&full);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One node as the claims see it: its claims and whether its router
    /// holds the JID.
    #[derive(Default)]
    struct Node {
        claims: Arc<Claims>,
        bound: Mutex<bool>,
    }

    /// A step of one node's bind: claim, ask the other (its answer made
    /// when the question arrives), settle.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Step {
        Claim,
        Asked,
        Settle,
    }

    /// Two nodes binding one JID, their steps interleaved in every order:
    /// exactly one binds it.
    #[test]
    fn of_two_nodes_binding_one_jid_in_any_order_exactly_one_binds_it() {
        let orders = interleavings(3, 3);
        assert_eq!(orders.len(), 20);
        for order in orders {
            for _ in 0..20 {
                let nodes = [Node::default(), Node::default()];
                let (mut next, mut claim, mut token, mut free) = ([0usize; 2], [None, None], [None; 2], [true; 2]);
                for &node in &order {
                    let (me, other) = (&nodes[node], &nodes[1 - node]);
                    match [Step::Claim, Step::Asked, Step::Settle][next[node]] {
                        Step::Claim => (claim[node], token[node]) = me.claims.claim("a@l/r").unzip(),
                        Step::Asked => free[node] = other.claims.answer("a@l/r", token[node], || usize::from(*other.bound.lock())) == 0,
                        Step::Settle if free[node] => _ = claim[node].take().map(|c| c.bind(|| !std::mem::replace(&mut *me.bound.lock(), true))),
                        Step::Settle => drop(claim[node].take()),
                    }
                    next[node] += 1;
                }
                let bound = nodes.iter().filter(|n| *n.bound.lock()).count();
                assert_eq!(bound, 1, "{order:?}");
                assert!(nodes.iter().all(|n| n.claims.held.lock().is_empty()), "every claim ended");
            }
        }
    }

    #[test]
    fn a_second_claim_of_one_jid_on_one_node_is_refused_until_the_first_ends() {
        let claims = Arc::new(Claims::default());
        let (first, _) = claims.claim("a@l/r").unwrap();
        assert!(claims.claim("a@l/r").is_none());
        assert!(claims.claim("a@l/s").is_some());
        assert!(first.bind(|| true));
        assert!(claims.claim("a@l/r").is_some());
    }

    /// Every order of `a` steps of node 0 and `b` of node 1.
    fn interleavings(a: usize, b: usize) -> Vec<Vec<usize>> {
        if a == 0 || b == 0 {
            return vec![[vec![0; a], vec![1; b]].concat()];
        }
        let first = interleavings(a - 1, b).into_iter().map(|rest| [vec![0], rest].concat());
        let second = interleavings(a, b - 1).into_iter().map(|rest| [vec![1], rest].concat());
        first.chain(second).collect()
    }
}

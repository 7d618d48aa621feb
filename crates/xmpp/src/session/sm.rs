//! Stream management (XEP-0198): counting stanzas each way,
//! acknowledgements, and resuming a session on a new connection with what
//! its client had not acknowledged.

use hub::Payload;
use wire::xmpp::Element;

use super::sasl2::Resumed;
use super::{Phase, Session, StreamEnd};
use crate::{Jid, ns};

/// XEP-0198's counts: stanzas handled from the client, and stanzas sent to
/// it and how many of those it acknowledged; for a resumable session, its
/// id and the sent stanzas not yet acknowledged.
#[derive(Debug, Default)]
pub(super) struct StreamManagement {
    pub(super) handled: u32,
    pub(super) sent: u32,
    pub(super) acked: u32,
    pub(super) id: Option<String>,
    pub(super) unacked: std::collections::VecDeque<String>,
    pub(super) unacked_bytes: usize,
    /// Whether `<enabled/>` has been written: the stanzas written after it
    /// are the ones the client counts.
    pub(super) counting: bool,
}

impl StreamManagement {
    /// The client has handled `h` of the stanzas sent: forget those.
    pub(super) fn ack(&mut self, h: u32) -> Result<(), StreamEnd> {
        // Counts wrap at 2^32; h may not pass what was sent.
        if h.wrapping_sub(self.acked) > self.sent.wrapping_sub(self.acked) {
            return Err(StreamEnd("undefined-condition", format!("h={h} acknowledges more than the {} stanzas sent", self.sent)));
        }
        let done = h.wrapping_sub(self.acked) as usize;
        for text in self.unacked.drain(..done.min(self.unacked.len())) {
            self.unacked_bytes -= text.len();
        }
        self.acked = h;
        Ok(())
    }
}

impl Session {
    /// A stream management nonza (XEP-0198): `<enable/>`, `<r/>`, `<a/>`.
    pub(super) async fn on_sm(&mut self, nonza: &Element) -> Result<(), StreamEnd> {
        match (nonza.name.as_str(), &mut self.sm) {
            ("enable", None) => {
                let enabled = self.enable_sm(matches!(nonza.get("resume"), Some("true" | "1")));
                self.send_nonza(&enabled);
            }
            ("enable", Some(_)) => {
                self.send_nonza(&Element::new("failed", ns::SM).child(Element::new("unexpected-request", ns::STANZA_ERRORS)));
            }
            ("r", Some(_)) => {
                // What is acknowledged is archived.
                self.archived().await;
                let h = self.sm.as_ref().map(|sm| sm.handled.to_string()).unwrap_or_default();
                self.send_nonza(&Element::new("a", ns::SM).attr("h", &h));
            }
            ("a", Some(sm)) => {
                let h: u32 = nonza.get("h").and_then(|h| h.parse().ok()).ok_or_else(|| StreamEnd("bad-format", "<a/> needs a number h".into()))?;
                sm.ack(h)?;
            }
            (_, None) => {
                self.send_nonza(&Element::new("failed", ns::SM).child(Element::new("unexpected-request", ns::STANZA_ERRORS)));
            }
            _ => {}
        }
        Ok(())
    }

    /// Turns stream management on, resumable if `resume` asks and the
    /// session can be: the `<enabled/>` that says so.
    pub(super) fn enable_sm(&mut self, resume: bool) -> Element {
        let mut enabled = Element::new("enabled", ns::SM);
        let mut sm = StreamManagement::default();
        // An anonymous user can never log in as itself again, so its
        // session could never be resumed: it is not kept for that.
        if resume
            && self.may_resume
            && !self.anonymous
            && let Some(bare) = self.jid.as_deref().map(Jid::bare)
        {
            let id = format!("{:032x}", rand::random::<u128>());
            let (takeover, _) = self.takeover.get_or_insert_with(|| tokio::sync::mpsc::channel(1));
            self.xmpp.live(&id, &bare, self.framing, takeover.clone());
            let max = self.xmpp.resume_timeout.as_secs().to_string();
            enabled = enabled.attr("id", &id).attr("resume", "true").attr("max", &max);
            sm.id = Some(id);
        }
        self.sm = Some(Box::new(sm));
        enabled
    }

    /// The session `previd` names, if it is this user's and may be
    /// resumed here: one waiting to be, or one whose old connection is
    /// still open, which gives it up.
    pub(super) async fn resumable_session(&self, previd: &str) -> Option<Session> {
        if !self.may_resume {
            return None;
        }
        let bare = self.jid.as_deref().map(Jid::bare)?;
        match self.xmpp.take_parked(previd, &bare, self.framing) {
            Some(parked) => Some(parked),
            None => self.xmpp.take_live(previd, &bare, self.framing).await,
        }
    }

    /// The id a broken connection can resume this session by, if any.
    pub fn resumable(&self) -> Option<String> {
        if self.phase != Phase::Ready {
            return None;
        }
        self.sm.as_ref().and_then(|sm| sm.id.clone())
    }

    /// Ready when another connection resumes this session while its
    /// connection is still open: the connection ends and sends the session
    /// on with the sender it is given.
    pub fn poll_taken_over(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<tokio::sync::oneshot::Sender<Session>> {
        match &mut self.takeover {
            Some((_, asks)) => match asks.poll_recv(cx) {
                std::task::Poll::Ready(Some(reply)) => std::task::Poll::Ready(reply),
                // The sender is kept beside it, so this never ends.
                std::task::Poll::Ready(None) | std::task::Poll::Pending => std::task::Poll::Pending,
            },
            // Not resumable (yet): nobody can ask.
            None => std::task::Poll::Pending,
        }
    }

    /// Takes up this (parked) session on a new connection whose client has
    /// handled `h` of its stanzas: `<resumed/>` (inside the SASL2 success
    /// `sasl2` when the login asked there, XEP-0388), then every stanza
    /// sent after those, again (XEP-0198 §5).
    pub(super) fn resume(&mut self, h: u32, sasl2: Option<Resumed>) -> Result<Vec<String>, StreamEnd> {
        let Some(sm) = &mut self.sm else { return Err(StreamEnd("undefined-condition", "no stream management".into())) };
        sm.ack(h)?;
        let previd = sm.id.clone().unwrap_or_default();
        let resumed = Element::new("resumed", ns::SM).attr("previd", &previd).attr("h", &sm.handled.to_string());
        let unacked: Vec<String> = sm.unacked.iter().cloned().collect();
        let first = match sasl2 {
            None => resumed,
            Some(Resumed { success, then }) => {
                let mut success = success.child(Element::new("authorization-identifier", ns::SASL2).text(&self.full_jid())).child(resumed);
                for element in then {
                    success = success.child(element);
                }
                success
            }
        };
        let mut out = vec![self.framing.text(&first)];
        out.extend(unacked);
        Ok(out)
    }

    /// Goes on as `parked` (this fresh session held nothing yet), whose
    /// client has handled `h` of its stanzas: what `resume` says, to send
    /// first. A parked session that cannot resume ends as a timed-out one.
    pub async fn take_up(&mut self, mut parked: Session, h: u32, sasl2: Option<Box<Resumed>>) -> Result<Vec<String>, StreamEnd> {
        // `<resumed h=…/>` acknowledges the client's stanzas as `<a/>` does:
        // only once what they queued for the archive is kept.
        parked.archived().await;
        let resumed = match parked.resume(h, sasl2.map(|r| *r)) {
            Ok(texts) => texts,
            Err(end) => {
                parked.leave_all().await;
                return Err(end);
            }
        };
        parked.encrypted = self.encrypted;
        std::mem::replace(self, parked).leave_all().await;
        self.xmpp.context.metrics.xmpp_resumed();
        Ok(resumed)
    }

    /// Sends a nonza: as a binary payload, which the writer sends like any
    /// text but does not count as a stanza.
    pub(super) fn send_nonza(&self, element: &Element) {
        let _ = self.outbox.push(Payload::binary(self.framing.text(element).into_bytes()));
    }
}

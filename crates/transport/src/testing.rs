//! A protocol for the transports' own tests: each client sends back what
//! it is sent.

use std::net::IpAddr;
use std::sync::Arc;

use base::token::Identity;
use bytes::Bytes;
use hub::{Close, Outbox, Payload};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;

use crate::{Client, Protocol};

#[derive(Debug)]
pub struct Echo;

#[derive(Debug)]
pub struct EchoClient {
    outbox: Arc<Outbox>,
}

impl Client for EchoClient {
    fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    fn expires(&self) -> Option<Instant> {
        None
    }

    fn on_message(&mut self, text: Utf8Bytes) {
        let _ = self.outbox.push(Payload::new(text));
    }

    fn on_binary(&mut self, data: Bytes) -> Result<(), Close> {
        let _ = self.outbox.push(Payload::binary(data));
        Ok(())
    }
}

impl Protocol for Echo {
    type Client = EchoClient;

    fn open(self: &Arc<Self>, outbox: Arc<Outbox>, _identity: Option<Arc<Identity>>, _address: IpAddr) -> EchoClient {
        EchoClient { outbox }
    }
}

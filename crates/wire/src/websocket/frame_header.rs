//! WebSocket frame headers (RFC 6455 §5.2): read from the front of a byte
//! stream, for the layers that follow the peer's frames under tungstenite
//! (the server's UTF-8 watch, [`super::deflate`]), and written
//! ([`put_header`]) in front of the server's own data frames, which are built
//! once and shared ([`server_frame`]), and of the fragments `deflate` passes
//! up.

use bytes::{BufMut, Bytes, BytesMut};

/// Opcodes of the data frames the server builds itself.
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;

/// The most bytes a client's control frame takes: a masked header (6 bytes)
/// and 125 of payload (RFC 6455 §5.5).
pub const MAX_CLIENT_CONTROL: usize = 6 + 125;

/// The server's ping: empty, unmasked, built without tungstenite (which
/// keeps no state about pings it did not send).
pub fn ping() -> Bytes {
    const FRAME: [u8; 2] = [0x80 | PING, 0];
    Bytes::from_static(&FRAME)
}

/// A whole, final, unmasked server frame carrying `payload` (RSV1 set for a
/// permessage-deflate message), header and payload in one buffer.
pub fn server_frame(opcode: u8, rsv1: bool, payload: &[u8]) -> Bytes {
    let mut frame = BytesMut::with_capacity(payload.len() + 10);
    put_header(&mut frame, true, rsv1, opcode, None, payload.len());
    frame.put_slice(payload);
    frame.freeze()
}

/// Writes a frame header: FIN, RSV1, `opcode`, the mask bit, the payload's
/// length `len` in its shortest form, and the masking key if there is one.
pub fn put_header(out: &mut impl BufMut, fin: bool, rsv1: bool, opcode: u8, mask: Option<[u8; 4]>, len: usize) {
    out.put_u8(if fin { 0x80 } else { 0 } | if rsv1 { 0x40 } else { 0 } | opcode);
    let masked = if mask.is_some() { 0x80 } else { 0 };
    match len {
        n if n < 126 => out.put_u8(masked | n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.put_u8(masked | 126);
            out.put_u16(n as u16);
        }
        n => {
            out.put_u8(masked | 127);
            out.put_u64(n as u64);
        }
    }
    if let Some(key) = mask {
        out.put_slice(&key);
    }
}

/// One frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub fin: bool,
    /// RSV1.
    pub rsv1: bool,
    /// RSV2 or RSV3, which no extension here uses.
    pub rsv23: bool,
    pub opcode: u8,
    /// The masking key; `None` for an unmasked frame.
    pub mask: Option<[u8; 4]>,
    /// The payload's length.
    pub payload: u64,
    /// The header's own length in bytes (2 to 14).
    pub len: usize,
}

impl FrameHeader {
    /// The header at the front of `bytes`; `None` while it is not all there.
    pub fn parse(bytes: &[u8]) -> Option<FrameHeader> {
        let (&b0, &b1) = (bytes.first()?, bytes.get(1)?);
        let extended = match b1 & 0x7f {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let masked = b1 & 0x80 != 0;
        let len = 2 + extended + if masked { 4 } else { 0 };
        let header = bytes.get(..len)?;
        let payload = match extended {
            2 => u64::from(u16::from_be_bytes([header[2], header[3]])),
            8 => u64::from_be_bytes(header[2..10].try_into().ok()?),
            _ => u64::from(b1 & 0x7f),
        };
        let mask = masked.then(|| [header[len - 4], header[len - 3], header[len - 2], header[len - 1]]);
        Some(FrameHeader {
            fin: b0 & 0x80 != 0,
            rsv1: b0 & 0x40 != 0,
            rsv23: b0 & 0x30 != 0,
            opcode: b0 & 0x0f,
            mask,
            payload,
            len,
        })
    }
}

/// The length of the client's pong at the front of `bytes`, when all of one
/// is there: final, no RSV bit, masked, at most 125 bytes of payload (RFC
/// 6455 §5.5). `None` for anything else, or for less than a whole pong. An
/// idle connection's answers to the server's pings are taken with this
/// before it has a full reader (`transport::lazy_ws`): its payload is not
/// read, as any pong says the client is there.
pub fn client_pong(bytes: &[u8]) -> Option<usize> {
    let header = FrameHeader::parse(bytes)?;
    let whole = header.fin && !header.rsv1 && !header.rsv23 && header.opcode == PONG && header.mask.is_some() && header.payload <= 125;
    let len = header.len + header.payload as usize;
    (whole && bytes.len() >= len).then_some(len)
}

/// A client's whole frame: FIN, RSV1, `opcode`, the payload masked with
/// `key`. The bench sends through tungstenite; this is for tests that write a
/// client's bytes themselves.
pub fn client_frame(fin: bool, rsv1: bool, opcode: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::new();
    put_header(&mut f, fin, rsv1, opcode, Some(key), payload.len());
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_form_and_the_bits_are_read() {
        let key = [1, 2, 3, 4];
        for (n, len) in [(5usize, 6), (300, 8), (70_000, 14)] {
            let frame = client_frame(false, true, 0x2, &vec![0u8; n], key);
            let h = FrameHeader::parse(&frame).expect("whole");
            assert_eq!(h, FrameHeader { fin: false, rsv1: true, rsv23: false, opcode: 0x2, mask: Some(key), payload: n as u64, len });
            assert_eq!(FrameHeader::parse(&frame[..len - 1]), None, "one byte short");
        }
        let unmasked = [0x81 | 0x20, 0x02, b'h', b'i'];
        let h = FrameHeader::parse(&unmasked).expect("whole");
        assert_eq!((h.fin, h.rsv23, h.opcode, h.mask, h.payload, h.len), (true, true, 0x1, None, 2, 2));
        assert_eq!(FrameHeader::parse(&[0x81]), None);
    }

    #[test]
    fn a_whole_masked_pong_is_taken_and_nothing_else() {
        let key = [9, 8, 7, 6];
        assert_eq!(client_pong(&[0x8a, 0x80, 9, 8, 7, 6]), Some(6), "the answer to an empty ping");
        let pong = client_frame(true, false, PONG, b"hello", key);
        let mut then_text = pong.clone();
        then_text.extend(client_frame(true, false, TEXT, b"hi", key));
        assert_eq!(client_pong(&then_text), Some(11), "the pong only");
        assert_eq!(client_pong(&client_frame(true, false, PONG, &[0; 125], key)), Some(MAX_CLIENT_CONTROL));
        for short in 0..pong.len() {
            assert_eq!(client_pong(&pong[..short]), None, "{short} bytes: not all of it");
        }
        let mut unmasked = Vec::new();
        put_header(&mut unmasked, true, false, PONG, None, 0);
        let others = [
            client_frame(true, false, PING, b"", key),
            client_frame(true, false, TEXT, b"hi", key),
            client_frame(false, false, PONG, b"", key),
            client_frame(true, true, PONG, b"", key),
            [0xaa, 0x80, 0, 0, 0, 0].to_vec(),
            client_frame(true, false, PONG, &[0; 126], key),
            unmasked,
        ];
        for frame in others {
            assert_eq!(client_pong(&frame), None, "{frame:02x?}");
        }
    }

    #[test]
    fn a_server_frame_is_byte_for_byte_tungstenites() {
        use tokio_tungstenite::tungstenite::protocol::frame::Frame;
        use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
        for n in [0usize, 1, 125, 126, 127, 65_535, 65_536, 70_000] {
            let payload: Vec<u8> = (0..n).map(|i| i as u8).collect();
            for (opcode, data) in [(TEXT, Data::Text), (BINARY, Data::Binary)] {
                for rsv1 in [false, true] {
                    let mut theirs = Frame::message(payload.clone(), OpCode::Data(data), true);
                    theirs.header_mut().rsv1 = rsv1;
                    let mut expected = Vec::new();
                    theirs.format(&mut expected).unwrap();
                    assert_eq!(server_frame(opcode, rsv1, &payload).as_ref(), expected.as_slice(), "{n} bytes, rsv1 {rsv1}");
                }
            }
        }
        assert_eq!(server_frame(TEXT, false, b"hi").as_ref(), [0x81, 0x02, b'h', b'i']);
        assert_eq!(server_frame(BINARY, true, &[0; 126])[..4], [0xc2, 126, 0x00, 126]);
        let h = FrameHeader::parse(&server_frame(BINARY, false, &[0; 70_000])).unwrap();
        assert_eq!((h.fin, h.opcode, h.mask, h.payload, h.len), (true, BINARY, None, 70_000, 10));
        let mut theirs = Vec::new();
        Frame::ping(Vec::new()).format(&mut theirs).unwrap();
        assert_eq!(ping().as_ref(), theirs.as_slice(), "an empty ping");
        assert_eq!(ping().as_ref(), [0x89, 0x00]);
    }
}

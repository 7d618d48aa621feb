//! TCP Fast Open (RFC 7413) on Linux: a client that holds a cookie from a
//! server sends its first bytes in its SYN, and the server reads them
//! before its SYN-ACK is back, so a connection's first request costs no
//! round trip for TCP's handshake.
//!
//! Three socket options do it: `TCP_FASTOPEN` on a listener (the queue of
//! such connections not yet accepted), `TCP_FASTOPEN_CONNECT` on a client
//! (its `connect` returns at once, and its first write goes with the SYN),
//! and `TCP_INFO`, which tells either end whether the SYN carried data
//! that was taken. They are declared here through nix's socket-option
//! macros: nix does the system calls.
//!
//! The host must allow it: `net.ipv4.tcp_fastopen` has bit 1 for clients
//! (the kernel's default) and bit 2 for servers ([`host_allows`]).

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;

use nix::sys::socket::{getsockopt, setsockopt, sockopt::TcpFastOpenConnect};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Where the host says which ends may use Fast Open.
pub const SYSCTL: &str = "/proc/sys/net/ipv4/tcp_fastopen";

/// Bits of `net.ipv4.tcp_fastopen`: clients may send data in a SYN.
const CLIENT: u32 = 1;
/// Bits of `net.ipv4.tcp_fastopen`: listeners that ask may take it.
const SERVER: u32 = 2;

/// `tcpi_options`: the SYN carried data that was taken (on the client,
/// acknowledged; on the server, queued for the application).
const TCPI_OPT_SYN_DATA: u8 = 32;
/// `tcpi_state`: the SYN is sent, its SYN-ACK not yet back.
const TCP_SYN_SENT: u8 = 2;

/// The socket options nix does not declare itself.
mod options {
    use nix::{getsockopt_impl, setsockopt_impl, sockopt_impl};

    /// The start of the kernel's `struct tcp_info`, as far as the fields read
    /// here: every kernel since 4.6 has at least these, and answers with as
    /// much as it is asked for.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct TcpInfoStart {
        pub state: u8,
        pub ca_state: u8,
        pub retransmits: u8,
        pub probes: u8,
        pub backoff: u8,
        pub options: u8,
        pub wscale: u8,
        pub flags: u8,
        pub times: [u32; 24],
        pub pacing_rate: u64,
        pub max_pacing_rate: u64,
        pub bytes_acked: u64,
        pub bytes_received: u64,
        pub segs_out: u32,
        pub segs_in: u32,
        pub notsent_bytes: u32,
        pub min_rtt: u32,
        pub data_segs_in: u32,
        pub data_segs_out: u32,
    }

    sockopt_impl!(
        /// `TCP_FASTOPEN`: on a listener, how many connections opened with data
        /// in their SYN may wait to be accepted.
        TcpFastOpen,
        SetOnly,
        libc::IPPROTO_TCP,
        libc::TCP_FASTOPEN,
        libc::c_int
    );

    sockopt_impl!(
        /// `TCP_INFO`, read as far as [`TcpInfoStart`].
        TcpInfo,
        GetOnly,
        libc::IPPROTO_TCP,
        libc::TCP_INFO,
        TcpInfoStart
    );
}

use options::{TcpFastOpen, TcpInfo};

/// Whether the host lets clients send, and listeners take, data in a SYN
/// (`net.ipv4.tcp_fastopen` with bits 1 and 2, e.g. 3); why not if not.
pub fn host_allows() -> Result<(), String> {
    host_has(CLIENT | SERVER)
}

fn host_has(wanted: u32) -> Result<(), String> {
    let value = std::fs::read_to_string(SYSCTL).map_err(|e| format!("{SYSCTL}: {e}"))?;
    let bits: u32 = value.trim().parse().map_err(|_| format!("{SYSCTL} says {value:?}"))?;
    if bits & wanted == wanted {
        Ok(())
    } else {
        Err(format!("net.ipv4.tcp_fastopen is {bits}, without bit {wanted}: `sysctl -w net.ipv4.tcp_fastopen={}`", bits | wanted))
    }
}

/// Lets `listener` take data in a SYN from clients with its cookie, with
/// at most `queue` such connections waiting to be accepted; an error that
/// says why when the host (bit 2 of `net.ipv4.tcp_fastopen`) or the kernel
/// does not let it.
pub fn listen<F: AsFd>(listener: &F, queue: u16) -> io::Result<()> {
    host_has(SERVER).map_err(|why| io::Error::new(io::ErrorKind::Unsupported, why))?;
    setsockopt(listener, TcpFastOpen, &libc::c_int::from(queue)).map_err(io::Error::from)
}

/// Binds a listener at `address` that takes data in a SYN ([`listen`]).
pub async fn bind(address: SocketAddr, queue: u16) -> io::Result<TcpListener> {
    let listener = TcpListener::bind(address).await?;
    listen(&listener, queue)?;
    Ok(listener)
}

/// Connects to `address` with Fast Open: with a cookie from it the call
/// returns at once and the SYN leaves with the first write, which should
/// then hold the whole first flight; without one the handshake asks for a
/// cookie for next time, and the first write follows it. A kernel that
/// refuses the option gets a plain connect.
pub async fn connect(address: SocketAddr) -> io::Result<TcpStream> {
    let socket = if address.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    let _ = setsockopt(&socket, TcpFastOpenConnect, &true);
    socket.connect(address).await
}

/// Writes a connection's first bytes, made with [`connect`]: with a cookie
/// they go in the SYN. A cookie found wanting between the connect and the
/// write (the kernel then sends a plain SYN and says the connect is in
/// progress) has them written once the handshake is done.
pub async fn write_first(stream: &mut TcpStream, bytes: &[u8]) -> io::Result<()> {
    use tokio::io::AsyncWriteExt;
    match stream.write_all(bytes).await {
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
            stream.writable().await?;
            stream.write_all(bytes).await
        }
        done => done,
    }
}

/// On an accepted connection: how many bytes its SYN carried, if it
/// carried any and they are all the data that has arrived so far (one
/// data segment). `None` for a connection opened without data, and for
/// one whose SYN's share can no longer be told from what followed it.
pub fn syn_data<F: AsFd>(accepted: &F) -> io::Result<Option<u64>> {
    let info = getsockopt(accepted, TcpInfo).map_err(io::Error::from)?;
    let carried = info.options & TCPI_OPT_SYN_DATA != 0 && info.data_segs_in == 1;
    Ok(carried.then_some(info.bytes_received))
}

/// On a connection made with [`connect`]: whether the server took the
/// data its SYN carried; `None` while its handshake is under way.
pub fn syn_data_taken<F: AsFd>(connected: &F) -> io::Result<Option<bool>> {
    let info = getsockopt(connected, TcpInfo).map_err(io::Error::from)?;
    if info.state == TCP_SYN_SENT {
        return Ok(None);
    }
    Ok(Some(info.options & TCPI_OPT_SYN_DATA != 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Opens a connection to `listener` with Fast Open and writes `first`;
    /// the accepted end and the client's.
    async fn open(listener: &TcpListener, first: &[u8]) -> (TcpStream, TcpStream) {
        let mut client = connect(listener.local_addr().unwrap()).await.unwrap();
        client.write_all(first).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        // The handshake is done once the client can write again.
        client.writable().await.unwrap();
        (accepted, client)
    }

    #[tokio::test]
    async fn a_client_with_a_cookie_sends_its_first_write_in_its_syn() {
        host_allows().expect("the host must allow TCP Fast Open");
        let listener = bind("127.0.0.91:0".parse().unwrap(), 16).await.unwrap();
        // The first connection to this address asks for a cookie (the
        // kernel keeps one per address, across runs): its data follows
        // the handshake, unless a cookie was already kept.
        let (mut accepted, client) = open(&listener, b"first").await;
        let mut buf = [0; 5];
        accepted.read_exact(&mut buf).await.unwrap();
        assert_eq!(syn_data(&accepted).unwrap().is_some(), syn_data_taken(&client).unwrap().unwrap());
        // With the cookie, the next one's first write goes in its SYN.
        let (accepted, client) = open(&listener, &[7; 1000]).await;
        assert_eq!(syn_data(&accepted).unwrap(), Some(1000));
        assert!(syn_data_taken(&client).unwrap().unwrap());
    }

    #[tokio::test]
    async fn a_listener_without_fast_open_takes_no_data_in_a_syn() {
        host_allows().expect("the host must allow TCP Fast Open");
        let listener = TcpListener::bind("127.0.0.92:0").await.unwrap();
        for _ in 0..2 {
            let (mut accepted, client) = open(&listener, b"hello").await;
            let mut buf = [0; 5];
            accepted.read_exact(&mut buf).await.unwrap();
            assert_eq!(syn_data(&accepted).unwrap(), None);
            assert!(!syn_data_taken(&client).unwrap().unwrap());
        }
    }

    #[tokio::test]
    async fn a_plain_connect_sends_nothing_in_its_syn() {
        host_allows().expect("the host must allow TCP Fast Open");
        let listener = bind("127.0.0.93:0".parse().unwrap(), 16).await.unwrap();
        for _ in 0..2 {
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
            client.write_all(b"hello").await.unwrap();
            let (mut accepted, _) = listener.accept().await.unwrap();
            let mut buf = [0; 5];
            accepted.read_exact(&mut buf).await.unwrap();
            assert_eq!(syn_data(&accepted).unwrap(), None);
        }
    }
}

//! `bench selftest` without `--target`: starts this same binary's `switchboard serve` as a
//! child process on a free local port, so its CPU is sampled apart from the bench's.

use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::Error;

/// Starts `<this executable> serve --listen 127.0.0.1:PORT` and waits until it accepts.
/// Returns the child (killed when dropped) and the broadcast app's URL.
pub(crate) async fn spawn_serve(timeout: Duration) -> Result<(Child, String), Error> {
    let exe = std::env::current_exe().map_err(|e| Error::io(format!("cannot find this executable: {e}")))?;
    // A free port: bind port 0, note it, release it for the child.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::io(format!("no free local port: {e}")))?
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(&exe)
        .args(["serve", "--listen", &listen, "--xmpp-listen", "off", "--irc-listen", "off"])
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {} serve: {e}", exe.display())))?;
    let started = Instant::now();
    loop {
        if tokio::net::TcpStream::connect(&listen).await.is_ok() {
            return Ok((child, format!("http://{listen}/broadcast")));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::connect(format!("{} serve exited with {status} before listening on {listen}", exe.display())));
        }
        if started.elapsed() > timeout {
            return Err(Error::timeout(format!("{} serve did not listen on {listen} within {timeout:?}", exe.display())));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

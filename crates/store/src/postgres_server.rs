//! A throwaway PostgreSQL server for tests and labs: Debian's `postgresql`
//! binaries, a cluster made in a temporary folder, listening on a free
//! loopback port, gone when dropped. Run as root (as CI is), the server runs
//! as the `postgres` user the package makes, since PostgreSQL refuses root.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What to say when PostgreSQL's binaries are missing.
const INSTALL: &str = "PostgreSQL is not installed: `make test` installs Debian's `postgresql` package (apt-get install postgresql)";

#[derive(Debug)]
pub struct PostgresServer {
    child: Child,
    dir: PathBuf,
    /// `postgres://switchboard@127.0.0.1:PORT/postgres`.
    pub url: String,
}

impl PostgresServer {
    /// Makes a cluster and starts its server; `Err` says why it cannot.
    pub fn start() -> Result<PostgresServer, String> {
        let bin = binaries().ok_or(INSTALL)?;
        let dir = std::env::temp_dir().join(format!("switchboard-postgres-{}-{:x}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let user = as_user(&dir)?;
        let data = dir.join("data");
        let run = |program: &str| {
            let mut command = Command::new(bin.join(program));
            if let Some((uid, gid)) = user {
                command.uid(uid).gid(gid);
            }
            command
        };
        let made = run("initdb")
            .args(["--auth=trust", "--username=switchboard", "--no-sync", "--encoding=UTF8", "--pgdata"])
            .arg(&data)
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !made.status.success() {
            return Err(format!("initdb failed: {}", String::from_utf8_lossy(&made.stderr)));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let mut child = run("postgres")
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-k"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("postgres: {e}"))?;
        // Ready when it says so; its log goes on to standard error after.
        let stderr = child.stderr.take().ok_or("postgres: no standard error")?;
        let mut lines = BufReader::new(stderr).lines();
        let mut said = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("ready to accept connections") => break,
                Some(Ok(line)) => said.push(line),
                _ => {
                    let _ = child.kill();
                    return Err(format!("postgres exited before it was ready: {}", said.join("\n")));
                }
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        Ok(PostgresServer { child, dir, url: format!("postgres://switchboard@127.0.0.1:{port}/postgres") })
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The newest installed PostgreSQL's binaries.
fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql").ok()?.filter_map(|e| Some(e.ok()?.path().join("bin"))).filter(|bin| bin.join("initdb").exists()).collect();
    versions.sort();
    versions.pop()
}

/// The `postgres` user's ids when running as root (after giving it `dir`);
/// none otherwise.
fn as_user(dir: &Path) -> Result<Option<(u32, u32)>, String> {
    let id = |flag: &str| -> Result<u32, String> {
        let out = Command::new("id").arg(flag).arg("postgres").output().map_err(|e| e.to_string())?;
        String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| format!("{INSTALL} (no postgres user)"))
    };
    let me = Command::new("id").arg("-u").output().map_err(|e| e.to_string())?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        return Ok(None);
    }
    let (uid, gid) = (id("-u")?, id("-g")?);
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(Some((uid, gid)))
}

/// A few random bits for the folder's name, from the clock.
fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

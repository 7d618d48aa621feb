//! Embeds the sockjs-client script the server hands to browsers (for the
//! SockJS iframe page and the chat page). It comes from npm, pinned in
//! `web/package-lock.json`, never from a CDN, so the server works offline.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let web = manifest.join("../../web");
    let script = web.join("node_modules/sockjs-client/dist/sockjs.min.js");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-changed={}", web.join("package-lock.json").display());
    match script.canonicalize() {
        Ok(path) if path.is_file() => {
            println!("cargo:rustc-env=SWITCHBOARD_SOCKJS_CLIENT={}", path.display());
        }
        _ => {
            eprintln!(
                "error: {} is missing.\n\
                 The server embeds sockjs-client from npm. Install it with\n\n    \
                 npm ci --prefix web\n\n\
                 (or run `make`, which does it for you), then build again.",
                script.display()
            );
            std::process::exit(1);
        }
    }
}

//! Finds Chart.js (installed by `npm ci --prefix web`, pinned in web/package.json) so
//! the library can inline it into every report: reports must open offline, from a file.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    // The workspace root, spelled without `..` so the message below reads well.
    let root = manifest.join("../..");
    let root = root.canonicalize().unwrap_or(root);
    let package = root.join("web/node_modules/chart.js");
    let script = package.join("dist/chart.umd.min.js");
    let package_json = package.join("package.json");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-changed={}", package_json.display());
    println!("cargo:rerun-if-changed=build.rs");
    if !script.is_file() {
        panic!(
            "\n\nswitchboard-report inlines Chart.js into its reports, but {} is missing.\n\
             Run `npm ci --prefix web` (or `make`) first.\n\n",
            script.display()
        );
    }
    // The file is inlined in a <script> element: a literal "</script" or "<!--" in it
    // would end or derail that element. Chart.js has neither; say so loudly if it ever does.
    let text = std::fs::read_to_string(&script).expect("Chart.js is readable UTF-8");
    let lower = text.to_ascii_lowercase();
    if lower.contains("</script") || lower.contains("<!--") {
        panic!(
            "{} contains \"</script\" or \"<!--\"; it cannot be inlined as is",
            script.display()
        );
    }
    let script = script
        .canonicalize()
        .expect("an existing file has a canonical path");
    println!(
        "cargo:rustc-env=SWITCHBOARD_CHARTJS_PATH={}",
        script.display()
    );
    // The version is shown in the report's footer; a missing field is not worth failing for.
    let version = std::fs::read_to_string(&package_json)
        .ok()
        .and_then(|text| {
            let at = text.find("\"version\"")?;
            let rest = &text[at + "\"version\"".len()..];
            let start = rest.find('"')? + 1;
            let len = rest[start..].find('"')?;
            Some(rest[start..start + len].to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SWITCHBOARD_CHARTJS_VERSION={version}");
}

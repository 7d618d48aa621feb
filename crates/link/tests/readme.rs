//! docs/link.md's flags table for `switchboard link` is the one the flag
//! declarations generate, so the two cannot drift apart.

#[test]
fn the_readme_lists_the_flags_as_declared() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/link.md"))
        .expect("docs/link.md in the repository");
    let table = link::flags_markdown();
    assert!(readme.contains(&table), "docs/link.md's `switchboard link` flags table is stale; replace it with:\n{table}");
}

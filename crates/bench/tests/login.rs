//! `bench login` against the real server with a certificate for localhost:
//! each style's round trips, counted exactly (they are the protocol's, not the
//! machine's), fewer bytes each way as the styles get faster, and that it needs
//! an account (clap itself asks for --tls-trust).

use crate::support::Serve;
use crate::{args, json, measure};

#[tokio::test]
async fn each_login_style_takes_the_round_trips_its_protocol_needs() {
    // fast: TCP, then TLS resumed with the login as its early data, one
    // flight answered at once.
    logins(false, 2).await;
}

/// With TCP Fast Open on the server, a FAST login's flight rides in the SYN:
/// one round trip in all. The other styles are cold clients, with no cookie.
#[tokio::test]
async fn with_tcp_fast_open_a_fast_login_is_one_round_trip() {
    tfo::host_allows().expect("the host must allow TCP Fast Open");
    logins(true, 1).await;
}

/// Logs in twice in each style to a server with or without
/// `--tcp-fast-open`: each style's round trips, `fast` taking `fast_trips`.
async fn logins(fast_open: bool, fast_trips: u64) {
    let dir = tempfile::tempdir().expect("the test's set-up");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("the test's set-up");
    let tls = server::TlsFiles { cert: dir.path().join("cert.pem"), key: dir.path().join("key.pem") };
    std::fs::write(&tls.cert, cert.cert.pem()).expect("the test's set-up");
    std::fs::write(&tls.key, cert.signing_key.serialize_pem()).expect("the test's set-up");
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("alice", "pw")], tls: Some(tls.clone()), ..server::Config::default() };
    config.server.tcp_fast_open = fast_open;
    let (serve, direct) = Serve::with_xmpp_tls(config).await;

    let mut argv: Vec<String> = ["login", "--quiet", "--xmpp-user", "alice", "--xmpp-password", "pw", "--logins", "2"].map(String::from).to_vec();
    argv.extend(serve.xmpp_target());
    argv.extend(["--xmpp-tls-port".to_owned(), direct.port().to_string(), "--tls-trust".to_owned(), tls.cert.display().to_string()]);
    let (file, err) = measure(&argv.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let out = dir.path().join("login.json");
    std::fs::write(&out, v.to_string()).expect("the test's set-up");
    crate::schema::assert_valid(&out);
    let run = &v["runs"][0];
    assert_eq!(run["scenario"], "login");
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"));
    let styles: Vec<(String, u64, u64, u64, u64)> = run["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| (r["style"].as_str().unwrap_or_default().to_owned(), n(&r["first_message"]["count"]), n(&r["round_trips"]), n(&r["bytes_sent"]), n(&r["bytes_received"])))
        .collect();
    let names: Vec<(&str, u64, u64)> = styles.iter().map(|(s, count, rt, ..)| (s.as_str(), *count, *rt)).collect();
    // standard: TCP, header, STARTTLS, TLS, header, SCRAM's two steps, restart, bind,
    // the message; sasl2: TCP, TLS, header, SASL2's two steps (bound in the second),
    // the message.
    assert_eq!(names, [("standard", 2, 10), ("sasl2", 2, 6), ("fast", 2, fast_trips)]);
    for pair in styles.windows(2) {
        assert!(pair[1].3 < pair[0].3 && pair[1].4 < pair[0].4, "fewer bytes each way, style by style: {styles:?}");
    }
}

#[test]
fn login_needs_an_account() {
    let anonymous = bench::Plan::from_args(args(&["login", "--tls-trust", "cert.pem"])).expect_err("refused");
    assert!(anonymous.to_string().contains("--xmpp-user and --xmpp-password"), "{anonymous}");
}

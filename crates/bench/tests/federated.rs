//! `bench federated` between two real servers that federate, each its own
//! domain (a.test on 127.0.0.2, b.test on 127.0.0.3) with a certificate from
//! an authority the test makes: exact counts per row, the first round trip
//! on its own, and the flags it cannot run without.

use std::net::SocketAddr;
use std::path::Path;

use tokio::net::TcpListener;

use crate::support::Serve;
use crate::{args, json, measure};

/// A certificate for `names`, signed by `issuer`, written into `dir`.
fn certificate(dir: &Path, file: &str, names: &[&str], issuer: &rcgen::CertifiedIssuer<'static, rcgen::KeyPair>) -> server::TlsFiles {
    let key = rcgen::KeyPair::generate().expect("the test's set-up");
    let params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("the test's set-up");
    let cert = params.signed_by(&key, issuer).expect("the test's set-up");
    let (cert_path, key_path) = (dir.join(format!("{file}.pem")), dir.join(format!("{file}.key")));
    std::fs::write(&cert_path, cert.pem()).expect("the test's set-up");
    std::fs::write(&key_path, key.serialize_pem()).expect("the test's set-up");
    server::TlsFiles { cert: cert_path, key: key_path }
}

/// The server of `domain` with the account `user` (password pw), reaching
/// the other domain at `other`.
fn config(domain: &str, user: &str, tls: server::TlsFiles, trust: &Path, other: (&str, SocketAddr)) -> server::Config {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new(user, "pw")], tls: Some(tls), ..server::Config::default() };
    config.xmpp.domain = domain.to_owned();
    config.xmpp.plain_unencrypted = true;
    config.federation.trust = Some(trust.to_owned());
    let routes = [other.0.to_owned(), format!("conference.{}", other.0)].map(|d| (d, other.1.into()));
    config.federation.routes = server::Routes(routes.to_vec());
    config
}

#[tokio::test]
async fn round_trips_between_users_of_two_federated_servers_by_size_and_typing() {
    let dir = tempfile::tempdir().expect("the test's set-up");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("the test's set-up");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().expect("the test's set-up")).expect("the test's set-up");
    let trust = dir.path().join("ca.pem");
    std::fs::write(&trust, issuer.pem()).expect("the test's set-up");
    let (a_s2s, b_s2s) = (TcpListener::bind("127.0.0.2:0").await.expect("the test's set-up"), TcpListener::bind("127.0.0.3:0").await.expect("the test's set-up"));
    let (a_at, b_at) = (a_s2s.local_addr().expect("the test's set-up"), b_s2s.local_addr().expect("the test's set-up"));
    let a_cert = certificate(dir.path(), "a", &["a.test", "conference.a.test"], &issuer);
    let b_cert = certificate(dir.path(), "b", &["b.test", "conference.b.test"], &issuer);
    let a = Serve::federated(config("a.test", "alice", a_cert, &trust, ("b.test", b_at)), a_s2s).await;
    let b = Serve::federated(config("b.test", "bob", b_cert, &trust, ("a.test", a_at)), b_s2s).await;

    let peer = format!("127.0.0.1:{}", b.xmpp.expect("the test's set-up").port());
    let mut argv: Vec<String> = ["federated", "--quiet", "--xmpp-domain", "a.test", "--xmpp-user", "alice", "--xmpp-password", "pw"].map(String::from).to_vec();
    argv.extend(a.xmpp_target());
    argv.extend(["--peer-domain", "b.test", "--peer-xmpp", &peer, "--peer-user", "bob", "--sizes", "2,100", "--typing", "0s,20ms", "--round-trips", "3", "--throughput", "10,1000", "--throughput-bytes", "300", "--via-link", "rate=2400bit,delay=500ms"].map(String::from));
    let (file, err) = measure(&argv.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let out = dir.path().join("federated.json");
    std::fs::write(&out, v.to_string()).expect("the test's set-up");
    crate::schema::assert_valid(&out);
    let run = &v["runs"][0];
    assert_eq!(run["scenario"], "federated");
    // The link is recorded, not made (the servers here are joined directly).
    let link = &run["settings"]["via_link"];
    assert_eq!((link["rate_bps"].as_u64(), link["delay_us"].as_u64(), link["spec"].as_str()), (Some(2400), Some(500_000), Some("rate=2400bit,delay=500ms")));
    let mut settings = run["settings"].clone();
    settings.as_object_mut().expect("settings").remove("via_link");
    assert_eq!(settings, serde_json::json!({"peer_domain": "b.test", "peer_xmpp": peer, "peer_user": "bob", "sizes": [2, 100], "typing_us": [0, 20_000], "round_trips": 3, "throughput": [10, 1000], "throughput_bytes": 300}));
    let result = &run["results"][0];
    assert_eq!(result["transport"], "xmpp-tcp");
    assert!(result["first_us"].as_u64().is_some_and(|us| us > 0), "{result}");
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"));
    let rows: Vec<(u64, u64, u64)> = result["rows"].as_array().expect("rows").iter().map(|r| (n(&r["size"]), n(&r["typing_us"]), n(&r["round_trip"]["count"]))).collect();
    assert_eq!(rows, [(2, 0, 3), (2, 20_000, 3), (100, 0, 3), (100, 20_000, 3)]);
    // Throughput: 300 bytes of 10-byte bodies, and at least two of 1000 bytes.
    let streams: Vec<(u64, u64)> = result["throughput"].as_array().expect("throughput").iter().map(|r| (n(&r["size"]), n(&r["messages"]))).collect();
    assert_eq!(streams, [(10, 30), (1000, 2)]);
}

#[test]
fn federated_needs_accounts_and_the_other_servers_domain() {
    let anonymous = bench::Plan::from_args(args(&["federated", "--peer-domain", "b.test"])).expect_err("refused");
    assert!(anonymous.to_string().contains("--xmpp-user and --xmpp-password"), "{anonymous}");
    let bad = bench::Plan::from_args(args(&["federated", "--xmpp-user", "a", "--xmpp-password", "p", "--peer-domain", "b.test", "--peer-xmpp", "nowhere"])).expect_err("refused");
    assert!(bad.to_string().contains("host:port"), "{bad}");
}

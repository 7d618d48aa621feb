//! Who a server is, by its certificate (RFC 6120 §13.7.2, RFC 7590): this
//! server's own, shown on every stream between servers both ways, and the
//! check that another's is trusted and names the domain it claims.
//!
//! The TLS handshake itself takes any certificate: whether it vouches for
//! a domain is decided after it, against the domain the stream's header
//! names, so that a stream whose certificate does not may end with the
//! stream error that says so (and, where it is allowed, go on to other
//! means) instead of a bare TLS alert.

use std::path::Path;
use std::sync::Arc;

use base::ConfigError;
use base::tls::TlsFiles;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// This server's certificate for streams between servers, and the
/// authorities it trusts to vouch for others.
#[derive(Clone)]
pub struct Identity {
    verifier: Arc<WebPkiServerVerifier>,
    connector: TlsConnector,
    acceptor: TlsAcceptor,
    /// The same, for TLS from the first byte (XEP-0368): ALPN `xmpp-server`.
    direct_connector: TlsConnector,
    direct_acceptor: TlsAcceptor,
    /// Its own certificate's SHA-256, as zero-handshake peers pin it.
    fingerprint: String,
}

/// The ALPN protocol of a direct TLS stream between servers (XEP-0368 §3).
const ALPN: &[u8] = b"xmpp-server";

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").finish_non_exhaustive()
    }
}

impl Identity {
    /// The identity in `files`, trusting the authorities in `trust` (a
    /// PEM file), or the Mozilla list of authorities that browsers trust.
    pub fn new(files: &TlsFiles, trust: Option<&Path>) -> Result<Identity, ConfigError> {
        let roots = match trust {
            Some(path) => base::tls::trust_store(path)?,
            None => rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() },
        };
        let provider = base::tls::provider();
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| ConfigError::new(format!("the trusted authorities: {e}")))?;
        let later = Arc::new(Later(verifier.clone()));
        let (certs, key) = base::tls::identity(files)?;
        let fingerprint = certs.first().map(|own| super::zero::fingerprint(own.as_ref())).unwrap_or_default();
        let tls = |e: rustls::Error| ConfigError::new(format!("TLS between servers: {e}"));
        let client = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls)?
            .dangerous()
            .with_custom_certificate_verifier(later.clone())
            .with_client_auth_cert(certs.clone(), key.clone_key())
            .map_err(tls)?;
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls)?
            .with_client_cert_verifier(later)
            .with_single_cert(certs, key)
            .map_err(tls)?;
        let mut direct_client = client.clone();
        direct_client.alpn_protocols = vec![ALPN.to_vec()];
        let mut direct_server = server.clone();
        direct_server.alpn_protocols = vec![ALPN.to_vec()];
        Ok(Identity {
            verifier,
            connector: TlsConnector::from(Arc::new(client)),
            acceptor: TlsAcceptor::from(Arc::new(server)),
            direct_connector: TlsConnector::from(Arc::new(direct_client)),
            direct_acceptor: TlsAcceptor::from(Arc::new(direct_server)),
            fingerprint,
        })
    }

    /// What opens TLS to another server, showing this server's
    /// certificate: after STARTTLS, or from the first byte (`direct`).
    pub fn connector(&self, direct: bool) -> &TlsConnector {
        if direct { &self.direct_connector } else { &self.connector }
    }

    /// What takes TLS from another server, asking for its certificate:
    /// after STARTTLS, or from the first byte (`direct`).
    pub fn acceptor(&self, direct: bool) -> &TlsAcceptor {
        if direct { &self.direct_acceptor } else { &self.acceptor }
    }

    /// The SHA-256 of this server's certificate, as a peer's
    /// `[[xmpp_s2s_peer]]` entry pins it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Whether `chain` (the other side's certificates, its own first) is
    /// signed by a trusted authority, in date, and names `domain`: as a
    /// DNS-ID (RFC 6125 §6.4), or as XMPP's own forms, an XmppAddr (RFC
    /// 6120 §13.7.1.4) or an SRV-ID for servers' streams (RFC 7590 §3.2).
    pub fn vouches(&self, chain: Option<&[CertificateDer<'_>]>, domain: &str) -> bool {
        let Some((own, rest)) = chain.and_then(<[_]>::split_first) else { return false };
        let Ok(name) = ServerName::try_from(domain.to_owned()) else { return false };
        match self.verifier.verify_server_cert(own, rest, &name, &[], UnixTime::now()) {
            Ok(_) => true,
            // The chain was checked before the name: only the name failed.
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName | rustls::CertificateError::NotValidForNameContext { .. })) => {
                xmpp_names(own).iter().any(|named| named.eq_ignore_ascii_case(domain))
            }
            Err(_) => false,
        }
    }
}

/// The domains `cert` names in XMPP's forms of its subject alternative
/// names: XmppAddrs (id-on-xmppAddr) and SRV-IDs of `_xmpp-server` or
/// `_xmpps-server` (id-on-dnsSRV).
fn xmpp_names(cert: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
    const XMPP_ADDR: &str = "1.3.6.1.5.5.7.8.5";
    const DNS_SRV: &str = "1.3.6.1.5.5.7.8.7";
    let Ok((_, parsed)) = X509Certificate::from_der(cert.as_ref()) else { return Vec::new() };
    let Ok(Some(names)) = parsed.subject_alternative_name() else { return Vec::new() };
    names
        .value
        .general_names
        .iter()
        .filter_map(|name| {
            let GeneralName::OtherName(oid, value) = name else { return None };
            let text = explicit_string(value)?;
            match oid.to_id_string().as_str() {
                XMPP_ADDR => Some(text),
                DNS_SRV => text.strip_prefix("_xmpp-server.").or_else(|| text.strip_prefix("_xmpps-server.")).map(str::to_owned),
                _ => None,
            }
        })
        .collect()
}

/// The string an otherName's `[0] EXPLICIT` value holds (a UTF8String or
/// an IA5String).
fn explicit_string(value: &[u8]) -> Option<String> {
    use x509_parser::der_parser::asn1_rs::{Any, FromDer};
    let (_, tagged) = Any::from_der(value).ok()?;
    let (_, inner) = Any::from_der(tagged.data).ok()?;
    std::str::from_utf8(inner.data).ok().map(str::to_owned)
}

/// The handshake's verifier, both ways: it checks the other side's
/// signatures (that it holds its certificate's key) and leaves whether the
/// certificate is trusted, and for which domain, to `Identity::vouches`.
#[derive(Debug)]
struct Later(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for Later {
    fn verify_server_cert(
        &self,
        _own: &CertificateDer<'_>,
        _rest: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

impl ClientCertVerifier for Later {
    // A server that shows none may still authenticate otherwise.
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(&self, _own: &CertificateDer<'_>, _rest: &[CertificateDer<'_>], _now: UnixTime) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A second stream to a server it has met resumes TLS 1.3 (no
    /// certificates cross: on a slow link, seconds saved), and both sides
    /// still see the other's certificate, which SASL EXTERNAL and the
    /// domain checks read.
    #[tokio::test]
    async fn a_second_stream_resumes_tls_and_both_sides_still_see_the_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer = rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a.test".to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
        let files = TlsFiles { cert: dir.path().join("a.pem"), key: dir.path().join("a.key") };
        std::fs::write(&files.cert, cert.pem()).unwrap();
        std::fs::write(&files.key, key.serialize_pem()).unwrap();
        std::fs::write(dir.path().join("ca.pem"), issuer.pem()).unwrap();
        let identity = Identity::new(&files, Some(&dir.path().join("ca.pem"))).unwrap();
        let mut kinds = Vec::new();
        for _ in 0..2 {
            let (near, far) = tokio::io::duplex(1 << 16);
            let name = ServerName::try_from("a.test").unwrap();
            let (client, server) = tokio::join!(identity.connector(false).connect(name, near), identity.acceptor(false).accept(far));
            let (mut client, mut server) = (client.unwrap(), server.unwrap());
            // The client takes its tickets as it reads what the server says first.
            server.write_all(b"<").await.unwrap();
            let mut byte = [0u8; 1];
            client.read_exact(&mut byte).await.unwrap();
            assert!(identity.vouches(client.get_ref().1.peer_certificates(), "a.test"), "the client sees the server's certificate");
            assert!(identity.vouches(server.get_ref().1.peer_certificates(), "a.test"), "the server sees the client's certificate");
            kinds.push(client.get_ref().1.handshake_kind());
        }
        assert_eq!(kinds, [Some(rustls::HandshakeKind::Full), Some(rustls::HandshakeKind::Resumed)]);
    }
}

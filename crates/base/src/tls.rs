//! TLS on the listener (`https://`, `wss://`), with rustls: the certificate
//! chain and key come from PEM files named in the configuration. The XMPP
//! listener is to use the same [`acceptor`].

mod early;

pub use early::{EARLY_DATA_LIMIT, EarlyAcceptor, EarlyTlsStream, SESSIONS_KEPT};

use std::path::PathBuf;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::ConfigError as Error;

/// The certificate chain and key of a TLS listener, as PEM files.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// An acceptor for the files' certificate and key, offering HTTP/1.1.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, Error> {
    acceptor_for(files, &[b"http/1.1"])
}

/// An acceptor for the files' certificate and key, offering the ALPN
/// protocols `alpn` (none for XMPP's STARTTLS).
pub fn acceptor_for(files: &TlsFiles, alpn: &[&[u8]]) -> Result<TlsAcceptor, Error> {
    Ok(TlsAcceptor::from(Arc::new(server_config(files, alpn)?)))
}

/// An acceptor for the files' certificate and key that takes early data
/// from clients resuming a session ([`EarlyAcceptor`]).
pub fn early_acceptor(files: &TlsFiles, alpn: &[&[u8]]) -> Result<EarlyAcceptor, Error> {
    Ok(EarlyAcceptor::new(server_config(files, alpn)?))
}

fn server_config(files: &TlsFiles, alpn: &[&[u8]]) -> Result<ServerConfig, Error> {
    let (certs, key) = identity(files)?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::new(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::new(format!("the certificate and key in {} and {} do not make a TLS identity: {e}", files.cert.display(), files.key.display())))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// The one crypto provider every TLS configuration of the server uses.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificate chain and private key the files hold.
pub fn identity(files: &TlsFiles) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), Error> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect())
        .map_err(|e| Error::new(format!("cannot read the certificate {}: {e}", files.cert.display())))?;
    if certs.is_empty() {
        return Err(Error::new(format!("{} holds no certificate", files.cert.display())));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| Error::new(format!("cannot read the private key {}: {e}", files.key.display())))?;
    Ok((certs, key))
}

/// The certificates of the authorities a PEM file names, as a trust store.
pub fn trust_store(path: &std::path::Path) -> Result<rustls::RootCertStore, Error> {
    let mut roots = rustls::RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect())
        .map_err(|e| Error::new(format!("cannot read the trusted certificates {}: {e}", path.display())))?;
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(Error::new(format!("{} holds no certificate to trust", path.display())));
    }
    Ok(roots)
}

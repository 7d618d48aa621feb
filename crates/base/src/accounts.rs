//! Accounts, and SASL against them for XMPP and IRC (SCRAM-SHA-256 and SCRAM-SHA-1
//! of RFC 5802 and 7677, PLAIN, ANONYMOUS). The accounts are those of the
//! configuration file and those in the store: made by in-band
//! registration, or by `switchboard account add`.
//!
//! A password is never stored: an account keeps, for SHA-1 and SHA-256,
//! SCRAM's StoredKey and ServerKey (RFC 5802 §3), made from the password
//! and a salt. PLAIN is checked by deriving the same keys from the
//! password given. The hashes, HMAC and
//! PBKDF2 are RustCrypto's; the exchange is written here because the
//! `sasl` crate's server (0.5) refuses a client that does not do channel
//! binding (`n,,`), which is every client on a stream without TLS.

use std::collections::HashMap;
use std::sync::Arc;

pub use store::Account;
use store::{Created, Origin, ScramKeys as Keys, Store};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use wire::xmpp::jid::localpart;

/// PBKDF2 rounds for new accounts: RFC 7677's minimum for SCRAM-SHA-256.
pub const ITERATIONS: u32 = 4096;

/// One account as the configuration file writes it (`[[xmpp_account]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountEntry {
    pub name: String,
    /// The salt, base64.
    pub salt: String,
    pub iterations: u32,
    /// SCRAM-SHA-1's StoredKey and ServerKey, base64, joined by `:`.
    pub sha1: String,
    /// SCRAM-SHA-256's StoredKey and ServerKey, base64, joined by `:`.
    pub sha256: String,
}

/// SCRAM's hash: SHA-1 or SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    Sha1,
    Sha256,
}

impl Hash {
    fn name(self) -> &'static str {
        match self {
            Hash::Sha1 => "SCRAM-SHA-1",
            Hash::Sha256 => "SCRAM-SHA-256",
        }
    }

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], data: &[u8]) -> Vec<u8> {
            // HMAC takes a key of any length.
            let Ok(mut mac) = <M as hmac::digest::KeyInit>::new_from_slice(key) else { return Vec::new() };
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        match self {
            Hash::Sha1 => mac::<Hmac<Sha1>>(key, data),
            Hash::Sha256 => mac::<Hmac<Sha256>>(key, data),
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha1 => Sha1::digest(data).to_vec(),
            Hash::Sha256 => Sha256::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Hash::Sha1 => pbkdf2::pbkdf2_hmac_array::<Sha1, 20>(password.as_bytes(), salt, iterations).to_vec(),
            Hash::Sha256 => pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password.as_bytes(), salt, iterations).to_vec(),
        }
    }

    /// StoredKey and ServerKey of a password (RFC 5802 §3).
    fn keys(self, password: &str, salt: &[u8], iterations: u32) -> Keys {
        let salted = self.salted_password(password, salt, iterations);
        Keys { stored: self.digest(&self.hmac(&salted, b"Client Key")), server: self.hmac(&salted, b"Server Key") }
    }

    fn of(self, account: &Account) -> &Keys {
        match self {
            Hash::Sha1 => &account.sha1,
            Hash::Sha256 => &account.sha256,
        }
    }
}

/// The keys of a new account for `password`, salted at random: thousands
/// of hashes, to be made off the threads that serve connections.
pub fn new_account(password: &str) -> Account {
    let salt: [u8; 16] = rand::random();
    Account {
        salt: salt.to_vec(),
        iterations: ITERATIONS,
        sha1: Hash::Sha1.keys(password, &salt, ITERATIONS),
        sha256: Hash::Sha256.keys(password, &salt, ITERATIONS),
    }
}

impl AccountEntry {
    /// A new entry for `name` with `password`, salted at random.
    pub fn new(name: &str, password: &str) -> AccountEntry {
        let account = new_account(password);
        let keys = |k: &Keys| format!("{}:{}", STANDARD.encode(&k.stored), STANDARD.encode(&k.server));
        AccountEntry {
            name: name.to_owned(),
            salt: STANDARD.encode(&account.salt),
            iterations: account.iterations,
            sha1: keys(&account.sha1),
            sha256: keys(&account.sha256),
        }
    }

    /// The entry as the TOML to paste into the configuration file.
    pub fn to_toml(&self) -> String {
        format!(
            "[[xmpp_account]]\nname = {:?}\nsalt = {:?}\niterations = {}\nsha1 = {:?}\nsha256 = {:?}\n",
            self.name, self.salt, self.iterations, self.sha1, self.sha256
        )
    }
}

/// The accounts, by name: those of the configuration, and those of the
/// store (made by in-band registration, XEP-0077, up to `open`, or by an
/// administrator). A configured name is the configuration's, whatever the
/// store holds.
#[derive(Debug, Clone)]
pub struct Accounts {
    configured: Arc<HashMap<String, Arc<Account>>>,
    store: Arc<dyn Store>,
    /// How many accounts registration may keep at once; `None`: it is off.
    open: Option<usize>,
}

impl Default for Accounts {
    /// No account, none kept: a server of anonymous users only.
    fn default() -> Accounts {
        Accounts { configured: Arc::default(), store: Arc::new(store::MemoryStore::default()), open: None }
    }
}

/// Why a registration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Registration is off.
    Closed,
    /// Not a JID localpart (RFC 7613's UsernameCaseMapped), or an empty password.
    BadName,
    /// The name has an account.
    Taken,
    /// Registration made as many accounts as it may.
    Full,
    /// The store failed.
    Unavailable,
}

/// What a SASL step answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A challenge, and the exchange goes on.
    Challenge(Vec<u8>),
    /// Authenticated as this account (`None`: anonymous), with the data
    /// `<success/>` carries.
    Success(Option<String>, Vec<u8>),
    /// Refused (RFC 6120 §6.5: `not-authorized` unless said otherwise).
    Failure(&'static str),
}

/// One SASL exchange in progress.
#[derive(Debug)]
pub enum Exchange {
    Plain,
    Anonymous,
    /// SCRAM, before the client's first message, or after it.
    Scram { hash: Hash, state: Option<ScramState> },
}

impl Exchange {
    /// The fingerprint of the keys a SCRAM exchange checks the client's
    /// proof against, once its first message named the account: what a
    /// FAST token given at its end is bound to.
    pub fn fingerprint(&self) -> Option<Vec<u8>> {
        match self {
            Exchange::Scram { state: Some(ScramState { keys: Some(account), .. }), .. } => Some(fingerprint(account)),
            _ => None,
        }
    }
}

/// A hash of an account's salt and keys: it changes with its password, and
/// with the account itself when a name is made again.
pub fn fingerprint(account: &Account) -> Vec<u8> {
    let mut hash = Sha256::new();
    for part in [&account.salt, &account.sha1.stored, &account.sha1.server, &account.sha256.stored, &account.sha256.server] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.update(account.iterations.to_be_bytes());
    hash.finalize().to_vec()
}

#[derive(Debug)]
pub struct ScramState {
    account: String,
    /// The account's keys, as read for the first message; none for a name
    /// without an account, which fails at the proof.
    keys: Option<Arc<Account>>,
    /// `client-first-message-bare,server-first-message,` of the AuthMessage.
    messages: String,
    gs2_header: String,
    nonce: String,
}

impl Accounts {
    /// The accounts of the configuration, beside those of `store`; `Err`
    /// names a bad entry.
    pub fn new(entries: &[AccountEntry], store: Arc<dyn Store>) -> Result<Accounts, String> {
        let mut accounts = HashMap::new();
        for entry in entries {
            let fix = || format!("xmpp_account {:?}: make it with `switchboard xmpp-account NAME`", entry.name);
            let keys = |value: &str, len: usize| -> Result<Keys, String> {
                let (stored, server) = value.split_once(':').ok_or_else(fix)?;
                let (stored, server) = (STANDARD.decode(stored).map_err(|_| fix())?, STANDARD.decode(server).map_err(|_| fix())?);
                if stored.len() != len || server.len() != len {
                    return Err(fix());
                }
                Ok(Keys { stored, server })
            };
            let salt = STANDARD.decode(&entry.salt).map_err(|_| fix())?;
            if entry.iterations == 0 || salt.is_empty() {
                return Err(fix());
            }
            // Kept under its JID local part's canonical form (RFC 7622 §3.3):
            // `Alice` logs in, and is reached, as `alice`.
            let Some(name) = account_name(&entry.name) else {
                return Err(format!("xmpp_account {:?}: not a JID localpart", entry.name));
            };
            let account = Account { salt, iterations: entry.iterations, sha1: keys(&entry.sha1, 20)?, sha256: keys(&entry.sha256, 32)? };
            if accounts.insert(name, Arc::new(account)).is_some() {
                return Err(format!("xmpp_account {:?} is given twice", entry.name));
            }
        }
        Ok(Accounts { configured: Arc::new(accounts), store, open: None })
    }

    /// Opens in-band registration for at most `limit` new accounts.
    pub fn open(self, limit: usize) -> Accounts {
        Accounts { open: Some(limit), ..self }
    }

    /// Whether in-band registration is on.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Whether no account can log in: none is configured, none can be
    /// made, and the store keeps none from before.
    pub fn is_empty(&self) -> bool {
        self.open.is_none() && self.configured.is_empty() && !self.store.persistent()
    }

    /// The fingerprint of the keys of the account `name` (see [`fingerprint`]),
    /// if there is one; `Err` when the store cannot say.
    pub async fn fingerprint(&self, name: &str) -> Result<Option<Vec<u8>>, store::Error> {
        Ok(self.get(name).await?.map(|account| fingerprint(&account)))
    }

    /// Whether the account `name` exists; `Err` when the store cannot say.
    pub async fn exists(&self, name: &str) -> Result<bool, store::Error> {
        Ok(self.get(name).await?.is_some())
    }

    async fn get(&self, name: &str) -> Result<Option<Arc<Account>>, store::Error> {
        if let Some(account) = self.configured.get(name) {
            return Ok(Some(account.clone()));
        }
        Ok(self.store.account(name).await?.map(Arc::new))
    }

    /// Makes the account `name` (in-band registration), and keeps it
    /// before it answers; the name as kept, mapped to lower case as RFC
    /// 7613's UsernameCaseMapped profile says.
    pub async fn register(&self, name: &str, password: &str) -> Result<String, Refused> {
        let limit = self.open.ok_or(Refused::Closed)?;
        let name = self.available(name, password).await?;
        let password = password.to_owned();
        // Thousands of hashes: not on the threads that serve connections.
        let account = tokio::task::spawn_blocking(move || new_account(&password)).await.map_err(|_| Refused::Unavailable)?;
        match self.store.create(&name, &account, Origin::Registration, limit).await {
            Ok(Created::Made) => Ok(name),
            Ok(Created::Taken) => Err(Refused::Taken),
            Ok(Created::Full) => Err(Refused::Full),
            Err(e) => {
                tracing::warn!("xmpp: registration of {name:?} not kept: {e}");
                Err(Refused::Unavailable)
            }
        }
    }

    /// The name `name` would be kept under, if registration could make it
    /// now with `password`: checked before any key is made, which costs
    /// thousands of hashes. The store's bound is checked as it makes it.
    pub async fn available(&self, name: &str, password: &str) -> Result<String, Refused> {
        self.open.ok_or(Refused::Closed)?;
        let name = account_name(name).ok_or(Refused::BadName)?;
        if password.is_empty() {
            return Err(Refused::BadName);
        }
        match self.exists(&name).await {
            Ok(true) => Err(Refused::Taken),
            Ok(false) => Ok(name),
            Err(_) => Err(Refused::Unavailable),
        }
    }

    /// Removes the account `name` (XEP-0077 §3.2), if the store has it;
    /// those of the configuration stay.
    pub async fn unregister(&self, name: &str) -> Result<bool, store::Error> {
        if self.configured.contains_key(name) {
            return Ok(false);
        }
        self.store.remove(name).await
    }

    /// The exchange for mechanism `name`, if the server offers it: `plain`
    /// says whether PLAIN is offered, `anonymous` ANONYMOUS.
    pub fn start(&self, name: &str, plain: bool, anonymous: bool) -> Option<Exchange> {
        let accounts = !self.is_empty();
        match name {
            "SCRAM-SHA-256" if accounts => Some(Exchange::Scram { hash: Hash::Sha256, state: None }),
            "SCRAM-SHA-1" if accounts => Some(Exchange::Scram { hash: Hash::Sha1, state: None }),
            "PLAIN" if accounts && plain => Some(Exchange::Plain),
            "ANONYMOUS" if anonymous => Some(Exchange::Anonymous),
            _ => None,
        }
    }

    /// The names of the mechanisms offered, strongest first.
    pub fn offered(&self, plain: bool, anonymous: bool) -> Vec<&'static str> {
        [Hash::Sha256.name(), Hash::Sha1.name(), "PLAIN", "ANONYMOUS"].into_iter().filter(|m| self.start(m, plain, anonymous).is_some()).collect()
    }

    /// Takes the client's next message of `exchange`.
    pub async fn step(&self, exchange: &mut Exchange, data: &[u8]) -> Step {
        match exchange {
            Exchange::Anonymous => Step::Success(None, Vec::new()),
            Exchange::Plain => self.plain(data).await,
            Exchange::Scram { hash, state } => match state.take() {
                None => match self.scram_first(*hash, data).await {
                    Ok((next, challenge)) => {
                        *state = Some(next);
                        Step::Challenge(challenge)
                    }
                    Err(condition) => Step::Failure(condition),
                },
                Some(first) => scram_final(*hash, &first, data),
            },
        }
    }

    async fn plain(&self, data: &[u8]) -> Step {
        let mut parts = data.split(|&b| b == 0);
        let (Some(authzid), Some(name), Some(password), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Step::Failure("malformed-request");
        };
        let (Ok(name), Ok(password)) = (std::str::from_utf8(name), std::str::from_utf8(password)) else {
            return Step::Failure("malformed-request");
        };
        if !authzid.is_empty() && authzid != name.as_bytes() {
            return Step::Failure("invalid-authzid");
        }
        let name = localpart(name).unwrap_or_default();
        let Ok(account) = self.get(&name).await else { return Step::Failure("temporary-auth-failure") };
        let password = password.to_owned();
        // PLAIN derives keys from the password: thousands of hashes, which
        // must not hold up the connections sharing this thread.
        let checked = tokio::task::spawn_blocking(move || {
            // An unknown name costs what a known one does (keys derived and
            // compared), so that the time of a failure does not tell which
            // names have accounts.
            let (salt, iterations, stored) = match &account {
                Some(account) => (account.salt.as_slice(), account.iterations, account.sha256.stored.as_slice()),
                None => (&[0u8; 16][..], ITERATIONS, &[0u8; 32][..]),
            };
            let keys = Hash::Sha256.keys(&password, salt, iterations);
            same(&keys.stored, stored) && account.is_some()
        });
        match checked.await {
            Ok(true) => Step::Success(Some(name), Vec::new()),
            Ok(false) => Step::Failure("not-authorized"),
            Err(_) => Step::Failure("temporary-auth-failure"),
        }
    }

    async fn scram_first(&self, hash: Hash, data: &[u8]) -> Result<(ScramState, Vec<u8>), &'static str> {
        let text = std::str::from_utf8(data).map_err(|_| "malformed-request")?;
        // gs2-header: "n,," or "y,," (no channel binding here); an authzid is refused.
        let (flag, rest) = text.split_once(',').ok_or("malformed-request")?;
        let (authzid, bare) = rest.split_once(',').ok_or("malformed-request")?;
        if flag != "n" && flag != "y" {
            return Err("malformed-request");
        }
        if !authzid.is_empty() {
            return Err("invalid-authzid");
        }
        let mut name = None;
        let mut client_nonce = None;
        for attr in bare.split(',') {
            match attr.split_once('=') {
                Some(("n", v)) => name = Some(v.replace("=2C", ",").replace("=3D", "=")),
                Some(("r", v)) if !v.is_empty() => client_nonce = Some(v),
                Some(("m", _)) => return Err("malformed-request"),
                _ => {}
            }
        }
        let (Some(name), Some(client_nonce)) = (name, client_nonce) else { return Err("malformed-request") };
        let name = localpart(&name).unwrap_or(name);
        let keys = self.get(&name).await.map_err(|_| "temporary-auth-failure")?;
        // An unknown name gets a challenge like any other (it fails at the
        // proof), so that names cannot be probed.
        let (salt, iterations) = match &keys {
            Some(account) => (account.salt.clone(), account.iterations),
            None => (hash.digest(name.as_bytes())[..16].to_vec(), ITERATIONS),
        };
        let nonce = format!("{client_nonce}{}", STANDARD.encode(rand::random::<[u8; 18]>()));
        let server_first = format!("r={nonce},s={},i={iterations}", STANDARD.encode(salt));
        let state = ScramState { account: name, keys, messages: format!("{bare},{server_first},"), gs2_header: format!("{flag},{authzid},"), nonce };
        Ok((state, server_first.into_bytes()))
    }
}

/// The client's last SCRAM message, checked against the keys read for its first.
fn scram_final(hash: Hash, first: &ScramState, data: &[u8]) -> Step {
    let Ok(text) = std::str::from_utf8(data) else { return Step::Failure("malformed-request") };
    let Some((without_proof, proof)) = text.rsplit_once(",p=") else { return Step::Failure("malformed-request") };
    let mut binding = None;
    let mut nonce = None;
    for attr in without_proof.split(',') {
        match attr.split_once('=') {
            Some(("c", v)) => binding = Some(v),
            Some(("r", v)) => nonce = Some(v),
            _ => {}
        }
    }
    if binding != Some(STANDARD.encode(&first.gs2_header).as_str()) || nonce != Some(first.nonce.as_str()) {
        return Step::Failure("not-authorized");
    }
    let (Ok(proof), Some(account)) = (STANDARD.decode(proof), first.keys.as_ref()) else {
        return Step::Failure("not-authorized");
    };
    let keys = hash.of(account);
    let auth_message = format!("{}{without_proof}", first.messages);
    let signature = hash.hmac(&keys.stored, auth_message.as_bytes());
    if proof.len() != signature.len() {
        return Step::Failure("not-authorized");
    }
    let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
    if !same(&hash.digest(&client_key), &keys.stored) {
        return Step::Failure("not-authorized");
    }
    let server_signature = hash.hmac(&keys.server, auth_message.as_bytes());
    Step::Success(Some(first.account.clone()), format!("v={}", STANDARD.encode(server_signature)).into_bytes())
}

/// The name an account is kept under: its JID local part's canonical form,
/// without the two characters SCRAM's `n=` attribute escapes.
pub fn account_name(text: &str) -> Option<String> {
    localpart(text).filter(|name| !name.contains([',', '=']))
}

/// Whether two keys are equal, in time that does not tell where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Arc<dyn Store> {
        Arc::new(store::MemoryStore::default())
    }

    fn alice() -> Accounts {
        Accounts::new(&[AccountEntry::new("alice", "s3cret")], memory()).unwrap()
    }

    #[tokio::test]
    async fn an_entry_survives_its_toml_and_plain_checks_the_password_only() {
        let entry = AccountEntry::new("alice", "s3cret");
        let file: HashMap<String, Vec<AccountEntry>> = toml::from_str(&entry.to_toml()).unwrap();
        assert_eq!(file["xmpp_account"][0], entry);
        let accounts = Accounts::new(&[entry], memory()).unwrap();
        let mut plain = accounts.start("PLAIN", true, false).unwrap();
        assert_eq!(accounts.step(&mut plain, b"\0alice\0s3cret").await, Step::Success(Some("alice".into()), Vec::new()));
        assert_eq!(accounts.step(&mut plain, b"\0alice\0guess").await, Step::Failure("not-authorized"));
        assert_eq!(accounts.step(&mut plain, b"\0bob\0s3cret").await, Step::Failure("not-authorized"));
        assert_eq!(accounts.step(&mut plain, b"garbage").await, Step::Failure("malformed-request"));
        assert!(accounts.start("PLAIN", false, false).is_none(), "PLAIN only where allowed");
        assert_eq!(accounts.offered(false, true), ["SCRAM-SHA-256", "SCRAM-SHA-1", "ANONYMOUS"]);
        assert!(Accounts::default().offered(true, false).is_empty());
    }

    /// An account is one name whatever its case (RFC 7622 §3.3): kept,
    /// logged in and registered under its local part's canonical form.
    #[tokio::test]
    async fn names_are_the_case_folded_local_parts() {
        let accounts = Accounts::new(&[AccountEntry::new("Alice", "s3cret")], memory()).unwrap();
        assert!(accounts.exists("alice").await.unwrap() && !accounts.exists("Alice").await.unwrap());
        let mut plain = accounts.start("PLAIN", true, false).unwrap();
        assert_eq!(accounts.step(&mut plain, b"\0ALICE\0s3cret").await, Step::Success(Some("alice".into()), Vec::new()));
        let twice = Accounts::new(&[AccountEntry::new("bob", "a"), AccountEntry::new("BOB", "b")], memory()).unwrap_err();
        assert!(twice.contains("given twice"), "{twice}");
        let open = accounts.open(10);
        assert_eq!(open.available("ALICE", "pw").await, Err(Refused::Taken));
        assert_eq!(open.register("Carol", "pw").await, Ok("carol".to_owned()));
        assert_eq!(open.available("a b", "pw").await, Err(Refused::BadName));
    }

    /// RFC 7677 §3's example exchange, to the byte: user "user", password
    /// "pencil", the RFC's salt, iteration count and nonces.
    #[test]
    fn scram_sha_256_follows_rfc_7677s_example() {
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let keys = Hash::Sha256.keys("pencil", &salt, 4096);
        let account = Account { salt, iterations: 4096, sha1: keys.clone(), sha256: keys };
        let bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let first = ScramState {
            account: "user".into(),
            keys: Some(Arc::new(account)),
            messages: format!("{bare},{server_first},"),
            gs2_header: "n,,".into(),
            nonce: "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".into(),
        };
        let client_final = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        assert_eq!(
            scram_final(Hash::Sha256, &first, client_final.as_bytes()),
            Step::Success(Some("user".into()), b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec())
        );
        let wrong = client_final.replace("p=dHzb", "p=eHzb");
        assert_eq!(scram_final(Hash::Sha256, &first, wrong.as_bytes()), Step::Failure("not-authorized"));
    }

    #[tokio::test]
    async fn a_scram_exchange_needs_the_password_and_the_nonce() {
        let accounts = alice();
        let mut exchange = accounts.start("SCRAM-SHA-1", false, false).unwrap();
        let Step::Challenge(challenge) = accounts.step(&mut exchange, b"n,,n=alice,r=abc").await else { panic!() };
        let challenge = String::from_utf8(challenge).unwrap();
        assert!(challenge.starts_with("r=abc") && challenge.contains(",i=4096"), "{challenge}");
        // A client-final with a made-up proof fails.
        let nonce = challenge.split(',').next().unwrap();
        let guess = format!("c=biws,{nonce},p={}", STANDARD.encode([0u8; 20]));
        assert_eq!(accounts.step(&mut exchange, guess.as_bytes()).await, Step::Failure("not-authorized"));
        let mut exchange = accounts.start("SCRAM-SHA-256", false, false).unwrap();
        assert_eq!(accounts.step(&mut exchange, b"p=tls-unique,,n=alice,r=abc").await, Step::Failure("malformed-request"));
        assert_eq!(accounts.step(&mut exchange, b"n,a=bob,n=alice,r=abc").await, Step::Failure("invalid-authzid"));
    }

    #[tokio::test]
    async fn registration_makes_accounts_up_to_its_limit_under_case_mapped_names() {
        let closed = Accounts::new(&[], memory()).unwrap();
        assert!(closed.is_empty());
        assert_eq!(closed.register("zoe", "pw").await, Err(Refused::Closed));
        let open = Accounts::new(&[AccountEntry::new("alice", "s3cret")], memory()).unwrap().open(2);
        assert!(!open.is_empty());
        assert_eq!(open.register("Zoe", "pw").await, Ok("zoe".to_owned()));
        assert_eq!(open.register("ZOE", "other").await, Err(Refused::Taken));
        assert_eq!(open.register("alice", "other").await, Err(Refused::Taken), "a configured account");
        assert_eq!(open.register("a b", "pw").await, Err(Refused::BadName));
        assert_eq!(open.register("yan", "").await, Err(Refused::BadName));
        assert_eq!(open.register("yan", "pw").await, Ok("yan".to_owned()));
        assert_eq!(open.register("xia", "pw").await, Err(Refused::Full));
        assert!(!open.unregister("alice").await.unwrap(), "a configured account stays");
        assert!(open.unregister("yan").await.unwrap());
        assert_eq!(open.register("xia", "pw").await, Ok("xia".to_owned()), "a removed account frees its place");
        assert_eq!(open.plain(b"\0zoe\0pw").await, Step::Success(Some("zoe".into()), Vec::new()));
    }

    /// A persistent store's accounts can log in though none is configured
    /// and registration is off: SCRAM and PLAIN are offered.
    #[tokio::test]
    async fn a_kept_account_logs_in_without_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let store = store::open(&store::Choice::Sqlite(dir.path().to_owned())).await.unwrap();
        store.create("dora", &new_account("pw"), Origin::Administrator, 0).await.unwrap();
        let accounts = Accounts::new(&[], store).unwrap();
        assert_eq!(accounts.offered(true, false), ["SCRAM-SHA-256", "SCRAM-SHA-1", "PLAIN"]);
        let mut plain = accounts.start("PLAIN", true, false).unwrap();
        assert_eq!(accounts.step(&mut plain, b"\0dora\0pw").await, Step::Success(Some("dora".into()), Vec::new()));
    }
}

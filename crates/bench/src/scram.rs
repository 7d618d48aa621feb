//! The client's side of SCRAM-SHA-256 (RFC 5802, RFC 7677), without channel
//! binding (`n,,`), as the login scenario authenticates with it: the first
//! message, the final one (with the proof) from the server's first, and the
//! server's signature checked.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::Error;

pub struct Scram {
    password: String,
    first_bare: String,
    nonce: String,
    /// The server's signature its last message must carry, once known.
    server_signature: Vec<u8>,
}

/// HMAC-SHA-256 of `data` under `key` (FAST's HT-SHA-256-NONE uses it too).
pub(crate) fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length.
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(key) else { return Vec::new() };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

impl Scram {
    /// The exchange for `user` with `password`, and its first message.
    pub fn start(user: &str, password: &str) -> (Scram, String) {
        let nonce = STANDARD.encode(rand::random::<[u8; 18]>());
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let first_bare = format!("n={name},r={nonce}");
        let first = format!("n,,{first_bare}");
        (Scram { password: password.to_owned(), first_bare, nonce, server_signature: Vec::new() }, first)
    }

    /// The final message, answering the server's first.
    pub fn answer(&mut self, server_first: &[u8]) -> Result<String, Error> {
        let text = std::str::from_utf8(server_first).map_err(|_| Error::unexpected("SCRAM: the server's first message is not UTF-8"))?;
        let field = |key: &str| text.split(',').find_map(|f| f.strip_prefix(key)).map(str::to_owned);
        let (Some(nonce), Some(salt), Some(iterations)) = (field("r="), field("s="), field("i=")) else {
            return Err(Error::unexpected(format!("SCRAM: not a server-first-message: {text:?}")));
        };
        if !nonce.starts_with(&self.nonce) {
            return Err(Error::unexpected("SCRAM: the server's nonce does not extend the client's"));
        }
        let salt = STANDARD.decode(salt).map_err(|_| Error::unexpected("SCRAM: the salt is not base64"))?;
        let iterations: u32 = iterations.parse().map_err(|_| Error::unexpected("SCRAM: the iteration count is not a number"))?;
        let salted = pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(self.password.as_bytes(), &salt, iterations);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key = Sha256::digest(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.first_bare);
        let signature = hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(k, s)| k ^ s).collect();
        self.server_signature = hmac(&hmac(&salted, b"Server Key"), auth_message.as_bytes());
        Ok(format!("{without_proof},p={}", STANDARD.encode(proof)))
    }

    /// Checks the server's last message (`v=…`): it knew the password's keys.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), Error> {
        let text = String::from_utf8_lossy(server_final);
        match text.strip_prefix("v=").map(|v| STANDARD.decode(v)) {
            Some(Ok(v)) if v == self.server_signature => Ok(()),
            _ => Err(Error::unexpected(format!("SCRAM: the server's signature is wrong: {text:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 §3's example, with its nonce.
    #[test]
    fn the_rfc_example_gives_its_proof_and_checks_its_signature() {
        let (mut scram, first) = Scram::start("user", "pencil");
        assert!(first.starts_with("n,,n=user,r="));
        scram.nonce = "rOprNGfwEbeRWgbNEkqO".into();
        scram.first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO".into();
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let last = scram.answer(server_first).unwrap_or_default();
        assert_eq!(last, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
        assert!(scram.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").is_ok());
        assert!(scram.verify(b"v=AAAA").is_err());
    }
}

"""Writes the XEP-0227 (urn:xmpp:pie:0) file that install.sh gives to
`ejabberdctl import_piefxis`: the accounts PREFIX0 .. PREFIX<N-1> of DOMAIN,
all with PASSWORD, each stored as ejabberd stores a password with
auth_password_format: scram — SCRAM-SHA-1 keys (RFC 5802) from a salt of its
own and 4096 PBKDF2 iterations, ejabberd's count. Deriving the keys here
rather than giving the password makes the import a matter of seconds: the
node would otherwise derive them one account at a time.

The salt and keys are written as ejabberd 23.01's own export_piefxis writes
them, which is what its import reads: base64 of the base64 text ejabberd
keeps in its database. (XEP-0227 has base64 of the bytes; a file written so
imports without complaint, and every login to those accounts then crashes
the session in base64:decode.)

Usage: python3 accounts.py DOMAIN PREFIX N PASSWORD > users.xml
"""

import base64
import hashlib
import hmac
import multiprocessing
import os
import sys

ITERATIONS = 4096


def scram_sha1(password: bytes, salt: bytes) -> tuple[bytes, bytes]:
    """The (stored key, server key) pair of RFC 5802 §3."""
    salted = hashlib.pbkdf2_hmac("sha1", password, salt, ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha1).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha1).digest()
    return hashlib.sha1(client_key).digest(), server_key


def credentials(password: bytes) -> tuple[bytes, bytes, bytes]:
    """A fresh salt and the keys derived from it."""
    salt = os.urandom(16)
    return (salt, *scram_sha1(password, salt))


def main() -> None:
    domain, prefix, count, password = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
    # ejabberd 23.01 keeps base64 text; its PIE files hold that text in base64.
    b64 = lambda b: base64.b64encode(base64.b64encode(b)).decode()
    # PBKDF2 is the whole cost: one worker per core.
    with multiprocessing.Pool() as pool:
        creds = pool.map(credentials, [password] * count, chunksize=256)
    out = sys.stdout
    out.write("<?xml version='1.0' encoding='UTF-8'?>\n")
    out.write(f"<server-data xmlns='urn:xmpp:pie:0'><host jid='{domain}'>\n")
    for i, (salt, stored, server) in enumerate(creds):
        out.write(
            f"<user name='{prefix}{i}'>"
            "<scram-credentials xmlns='urn:xmpp:pie:0#scram' mechanism='SCRAM-SHA-1'>"
            f"<iter-count>{ITERATIONS}</iter-count><salt>{b64(salt)}</salt>"
            f"<server-key>{b64(server)}</server-key><stored-key>{b64(stored)}</stored-key>"
            "</scram-credentials></user>\n"
        )
    out.write("</host></server-data>\n")


if __name__ == "__main__":
    main()

-- One of the two Prosody servers of the satellite-link study
-- (shootout/satellite.sh, docs/satellite.md), filled in by it: @DOMAIN@ on
-- @ADDRESS@, clients on 15222 and servers on 5269, its certificate @CERT@
-- and @KEY@, the other server's checked against the authority @CA@. The
-- other domain is found through @HOSTS@, a hosts file naming the address
-- of the link in front of it (no SRV record: @RESOLV@ names a resolver
-- where none answers, so the SRV query fails at once and Prosody connects
-- to the name's address on port 5269).

data_path = "@DIR@/data"
pidfile = "@DIR@/prosody.pid"
run_as_root = true
certificates = "@DIR@/certs"
interfaces = { "@ADDRESS@" }
c2s_ports = { 15222 }
c2s_direct_tls_ports = { }
s2s_interfaces = { "@ADDRESS@" }
s2s_ports = { 5269 }
s2s_direct_tls_ports = { }
http_ports = { }
https_ports = { }

-- Standard federation as Prosody 0.12 does it: STARTTLS, the certificate
-- checked (s2s_secure_auth, SASL EXTERNAL), dialback where it is not,
-- stream management, and one connection both ways (mod_s2s_bidi,
-- XEP-0288).
modules_enabled = {
	"disco"; "roster"; "saslauth"; "tls"; "dialback"; "s2s_bidi";
	"smacks"; "ping"; "posix";
}
s2s_require_encryption = true
s2s_secure_auth = true
ssl = { cafile = "@CA@" }
unbound = { hoststxt = "@HOSTS@", resolvconf = "@RESOLV@" }

-- The bench's clients log in with PLAIN beside their server, unencrypted.
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
authentication = "internal_plain"

log = { { levels = { min = "info" }, to = "console" } }

VirtualHost "@DOMAIN@"
	ssl = { certificate = "@CERT@", key = "@KEY@" }

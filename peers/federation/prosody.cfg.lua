-- Prosody 0.12.3 as one of three federated domains in
-- peers/federation/check.sh: prosody.internal on @IP@, client and server
-- streams on the standard ports, its certificate and the authorities it
-- trusts from the check's own authority, names resolved by the check's
-- dnsmasq (SRV and A records) through libunbound. Everything it keeps is
-- in the check's folder.
data_path = "@DATA@"
run_as_root = true
plugin_paths = { }
admins = { }
pidfile = "@DATA@/prosody.pid"

interfaces = { "@IP@" }
c2s_ports = { 5222 }
c2s_direct_tls_ports = { }
s2s_ports = { 5269 }
s2s_direct_tls_ports = { }
http_ports = { }
https_ports = { }

modules_enabled = {
	"disco"; "roster"; "saslauth"; "tls"; "ping"; "posix"; "admin_shell";
	-- Federation: certificates (SASL EXTERNAL) and dialback, and one
	-- stream each way per pair of domains where the other side speaks
	-- XEP-0288, as the issue asks.
	"s2s_bidi";
	-- Stream management on streams between servers too (XEP-0198).
	"smacks";
}

-- Streams between servers are encrypted and their certificates checked
-- against the check's authority (no dialback without a valid one).
s2s_require_encryption = true
s2s_secure_auth = true
certificates = "@DATA@"
ssl = {
	certificate = "@CERT@";
	key = "@KEY@";
	cafile = "@CA@";
}
-- Its resolver asks the check's dnsmasq, which knows the three domains.
unbound = { resolvconf = "@RESOLV@" }

c2s_require_encryption = false
allow_unencrypted_plain_auth = true
authentication = "internal_hashed"

log = {
	{ levels = { min = "@LOGLEVEL@" }, to = "console" };
}

VirtualHost "prosody.internal"

Component "conference.prosody.internal" "muc"
	restrict_room_creation = false
	muc_room_locking = false

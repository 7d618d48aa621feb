-- Accounts: SCRAM keys, never passwords (RFC 5802 §3).
CREATE TABLE account (
    name TEXT PRIMARY KEY NOT NULL,
    salt BLOB NOT NULL,
    iterations INTEGER NOT NULL,
    sha1_stored BLOB NOT NULL,
    sha1_server BLOB NOT NULL,
    sha256_stored BLOB NOT NULL,
    sha256_server BLOB NOT NULL,
    -- 1 when in-band registration made it: registration's bound counts these.
    registered INTEGER NOT NULL
);

-- Roster items (RFC 6121 §2), in the order they were added (id).
CREATE TABLE contact (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    jid TEXT NOT NULL,
    name TEXT,
    -- A JSON array of the group names.
    groups TEXT NOT NULL,
    sub_to INTEGER NOT NULL,
    sub_from INTEGER NOT NULL,
    ask INTEGER NOT NULL,
    UNIQUE (owner, jid)
);

-- Subscription requests waiting for their user's answer, oldest first (id).
CREATE TABLE subscription_request (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    requester TEXT NOT NULL,
    request TEXT NOT NULL,
    UNIQUE (owner, requester)
);

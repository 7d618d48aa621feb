-- Accounts: SCRAM keys, never passwords (RFC 5802 §3).
CREATE TABLE account (
    name TEXT PRIMARY KEY NOT NULL,
    salt BYTEA NOT NULL,
    iterations BIGINT NOT NULL,
    sha1_stored BYTEA NOT NULL,
    sha1_server BYTEA NOT NULL,
    sha256_stored BYTEA NOT NULL,
    sha256_server BYTEA NOT NULL,
    -- 1 when in-band registration made it: registration's bound counts these.
    registered SMALLINT NOT NULL
);

-- Roster items (RFC 6121 §2), in the order they were added (id).
CREATE TABLE contact (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner TEXT NOT NULL,
    jid TEXT NOT NULL,
    name TEXT,
    -- A JSON array of the group names.
    groups TEXT NOT NULL,
    sub_to SMALLINT NOT NULL,
    sub_from SMALLINT NOT NULL,
    ask SMALLINT NOT NULL,
    UNIQUE (owner, jid)
);

-- Subscription requests waiting for their user's answer, oldest first (id).
CREATE TABLE subscription_request (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner TEXT NOT NULL,
    requester TEXT NOT NULL,
    request TEXT NOT NULL,
    UNIQUE (owner, requester)
);

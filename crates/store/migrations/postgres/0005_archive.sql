-- Message archives (XEP-0313): an account's (its bare JID) or a room's, in
-- the order written (seq).
CREATE TABLE archive (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    archive TEXT NOT NULL,
    -- Its stanza-id (XEP-0359), unique in the archive.
    id TEXT NOT NULL,
    -- When the server took it, in microseconds since 1970 (UTC).
    at BIGINT NOT NULL,
    -- The other party's bare JID.
    peer TEXT NOT NULL,
    message TEXT NOT NULL,
    UNIQUE (archive, id)
);
CREATE INDEX archive_order ON archive (archive, seq);
CREATE INDEX archive_peer ON archive (archive, peer, seq);
CREATE INDEX archive_time ON archive (archive, at);

-- Each user's roster version (RFC 6121 §2.6): one more at every change of
-- its items; no row is version 0.
CREATE TABLE roster_version (
    owner TEXT PRIMARY KEY NOT NULL,
    ver BIGINT NOT NULL
);

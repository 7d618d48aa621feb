-- FAST tokens (XEP-0484): a hash of the proof each token makes and the
-- server's answer, never the token; by account and the client given it,
-- with a hash of the account's keys it was given under.
CREATE TABLE fast_token (
    account TEXT NOT NULL,
    agent TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    proof BYTEA NOT NULL PRIMARY KEY,
    answer BYTEA NOT NULL,
    expires BIGINT NOT NULL,
    keys BYTEA NOT NULL
);
CREATE INDEX fast_token_account ON fast_token (account, agent, expires);

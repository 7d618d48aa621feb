-- The highest count a login with the token sent in TLS early data carried
-- (XEP-0484 §4): one at or below it is a replay, and is refused.
ALTER TABLE fast_token ADD COLUMN early_count INTEGER NOT NULL DEFAULT 0;

-- The version of a room's state among several nodes on one database, as
-- text that sorts as the versions do: a write of an older state than the
-- one kept leaves the kept one (a node's write may come after another
-- node's newer one).
ALTER TABLE room ADD COLUMN version TEXT NOT NULL DEFAULT '';

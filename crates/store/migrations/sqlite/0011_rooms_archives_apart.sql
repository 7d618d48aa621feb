-- Rooms' archives in a table of their own, whose rows are kept in the
-- order of their archive and id (a table without rowid: the key is the
-- table). A room's entries are then side by side on disk, written at the
-- end of the room's range, and read in order from the table itself: one
-- B-tree a row instead of the table and its index by id, and a room's
-- `with` query reads the room's rows in order rather than one row a page
-- through the index (docs/storage.md). Accounts' archives stay in
-- `archive`: written to one a message each, all over, they cost more in
-- such a table.
CREATE TABLE room_archive (
    archive TEXT NOT NULL,
    id TEXT NOT NULL,
    at BIGINT NOT NULL,
    peer TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (archive, id)
) WITHOUT ROWID;
INSERT INTO room_archive (archive, id, at, peer, message)
    SELECT archive, id, at, peer, message FROM archive WHERE archive >= '/' AND archive < '0' ORDER BY archive, id;
DELETE FROM archive WHERE archive >= '/' AND archive < '0';

-- Rooms' archives in a table of their own, as on SQLite (where its rows
-- are kept in the order of their key): the same statements serve both.
CREATE TABLE room_archive (
    archive TEXT NOT NULL,
    id TEXT NOT NULL,
    at BIGINT NOT NULL,
    peer TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (archive, id)
);
INSERT INTO room_archive (archive, id, at, peer, message)
    SELECT archive, id, at, peer, message FROM archive WHERE substr(archive, 1, 1) = '/' ORDER BY archive, id;
DELETE FROM archive WHERE substr(archive, 1, 1) = '/';

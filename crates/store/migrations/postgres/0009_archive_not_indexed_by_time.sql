-- An archive is not indexed by time. An entry's id starts with its time
-- (13 hexadecimal digits of microseconds), so a query by time reads the
-- index by id over the same range; the fourth B-tree each row changed was
-- a quarter of what SQLite's thread spent archiving (docs/storage.md).
DROP INDEX archive_time;

-- A room's archive is not indexed by sender. Each member who spoke since
-- the writer's last commit changed a page of that index of their own, which
-- made most of what archiving a busy room cost (docs/storage.md). Only
-- accounts' archives, named by a bare JID, keep it; rooms' are named by a
-- path (`<mount>#<room>`), which no JID starts like. A room's `with`
-- query reads the order index instead, which carries the sender for that.
--
-- Names that do not start with `/` are those below it or from `0` up.
-- Said with operators: a function in an index's condition would make each
-- insert of many rows keep a statement journal, to undo itself halfway.
DROP INDEX archive_peer;
CREATE INDEX archive_peer ON archive (archive, peer, seq) WHERE (archive < '/' OR archive >= '0');
DROP INDEX archive_order;
CREATE INDEX archive_order ON archive (archive, seq, peer);

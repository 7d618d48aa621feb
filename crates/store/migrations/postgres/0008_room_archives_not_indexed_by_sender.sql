-- A room's archive is not indexed by sender. Each member who spoke since
-- the writer's last commit changed a page of that index of their own, which
-- made most of what archiving a busy room cost (docs/storage.md). Only
-- accounts' archives, named by a bare JID, keep it; rooms' are named by a
-- path (`<mount>#<room>`), which no JID starts like. A room's `with`
-- query reads the order index instead, which carries the sender for that.
DROP INDEX archive_peer;
CREATE INDEX archive_peer ON archive (archive, peer, seq) WHERE substr(archive, 1, 1) <> '/';
DROP INDEX archive_order;
CREATE INDEX archive_order ON archive (archive, seq, peer);

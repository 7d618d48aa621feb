-- An archive is read in the order of its ids, not of its rows: an id is
-- its entry's time and a tail that counts up (`store::IdClock`), so that
-- order is the order the server took its entries in, and a page bounded by
-- time is a range of the index by id read in order, not a range sorted. No
-- index by position is needed: each row changes one B-tree fewer. A room's
-- `with` query reads the index by id and each entry's sender from its row.
DROP INDEX archive_order;
DROP INDEX archive_peer;
CREATE INDEX archive_peer ON archive (archive, peer, id) WHERE (archive < '/' OR archive >= '0');

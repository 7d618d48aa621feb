-- Persistent rooms: each one's state as the protocol that owns it writes it
-- (XMPP's MUC: configuration, affiliations, subject), by room name.
CREATE TABLE room (
    name TEXT PRIMARY KEY NOT NULL,
    state TEXT NOT NULL
);

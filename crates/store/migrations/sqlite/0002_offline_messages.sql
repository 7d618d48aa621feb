-- Messages kept for a user with no available resource (XEP-0160), oldest first (id).
CREATE TABLE offline_message (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX offline_message_user ON offline_message (owner, id);

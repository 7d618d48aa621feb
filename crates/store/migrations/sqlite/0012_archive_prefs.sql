-- Each account's archiving preferences (XEP-0441): what it keeps by
-- default (always, never, roster), and the JIDs it always and never
-- keeps, one a line.
CREATE TABLE archive_prefs (
    account TEXT NOT NULL PRIMARY KEY,
    by_default TEXT NOT NULL,
    always TEXT NOT NULL,
    never TEXT NOT NULL
);

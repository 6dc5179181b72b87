-- Files an import could not read, with the reason, remembered by name and content hash: the same
-- bad content is not read again (wherever it is copied), while a fixed file (new content) is read
-- on the next cycle. `gpusteward import --retry` or the record's deletion reads it again unchanged.
CREATE TABLE quarantined_files (
    name         VARCHAR NOT NULL,     -- the file's name, without its folder
    sha256       VARCHAR NOT NULL,     -- hex digest of the bytes as stored on disk
    path         VARCHAR NOT NULL,     -- where it was last seen
    size         BIGINT NOT NULL,
    reason       VARCHAR NOT NULL,     -- the error, naming the file (and line or record when known)
    error_type   VARCHAR NOT NULL,     -- InputError, OSError, or the unexpected exception's class
    source       VARCHAR NOT NULL,     -- `import` (the command) or the service's job, e.g. import:in
    first_seen   TIMESTAMP NOT NULL,    -- UTC
    last_seen    TIMESTAMP NOT NULL,    -- UTC
    attempts     INTEGER NOT NULL,     -- reads that failed
    PRIMARY KEY (name, sha256)
);

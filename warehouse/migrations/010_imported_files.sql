-- Files the service's folder imports have read, with the signature they had then, written in the
-- same transaction as the file's rows: a restarted service skips what it already stored (or
-- already found broken) and reads a file again only when it changed.
CREATE TABLE imported_files (
    path         VARCHAR PRIMARY KEY,
    mtime        DOUBLE NOT NULL,      -- seconds since the epoch, as os.stat gives it
    size         BIGINT NOT NULL,
    status       VARCHAR NOT NULL,     -- ok | failed
    imported_at  TIMESTAMP NOT NULL
);

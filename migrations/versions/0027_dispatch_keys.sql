-- The key a client gave its dispatch, and the SHA-256 of what it asked for (thread, agents,
-- mode, rounds, proposal): a retry with the same key and the same request returns the first
-- dispatch; the same key with another request is refused. One dispatch per key.
ALTER TABLE dispatches
    ADD COLUMN idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    ADD COLUMN request_sha256 text CHECK (request_sha256 ~ '^[0-9a-f]{64}$'),
    ADD CONSTRAINT dispatches_key_has_request CHECK ((idempotency_key IS NULL) = (request_sha256 IS NULL));

CREATE UNIQUE INDEX dispatches_idempotency_key ON dispatches (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

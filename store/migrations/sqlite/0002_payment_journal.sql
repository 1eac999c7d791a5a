-- svc store, SQLite, version 2: the durable payment journal (engine.Journal)
-- replaces the nonce table; the ledger records the route and transport.
-- Instants are Unix nanoseconds (INTEGER; 0 for none); JSON is TEXT.

-- One row per payment authorization; key is x402.NonceKey(network, asset,
-- payer, nonce). state: 1 reserved, 3 settling, 4 settled, 5 released,
-- 6 failed, 7 unknown (engine.State).
CREATE TABLE payments (
    key           TEXT    PRIMARY KEY,
    network       TEXT    NOT NULL,
    asset         TEXT    NOT NULL,
    payer         TEXT    NOT NULL,
    nonce         TEXT    NOT NULL,
    pay_to        TEXT    NOT NULL,
    amount        TEXT    NOT NULL,
    request_hash  TEXT    NOT NULL,
    resource      TEXT    NOT NULL,
    product       TEXT    NOT NULL,
    transport     TEXT    NOT NULL,
    ref_code      TEXT    NOT NULL,
    request_id    TEXT    NOT NULL,
    x402_version  INTEGER NOT NULL,
    state         INTEGER NOT NULL CHECK (state IN (1, 3, 4, 5, 6, 7)),
    attempts      INTEGER NOT NULL,
    owner         TEXT    NOT NULL,
    lease_until   INTEGER NOT NULL,
    payload       TEXT,                       -- JSON x402.PaymentPayload (v2)
    requirements  TEXT,                       -- JSON x402.PaymentRequirements
    answer        TEXT,                       -- JSON engine.Answer; NULL once forgotten
    answer_until  INTEGER NOT NULL,
    settlement    TEXT,                       -- JSON x402.SettleResponse
    reason        TEXT    NOT NULL,
    keep_until    INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX payments_recover ON payments (state, lease_until);
CREATE INDEX payments_keep_until ON payments (keep_until);
CREATE INDEX payments_answer_until ON payments (answer_until) WHERE answer IS NOT NULL;

-- Engine instances and their last heartbeat.
CREATE TABLE engine_instances (
    owner    TEXT    PRIMARY KEY,
    seen_at  INTEGER NOT NULL
) STRICT;

ALTER TABLE settlements ADD COLUMN route TEXT NOT NULL DEFAULT '';
ALTER TABLE settlements ADD COLUMN transport TEXT NOT NULL DEFAULT '';

DROP TABLE nonces;

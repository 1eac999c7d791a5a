-- The batch-settlement claimer's claim log: one row per claim
-- (claimWithSignature of many channels), written pending before the
-- facilitator sees it, then done or failed; and the latest voucher each
-- channel had claimed.
CREATE TABLE batch_claims (
    id             TEXT    NOT NULL PRIMARY KEY,
    network        TEXT    NOT NULL,
    state          TEXT    NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
    claim_rows     TEXT    NOT NULL,
    authorizer_sig TEXT    NOT NULL,
    tx             TEXT    NOT NULL DEFAULT '',
    reason         TEXT    NOT NULL DEFAULT '',
    attempts       INTEGER NOT NULL DEFAULT 0,
    created_at     BIGINT  NOT NULL,
    updated_at     BIGINT  NOT NULL
);

CREATE INDEX batch_claims_by_state ON batch_claims (network, state, created_at);
CREATE INDEX batch_claims_by_time ON batch_claims (network, created_at);

CREATE TABLE batch_claimed_channels (
    network    TEXT    NOT NULL,
    channel_id TEXT    NOT NULL,
    claim_id   TEXT    NOT NULL,
    claim_row  TEXT    NOT NULL,
    claimed_at BIGINT  NOT NULL,
    PRIMARY KEY (network, channel_id)
);

CREATE INDEX batch_claimed_channels_by_time ON batch_claimed_channels (network, claimed_at);

-- The instance that runs a network's claimer passes, until the lease ends.
CREATE TABLE batch_claimer_leases (
    network     TEXT NOT NULL PRIMARY KEY,
    owner       TEXT NOT NULL,
    lease_until BIGINT  NOT NULL
);

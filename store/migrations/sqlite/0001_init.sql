-- svc store, SQLite, version 1: ledger, referral codes, lounge, payment nonces.
-- Instants are Unix nanoseconds (INTEGER); addresses are lower case.

-- The settlement ledger; one row per settled payment authorization.
CREATE TABLE settlements (
    id          INTEGER PRIMARY KEY,
    network     TEXT    NOT NULL,
    asset       TEXT    NOT NULL,
    payer       TEXT    NOT NULL,
    nonce       TEXT    NOT NULL,
    tool_key    TEXT    NOT NULL,
    amount      TEXT    NOT NULL,            -- atomic units, decimal integer
    tx          TEXT    NOT NULL DEFAULT '',
    ref_code    TEXT,                        -- NULL: no (well-formed) code
    settled_at  INTEGER NOT NULL,
    UNIQUE (network, asset, payer, nonce)
) STRICT;
CREATE INDEX settlements_payer ON settlements (payer, settled_at);
CREATE INDEX settlements_ref_code ON settlements (ref_code, payer) WHERE ref_code IS NOT NULL;

-- Registered referral codes; the code is derived from the owner's address.
CREATE TABLE referrals (
    code        TEXT    PRIMARY KEY,
    owner       TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
) STRICT;

-- The lounge: one self-declared entry per wallet.
CREATE TABLE lounge (
    wallet         TEXT    PRIMARY KEY,
    agent_name     TEXT    NOT NULL,
    role           TEXT    NOT NULL,
    interests      TEXT    NOT NULL,          -- JSON array of strings
    checked_in_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX lounge_checked_in_at ON lounge (checked_in_at);

-- x402 payment nonces: state 1 reserved, 2 settled (x402.NonceState).
CREATE TABLE nonces (
    nonce_key     TEXT    PRIMARY KEY,
    request_hash  TEXT    NOT NULL,
    state         INTEGER NOT NULL CHECK (state IN (1, 2)),
    expires_at    INTEGER NOT NULL,
    reserved_at   INTEGER NOT NULL,
    settled_at    INTEGER,
    response      TEXT                        -- JSON x402.RecordedResponse once settled
) STRICT;
CREATE INDEX nonces_expires_at ON nonces (expires_at);

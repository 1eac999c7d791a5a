-- svc store, PostgreSQL, version 1: ledger, referral codes, lounge, payment nonces.
-- Instants are Unix nanoseconds (BIGINT); addresses are lower case.
-- Objects are created in the first schema of the session's search_path.

-- The settlement ledger; one row per settled payment authorization.
CREATE TABLE settlements (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    network     TEXT   NOT NULL,
    asset       TEXT   NOT NULL,
    payer       TEXT   NOT NULL,
    nonce       TEXT   NOT NULL,
    tool_key    TEXT   NOT NULL,
    amount      NUMERIC(78, 0) NOT NULL CHECK (amount >= 0),  -- atomic units
    tx          TEXT   NOT NULL DEFAULT '',
    ref_code    TEXT,                                        -- NULL: no (well-formed) code
    settled_at  BIGINT NOT NULL,
    UNIQUE (network, asset, payer, nonce)
);
CREATE INDEX settlements_payer ON settlements (payer, settled_at);
CREATE INDEX settlements_ref_code ON settlements (ref_code, payer) WHERE ref_code IS NOT NULL;

-- Registered referral codes; the code is derived from the owner's address.
CREATE TABLE referrals (
    code        TEXT   PRIMARY KEY,
    owner       TEXT   NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL
);

-- The lounge: one self-declared entry per wallet.
CREATE TABLE lounge (
    wallet         TEXT   PRIMARY KEY,
    agent_name     TEXT   NOT NULL,
    role           TEXT   NOT NULL,
    interests      TEXT   NOT NULL,      -- JSON array of strings
    checked_in_at  BIGINT NOT NULL
);
CREATE INDEX lounge_checked_in_at ON lounge (checked_in_at);

-- x402 payment nonces: state 1 reserved, 2 settled (x402.NonceState).
CREATE TABLE nonces (
    nonce_key     TEXT     PRIMARY KEY,
    request_hash  TEXT     NOT NULL,
    state         SMALLINT NOT NULL CHECK (state IN (1, 2)),
    expires_at    BIGINT   NOT NULL,
    reserved_at   BIGINT   NOT NULL,
    settled_at    BIGINT,
    response      TEXT                   -- JSON x402.RecordedResponse once settled
);
CREATE INDEX nonces_expires_at ON nonces (expires_at);

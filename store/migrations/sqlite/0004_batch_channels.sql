-- svc store, SQLite, version 4: the batch-settlement scheme's channel
-- records (batch.ChannelRecord), one per (network, channel id), with the
-- channel's hold (holder until held_until; '' and 0 for none). Amounts are
-- decimal TEXT (uint128 does not fit a 64-bit integer); addresses, the
-- channel id, the salt and the signature lower-case 0x-hex; instants Unix
-- nanoseconds (0 for none). claim_pending is charged > total_claimed,
-- kept by every writer, so that a claimer lists what to claim from an
-- index.
CREATE TABLE batch_channels (
    network               TEXT    NOT NULL,
    channel_id            TEXT    NOT NULL,
    payer                 TEXT    NOT NULL,
    payer_authorizer      TEXT    NOT NULL,
    receiver              TEXT    NOT NULL,
    receiver_authorizer   TEXT    NOT NULL,
    token                 TEXT    NOT NULL,
    withdraw_delay        INTEGER  NOT NULL,
    salt                  TEXT    NOT NULL,
    charged               TEXT    NOT NULL,
    signed_max            TEXT    NOT NULL,
    signature             TEXT    NOT NULL,
    balance               TEXT    NOT NULL,
    total_claimed         TEXT    NOT NULL,
    withdraw_amount       TEXT    NOT NULL,
    withdraw_requested_at INTEGER  NOT NULL,
    refund_nonce          TEXT    NOT NULL,
    synced_at             INTEGER  NOT NULL,
    last_request_at       INTEGER  NOT NULL,
    claim_pending         INTEGER NOT NULL,
    holder                TEXT    NOT NULL,
    held_until            INTEGER  NOT NULL,
    PRIMARY KEY (network, channel_id)
);
CREATE INDEX batch_channels_claimable ON batch_channels (network, last_request_at) WHERE claim_pending = 1;

package store

import (
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// BatchClaimsStore gives the batch-settlement claimer's durable claim log
// (claimer.Log): the tables batch_claims (one row per claim, pending
// before the facilitator sees it, then done or failed) and
// batch_claimed_channels (each channel's latest claimed voucher, written
// in the transaction that records its claim done). Every Store is one.
type BatchClaimsStore interface {
	// BatchClaims returns the claim log kept in this store.
	BatchClaims() claimer.Log
}

var _ BatchClaimsStore = Store(nil)

// claimRowJSON is a claim row as the log keeps it: the row of a
// claimWithSignature, its channel id and the total claimed before.
type claimRowJSON struct {
	ChannelID string             `json:"channelId"`
	Claim     batch.VoucherClaim `json:"claim"`
	Previous  string             `json:"previous,omitempty"`
}

// encodeClaimRow encodes one row.
func encodeClaimRow(r claimer.Row) ([]byte, error) {
	out := claimRowJSON{ChannelID: r.ChannelID.Hex(), Claim: r.Claim().Row()}
	if r.Previous != nil {
		out.Previous = r.Previous.String()
	}
	return json.Marshal(out)
}

// encodeClaimRows encodes the rows of a claim.
func encodeClaimRows(rows []claimer.Row) (string, error) {
	parts := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		b, err := encodeClaimRow(r)
		if err != nil {
			return "", fmt.Errorf("encode row %d: %w", i, err)
		}
		parts[i] = b
	}
	b, err := json.Marshal(parts)
	return string(b), err
}

// decodeClaimRow decodes one row.
func decodeClaimRow(raw []byte) (claimer.Row, error) {
	var in claimRowJSON
	if err := json.Unmarshal(raw, &in); err != nil {
		return claimer.Row{}, err
	}
	claims, err := batch.ParseClaims([]batch.VoucherClaim{in.Claim})
	if err != nil {
		return claimer.Row{}, err
	}
	c := claims[0]
	r := claimer.Row{ChannelID: common.HexToHash(in.ChannelID), Channel: c.Channel, MaxClaimable: c.MaxClaimableAmount, Signature: c.Signature, TotalClaimed: c.TotalClaimed}
	if in.Previous != "" {
		p, ok := new(big.Int).SetString(in.Previous, 10)
		if !ok {
			return claimer.Row{}, fmt.Errorf("previous %q is not a decimal integer", in.Previous)
		}
		r.Previous = p
	}
	return r, nil
}

// decodeClaimRows decodes the rows of a claim.
func decodeClaimRows(s string) ([]claimer.Row, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(s), &parts); err != nil {
		return nil, fmt.Errorf("decode claim rows: %w", err)
	}
	out := make([]claimer.Row, len(parts))
	for i, p := range parts {
		r, err := decodeClaimRow(p)
		if err != nil {
			return nil, fmt.Errorf("decode claim row %d: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}

// checkClaimBegin validates a record for Begin.
func checkClaimBegin(rec claimer.Record) (rows, sig string, err error) {
	if err := claimer.CheckRecord(rec); err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := checkText("network", rec.Network, true); err != nil {
		return "", "", err
	}
	rows, err = encodeClaimRows(rec.Rows)
	if err != nil {
		return "", "", err
	}
	return rows, hexutil.Encode(rec.AuthorizerSignature), nil
}

// checkClaimFinish validates the arguments of Finish.
func checkClaimFinish(id string, state claimer.State, tx, reason string) (string, error) {
	if state != claimer.Done && state != claimer.Failed {
		return "", invalid("state", "must be done or failed")
	}
	if err := checkText("id", id, true); err != nil {
		return "", err
	}
	if err := checkText("tx", tx, false); err != nil {
		return "", err
	}
	if len(reason) > MaxFieldBytes {
		reason = reason[:MaxFieldBytes]
	}
	return reason, nil
}

// claimRecord assembles a record read from batch_claims.
func claimRecord(id, network, state, rows, sig, tx, reason string, attempts int, created, updated int64) (claimer.Record, error) {
	rs, err := decodeClaimRows(rows)
	if err != nil {
		return claimer.Record{}, fmt.Errorf("claim %s: %w", id, err)
	}
	s, err := hexutil.Decode(sig)
	if err != nil {
		return claimer.Record{}, fmt.Errorf("claim %s: authorizer signature: %w", id, err)
	}
	return claimer.Record{ID: id, Network: network, State: claimer.State(state), Rows: rs, AuthorizerSignature: s, Tx: tx, Reason: reason,
		Attempts: attempts, CreatedAt: fromNanos(created), UpdatedAt: fromNanos(updated)}, nil
}

// claimedChannel assembles a row read from batch_claimed_channels.
func claimedChannel(network, claimID, row string, at int64) (claimer.Claimed, error) {
	r, err := decodeClaimRow([]byte(row))
	if err != nil {
		return claimer.Claimed{}, fmt.Errorf("claimed channel of claim %s: %w", claimID, err)
	}
	return claimer.Claimed{Row: r, Network: network, ClaimID: claimID, ClaimedAt: fromNanos(at)}, nil
}

// laterClaimed reports whether an existing claimed row (raw) claims more
// than r: the log keeps each channel's latest, highest claim.
func laterClaimed(raw string, r claimer.Row) bool {
	prev, err := decodeClaimRow([]byte(raw))
	return err == nil && prev.TotalClaimed.Cmp(r.TotalClaimed) > 0
}

// claimLimit bounds a listing.
func claimLimit(limit int) int {
	if limit <= 0 || limit > 100_000 {
		return 100_000
	}
	return limit
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// The payment journal (engine.Journal) shared by both dialects: table
// payments, one row per authorization key; engine_instances, the engine
// heartbeats. Instants are Unix nanoseconds like the rest of the store, with
// 0 standing for the zero time.Time (so the Unix epoch itself reads back as
// zero; no journal instant is ever that). Payload and Requirements are kept
// byte for byte as JSON text; Answer and Settlement as their JSON.

// paymentCols lists the payments columns in the order scanPayment reads and
// paymentRow.args writes them.
const paymentCols = `key, network, asset, payer, nonce, pay_to, amount, request_hash, resource, product,
	transport, ref_code, request_id, x402_version, state, attempts, owner, lease_until, payload, requirements,
	answer, answer_until, settlement, reason, keep_until, created_at, updated_at`

// abandonedReason is the reason Recover gives the reservations it releases.
const abandonedReason = "abandoned"

// The journal's SQL takes every state from engine's transition table:
// sqlStates and sqlState render its sets and states as stored, sqlGuard
// the condition under which a transition moves a row. No statement spells
// a state's value itself.

// sqlStates renders set as an SQL list of stored state values: "(4, 5, 6)".
func sqlStates(set engine.StateSet) string {
	vals := make([]string, 0, len(set.States()))
	for _, st := range set.States() {
		vals = append(vals, sqlState(st))
	}
	return "(" + strings.Join(vals, ", ") + ")"
}

// sqlState renders st as stored.
func sqlState(st engine.State) string { return strconv.Itoa(int(st)) }

// sqlGuard is the condition under which t moves a row of payments (table
// is how a statement names it, "payments" most often): its state is one t
// leaves and, when t's rule needs the holder, its owner is ownerArg (a
// parameter). A rule for which the holder must be gone is the caller's to
// add (sqliteAbandoned, pgAbandoned).
func sqlGuard(t engine.Transition, table, ownerArg string) string {
	rule := t.Rule()
	cond := table + ".state IN " + sqlStates(rule.From)
	if rule.Owner == engine.Holder {
		cond += " AND " + table + ".owner = " + ownerArg
	}
	return cond
}

// sqlSetState is the SET clause that moves a row by t: "state = 3".
func sqlSetState(t engine.Transition) string { return "state = " + sqlState(t.Rule().To) }

// instant encodes t for the journal: Unix nanoseconds, 0 for the zero time.
func instant(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return toNanos(t)
}

// fromInstant decodes an instant written by instant.
func fromInstant(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return fromNanos(n)
}

// paymentRow is a payments row as the drivers bind it; the nullable JSON
// columns are nil or a string.
type paymentRow struct {
	key, network, asset, payer, nonce, payTo, amount, requestHash   string
	resource, product, transport, refCode, requestID, owner, reason string
	x402Version, state, attempts                                    int64
	leaseUntil, answerUntil, keepUntil, createdAt, updatedAt        int64
	payload, requirements, answer, settlement                       any
}

// args returns the row's values in paymentCols order.
func (r *paymentRow) args() []any {
	return []any{r.key, r.network, r.asset, r.payer, r.nonce, r.payTo, r.amount, r.requestHash, r.resource, r.product,
		r.transport, r.refCode, r.requestID, r.x402Version, r.state, r.attempts, r.owner, r.leaseUntil, r.payload, r.requirements,
		r.answer, r.answerUntil, r.settlement, r.reason, r.keepUntil, r.createdAt, r.updatedAt}
}

// encodeRecord validates rec and returns the row that stores it with state
// reserved (what Reserve creates). UpdatedAt defaults to CreatedAt.
func encodeRecord(rec engine.Record) (paymentRow, error) {
	if err := checkText("key", rec.Key, true); err != nil {
		return paymentRow{}, err
	}
	for _, f := range []struct{ name, v string }{
		{"network", rec.Network}, {"asset", rec.Asset}, {"payer", rec.Payer}, {"nonce", rec.Nonce},
		{"payTo", rec.PayTo}, {"amount", rec.Amount}, {"requestHash", rec.RequestHash}, {"resource", rec.Resource},
		{"product", rec.Product}, {"transport", rec.Transport}, {"refCode", rec.RefCode}, {"requestID", rec.RequestID},
		{"owner", rec.Owner},
	} {
		if err := checkText(f.name, f.v, false); err != nil {
			return paymentRow{}, err
		}
	}
	r := paymentRow{
		key: rec.Key, network: rec.Network, asset: rec.Asset, payer: rec.Payer, nonce: rec.Nonce, payTo: rec.PayTo,
		amount: rec.Amount, requestHash: rec.RequestHash, resource: rec.Resource, product: rec.Product,
		transport: rec.Transport, refCode: rec.RefCode, requestID: rec.RequestID, owner: rec.Owner,
		reason:      cleanReason(rec.Reason),
		x402Version: int64(rec.X402Version), state: int64(engine.TransitionReserve.Rule().To), attempts: int64(rec.Attempts),
		leaseUntil: instant(rec.LeaseUntil), answerUntil: instant(rec.AnswerUntil), keepUntil: instant(rec.KeepUntil),
		createdAt: instant(rec.CreatedAt), updatedAt: instant(rec.UpdatedAt),
	}
	if r.updatedAt == 0 {
		r.updatedAt = r.createdAt
	}
	var err error
	if r.payload, err = jsonText("payload", rec.Payload); err != nil {
		return paymentRow{}, err
	}
	if r.requirements, err = jsonText("requirements", rec.Requirements); err != nil {
		return paymentRow{}, err
	}
	if r.answer, err = encodeAnswer(rec.Answer); err != nil {
		return paymentRow{}, err
	}
	if r.settlement, err = encodeSettlement(rec.Settlement); err != nil {
		return paymentRow{}, err
	}
	return r, nil
}

// settlingRow is what the move to settling writes, validated and encoded.
type settlingRow struct {
	answer, payload, requirements any
	answerUntil, leaseUntil       int64
	payer, amount                 string
}

// encodeSettling validates and encodes s.
func encodeSettling(s engine.Settling) (settlingRow, error) {
	if err := checkText("payer", s.Payer, false); err != nil {
		return settlingRow{}, err
	}
	if err := checkText("amount", s.Amount, false); err != nil {
		return settlingRow{}, err
	}
	r := settlingRow{answerUntil: instant(s.AnswerUntil), leaseUntil: instant(s.LeaseUntil), payer: s.Payer, amount: s.Amount}
	var err error
	if r.payload, err = jsonText("payload", s.Payload); err != nil {
		return settlingRow{}, err
	}
	if r.requirements, err = jsonText("requirements", s.Requirements); err != nil {
		return settlingRow{}, err
	}
	if r.answer, err = encodeAnswer(&s.Answer); err != nil {
		return settlingRow{}, err
	}
	return r, nil
}

// jsonText checks that raw is JSON (valid UTF-8, as a text column needs)
// and returns it as a string, or nil when raw is empty.
func jsonText(field string, raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return nil, invalid(field, "must be JSON text")
	}
	return string(raw), nil
}

// encodeAnswer returns the JSON of a, or nil for nil.
func encodeAnswer(a *engine.Answer) (any, error) {
	if a == nil {
		return nil, nil
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, invalid("answer", "cannot be encoded: %v", err)
	}
	return string(raw), nil
}

// encodeSettlement returns the JSON of sr, or nil for nil.
func encodeSettlement(sr *x402.SettleResponse) (any, error) {
	if sr == nil {
		return nil, nil
	}
	raw, err := json.Marshal(sr)
	if err != nil {
		return nil, invalid("settlement", "cannot be encoded: %v", err)
	}
	return string(raw), nil
}

// cleanReason makes a free-text reason storable: valid UTF-8 without NUL,
// at most MaxFieldBytes. A reason is a diagnostic: it is cut rather than
// refused, so that a transition never fails for its wording.
func cleanReason(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= MaxFieldBytes {
		return s
	}
	cut := MaxFieldBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// rowScanner is a single row of either driver (*sql.Row, *sql.Rows,
// pgx.Row, pgx.Rows).
type rowScanner interface {
	Scan(dest ...any) error
}

// paymentRows are result rows of paymentCols, as both drivers return them
// (*sql.Rows, pgx.Rows).
type paymentRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// appendPayments reads every row into out.
func appendPayments(out []engine.Record, rows paymentRows) ([]engine.Record, error) {
	for rows.Next() {
		rec, err := scanPayment(rows)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// scanPayment reads a row of paymentCols.
func scanPayment(row rowScanner) (engine.Record, error) {
	var (
		rec                                                      engine.Record
		x402Version, state, attempts                             int64
		leaseUntil, answerUntil, keepUntil, createdAt, updatedAt int64
		payload, requirements, answer, settlement                sql.NullString
	)
	err := row.Scan(&rec.Key, &rec.Network, &rec.Asset, &rec.Payer, &rec.Nonce, &rec.PayTo, &rec.Amount, &rec.RequestHash,
		&rec.Resource, &rec.Product, &rec.Transport, &rec.RefCode, &rec.RequestID, &x402Version, &state, &attempts,
		&rec.Owner, &leaseUntil, &payload, &requirements, &answer, &answerUntil, &settlement, &rec.Reason,
		&keepUntil, &createdAt, &updatedAt)
	if err != nil {
		return engine.Record{}, err
	}
	rec.X402Version, rec.State, rec.Attempts = int(x402Version), engine.State(state), int(attempts)
	rec.LeaseUntil, rec.AnswerUntil, rec.KeepUntil = fromInstant(leaseUntil), fromInstant(answerUntil), fromInstant(keepUntil)
	rec.CreatedAt, rec.UpdatedAt = fromInstant(createdAt), fromInstant(updatedAt)
	if payload.Valid {
		rec.Payload = []byte(payload.String)
	}
	if requirements.Valid {
		rec.Requirements = []byte(requirements.String)
	}
	if answer.Valid {
		rec.Answer = new(engine.Answer)
		if err := json.Unmarshal([]byte(answer.String), rec.Answer); err != nil {
			return engine.Record{}, fmt.Errorf("decode the answer of %q: %w", rec.Key, err)
		}
	}
	if settlement.Valid {
		rec.Settlement = new(x402.SettleResponse)
		if err := json.Unmarshal([]byte(settlement.String), rec.Settlement); err != nil {
			return engine.Record{}, fmt.Errorf("decode the settlement of %q: %w", rec.Key, err)
		}
	}
	return rec, nil
}

// ledgerSettlement is the ledger entry of a record settled by tx at at.
func ledgerSettlement(rec engine.Record, tx string, at time.Time) (settlementRow, error) {
	if noSale(rec.Amount) {
		return settlementRow{}, errNoSale
	}
	return normalizeSettlement(Settlement{
		Payer: rec.Payer, ToolKey: rec.Product, Amount: rec.Amount, Asset: rec.Asset, Network: rec.Network,
		Transaction: tx, Nonce: rec.Nonce, RefCode: rec.RefCode, Route: rec.Resource, Transport: rec.Transport,
		SettledAt: at,
	})
}

// errNoSale is ledgerSettlement's answer for a payment of no amount.
var errNoSale = errors.New("store: a payment of no amount is no sale")

// noSale reports whether amount (a decimal integer) is zero: a settled
// payment of no amount (a payment operation such as a channel's
// cooperative refund, which the payer asked for and paid nothing by) is
// journaled like any payment but is no sale, and leaves no ledger entry.
func noSale(amount string) bool {
	return strings.Trim(strings.TrimSpace(amount), "0") == "" && strings.TrimSpace(amount) != ""
}

// ledgerLookup normalizes the identity of a ledger entry as Append stores
// it; ok is false when payer is not an address (no entry can match).
func ledgerLookup(network, asset, payer, nonce string) (n, a, p, no string, ok bool) {
	key, err := walletKey("payer", payer)
	if err != nil {
		return "", "", "", "", false
	}
	return strings.TrimSpace(network), strings.ToLower(strings.TrimSpace(asset)), key, strings.ToLower(strings.TrimSpace(nonce)), true
}

// stateError is the engine.ErrState of a transition refused for a row in
// state (found false: no row has the key, which also matches
// engine.ErrNotFound).
func stateError(found bool, state int64) error {
	if !found {
		return fmt.Errorf("%w: %w", engine.ErrState, engine.ErrNotFound)
	}
	return fmt.Errorf("%w: the row is %s or held by another owner", engine.ErrState, engine.State(state))
}

// validLimit reports whether a List or Recover limit asks for rows.
func validLimit(limit int) bool { return limit > 0 }

// allCounts returns a Counts map with every state present.
func allCounts() map[engine.State]int64 {
	out := make(map[engine.State]int64, len(engine.States()))
	for _, s := range engine.States() {
		out[s] = 0
	}
	return out
}

// pruneCursor is where a prune phase's walk of its index has got to: the
// instant (keep_until or answer_until) and the row (SQLite's rowid, or
// PostgreSQL's key) of the last row it changed. The next batch starts
// after it, so that rows the phase passes over (not prunable yet) are read
// once per Prune, not once per batch.
type pruneCursor struct {
	at, row int64
	key     string
}

// startCursor is before every row.
var startCursor = pruneCursor{at: math.MinInt64, row: math.MinInt64}

// max is the later of c and d in (at, row, key) order.
func (c pruneCursor) max(d pruneCursor) pruneCursor {
	switch {
	case d.at != c.at:
		if d.at > c.at {
			return d
		}
	case d.row != c.row:
		if d.row > c.row {
			return d
		}
	case d.key > c.key:
		return d
	}
	return c
}

// prunePhase is one pass of Prune: its statement (arguments: now, the
// cursor's instant and row, the batch size; it returns the instant and
// row of each row it changes) and what a changed row counts as.
type prunePhase struct {
	sql    string
	counts func(n int64) (deleted, forgotten int64)
}

// runPrune is engine.Journal.Prune over phases: batch runs one batch of a
// phase, as one commit of at most o.BatchSize() rows after the cursor, and
// returns how many rows it changed and the cursor past the last. A phase
// ends with a batch short of the batch size. Errors other than batch's are
// prefixed with prefix.
func runPrune(ctx context.Context, prefix string, phases []prunePhase, o engine.PruneOptions,
	batch func(ctx context.Context, ph prunePhase, after pruneCursor) (int64, pruneCursor, error)) (engine.PruneTotals, error) {
	var t engine.PruneTotals
	for _, ph := range phases {
		after := startCursor
		for {
			if err := ctx.Err(); err != nil {
				return t, fmt.Errorf("%s: prune: %w", prefix, err)
			}
			started := time.Now()
			n, next, err := batch(ctx, ph, after)
			if err != nil {
				return t, err
			}
			took := time.Since(started)
			after = next
			deleted, forgotten := ph.counts(n)
			if err := o.Step(&t, deleted, forgotten); err != nil {
				return t, fmt.Errorf("%s: prune: %w", prefix, err)
			}
			if n < int64(o.BatchSize()) {
				break
			}
			if err := o.Pause(ctx, took); err != nil {
				return t, fmt.Errorf("%s: prune: %w", prefix, err)
			}
		}
	}
	return t, nil
}

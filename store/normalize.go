package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
)

// walletKey validates an EVM address and returns its lower-case key.
func walletKey(field, s string) (string, error) {
	cs, ok := evmaddr.ChecksumLoose(s)
	if !ok {
		return "", invalid(field, "must be an EVM address (0x and 40 hex digits)")
	}
	return strings.ToLower(cs), nil
}

// displayAddress turns a stored lower-case address back into its EIP-55
// form; a value that is not an address is returned unchanged.
func displayAddress(key string) string {
	if cs, ok := evmaddr.ChecksumLoose(key); ok {
		return cs
	}
	return key
}

// toNanos encodes an instant as Unix nanoseconds, clamping instants outside
// the int64 range (years 1678–2262).
func toNanos(t time.Time) int64 {
	const maxSec = math.MaxInt64 / int64(time.Second)
	switch s := t.Unix(); {
	case s >= maxSec:
		return math.MaxInt64
	case s <= -maxSec:
		return math.MinInt64
	}
	return t.UnixNano()
}

// fromNanos decodes Unix nanoseconds as a UTC instant.
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// checkText enforces MaxFieldBytes and UTF-8 on a stored text field.
func checkText(field, s string, required bool) error {
	switch {
	case required && s == "":
		return invalid(field, "is required")
	case len(s) > MaxFieldBytes:
		return invalid(field, "is longer than %d bytes", MaxFieldBytes)
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return invalid(field, "must be valid UTF-8 without NUL")
	}
	return nil
}

// isAtomicAmount reports whether s is a decimal integer of 1 to 78 digits
// (the range of a uint256), without sign or leading zeros (except "0").
func isAtomicAmount(s string) bool {
	if s == "" || len(s) > 78 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// settlementRow is a validated, normalized Settlement ready to insert.
type settlementRow struct {
	payer, toolKey, amount, asset, network, tx, nonce string
	route, transport                                  string
	refCode                                           *string // nil: none
	settledAt                                         int64
}

// normalizeSettlement validates s and returns its stored form. Addresses and
// the nonce are lower-cased; the payer must be an EVM address.
func normalizeSettlement(s Settlement) (settlementRow, error) {
	var r settlementRow
	payer, err := walletKey("payer", s.Payer)
	if err != nil {
		return r, err
	}
	r.payer = payer
	r.asset = strings.ToLower(strings.TrimSpace(s.Asset))
	r.network = strings.TrimSpace(s.Network)
	r.nonce = strings.ToLower(strings.TrimSpace(s.Nonce))
	r.toolKey = s.ToolKey
	r.tx = strings.TrimSpace(s.Transaction)
	for _, f := range []struct {
		name, v string
	}{{"asset", r.asset}, {"network", r.network}, {"nonce", r.nonce}, {"toolKey", r.toolKey}} {
		if err := checkText(f.name, f.v, true); err != nil {
			return r, err
		}
	}
	r.route, r.transport = s.Route, s.Transport
	for _, f := range []struct{ name, v string }{{"transaction", r.tx}, {"route", r.route}, {"transport", r.transport}} {
		if err := checkText(f.name, f.v, false); err != nil {
			return r, err
		}
	}
	r.amount = strings.TrimSpace(s.Amount)
	if !isAtomicAmount(r.amount) {
		return r, invalid("amount", "must be a non-negative decimal integer of at most 78 digits")
	}
	if s.SettledAt.IsZero() {
		return r, invalid("settledAt", "is required")
	}
	r.settledAt = toNanos(s.SettledAt)
	if code, ok := club.NormalizeReferralCode(s.RefCode); ok {
		r.refCode = &code
	}
	return r, nil
}

// loungeRow is a validated, normalized LoungeEntry ready to upsert.
type loungeRow struct {
	wallet, agentName, role, interests string // interests as a JSON array
	checkedInAt                        int64
}

// normalizeLounge validates e and returns its stored form.
func normalizeLounge(e club.LoungeEntry) (loungeRow, error) {
	var r loungeRow
	w, err := walletKey("wallet", e.Wallet)
	if err != nil {
		return r, err
	}
	if err := checkText("agentName", e.AgentName, false); err != nil {
		return r, err
	}
	if err := checkText("role", e.Role, false); err != nil {
		return r, err
	}
	if len(e.Interests) > club.MaxInterests {
		return r, invalid("interests", "has more than %d items", club.MaxInterests)
	}
	interests := e.Interests
	if interests == nil {
		interests = []string{}
	}
	for i, s := range interests {
		if err := checkText(fmt.Sprintf("interests[%d]", i), s, false); err != nil {
			return r, err
		}
	}
	if e.CheckedInAt.IsZero() {
		return r, invalid("checkedInAt", "is required")
	}
	raw, err := json.Marshal(interests)
	if err != nil {
		return r, fmt.Errorf("store: encode interests: %w", err)
	}
	return loungeRow{wallet: w, agentName: e.AgentName, role: e.Role, interests: string(raw), checkedInAt: toNanos(e.CheckedInAt)}, nil
}

// loungeRows is what a result set of either driver offers (pgx.Rows,
// *sql.Rows).
type loungeRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanLounge appends the lounge rows (wallet, agent_name, role, interests,
// checked_in_at) of rows to out.
func scanLounge(rows loungeRows, out []club.LoungeEntry) ([]club.LoungeEntry, error) {
	for rows.Next() {
		var w, name, role, interests string
		var at int64
		if err := rows.Scan(&w, &name, &role, &interests, &at); err != nil {
			return out, fmt.Errorf("list: %w", err)
		}
		e, err := loungeEntry(w, name, role, interests, at)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// loungeEntry rebuilds a LoungeEntry from its stored form.
func loungeEntry(wallet, agentName, role, interests string, at int64) (club.LoungeEntry, error) {
	e := club.LoungeEntry{Wallet: displayAddress(wallet), AgentName: agentName, Role: role, CheckedInAt: fromNanos(at)}
	if err := json.Unmarshal([]byte(interests), &e.Interests); err != nil {
		return e, fmt.Errorf("store: decode lounge interests of %s: %w", e.Wallet, err)
	}
	if e.Interests == nil {
		e.Interests = []string{}
	}
	return e, nil
}

// loungeLimit maps a requested list size to 1..club.LoungeCap.
func loungeLimit(limit int) int {
	if limit < 1 || limit > club.LoungeCap {
		return club.LoungeCap
	}
	return limit
}

// withTimeout bounds ctx by the store's operation timeout.
func (c *config) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opTimeout)
}

// args returns the row's values in the order of the settlements columns
// network, asset, payer, nonce, tool_key, amount, tx, ref_code, route,
// transport, settled_at.
func (r *settlementRow) args() []any {
	return []any{r.network, r.asset, r.payer, r.nonce, r.toolKey, r.amount, r.tx, r.refCode, r.route, r.transport, r.settledAt}
}

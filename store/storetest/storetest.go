// Package storetest is the conformance suite of package store: every
// store.Store implementation (SQLite, PostgreSQL, any future one) must pass
// Run, and every DSN-opened implementation RunOpen. The suite is the
// executable definition of the store's behaviour; the implementations'
// tests only say how to open a fresh store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/engine/journaltest"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// Opener opens a fresh, empty store for one test with the given options,
// and registers its Close with t.Cleanup.
type Opener func(t *testing.T, opts ...store.Option) store.Store

// Clock is a manual clock for store.WithClock. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Wallet returns a deterministic test wallet address (lower case) numbered i.
func Wallet(i int) string { return fmt.Sprintf("0x%040x", 0xa11ce000+i) }

// Test constants shared by the cases.
const (
	usdc    = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" // USDC on Base, checksummed
	base    = "eip155:8453"
	waitFor = 30 * time.Second // bound of every concurrent case
)

// base0 is a fixed instant with a nanosecond part, so that the suite checks
// exact round trips.
var base0 = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// settlement returns a settlement of payer for tool with the given nonce
// number, amount and referral code, settled at at.
func settlement(payer, tool string, nonce int, amount, ref string, at time.Time) store.Settlement {
	return store.Settlement{
		Payer: payer, ToolKey: tool, Amount: amount, Asset: usdc, Network: base,
		Transaction: fmt.Sprintf("0x%064x", nonce), Nonce: fmt.Sprintf("0x%064x", nonce),
		RefCode: ref, SettledAt: at,
	}
}

// Run runs the conformance suite against stores made by open, including
// journaltest.Run for the engine.Journal side.
func Run(t *testing.T, open Opener) {
	t.Run("Ledger", func(t *testing.T) { runLedger(t, open) })
	t.Run("Referrals", func(t *testing.T) { runReferrals(t, open) })
	t.Run("Lounge", func(t *testing.T) { runLounge(t, open) })
	t.Run("Journal", func(t *testing.T) {
		journaltest.Run(t, func(t *testing.T) engine.Journal { return open(t) })
	})
	t.Run("JournalStore", func(t *testing.T) { runJournalStore(t, open) })
	t.Run("Housekeeping", func(t *testing.T) { runHousekeeping(t, open) })
	t.Run("Settlements", func(t *testing.T) { runSettlements(t, open) })
}

// runSettlements checks the ledger's period reader and the schema check.
func runSettlements(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema on a fresh store: %v", err)
	}
	ref, _ := club.ReferralCode(Wallet(9))
	rows := []store.Settlement{
		settlement(Wallet(1), "risk-levels", 1, "3400", ref, base0),
		settlement(Wallet(2), "tick-pnl", 2, "123456789012345678901234567890", "", base0.Add(time.Hour)),
		settlement(Wallet(1), "risk-levels", 3, "5000", "", base0.Add(25*time.Hour)),
		settlement(Wallet(3), "jwt-decode", 4, "1", "", base0.Add(48*time.Hour)),
	}
	rows[0].Route, rows[0].Transport = "POST /api/risk-levels", "mcp"
	rows[1].Transaction = "local-dev:abc"
	// Appended out of order: the reader sorts by settlement time.
	for _, i := range []int{3, 1, 0, 2} {
		mustAppend(t, s, rows[i], true)
	}
	got, err := collect(ctx, s, base0, base0.Add(25*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Settlements of the first day: %d rows, want 2: %+v", len(got), got)
	}
	for i, g := range got {
		w := rows[i]
		w.Payer = checksum(t, w.Payer)
		w.Asset = strings.ToLower(w.Asset)
		if !g.SettledAt.Equal(w.SettledAt) || g.SettledAt.Location() != time.UTC {
			t.Fatalf("row %d settled at %v, want %v (UTC)", i, g.SettledAt, w.SettledAt)
		}
		g.SettledAt = w.SettledAt
		if g != ledger.Settlement(w) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	if got, err = collect(ctx, s, base0.Add(25*time.Hour), base0.Add(48*time.Hour+1)); err != nil || len(got) != 2 || got[0].Nonce != rows[2].Nonce {
		t.Fatalf("Settlements of the later days: %v %+v", err, got)
	}
	if got, err = collect(ctx, s, base0.Add(-time.Hour), base0); err != nil || len(got) != 0 {
		t.Fatalf("Settlements of an empty period: %v %#v", err, got)
	}
	if _, err := collect(ctx, s, base0, base0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Settlements of an empty interval: %v, want ErrInvalid", err)
	}

	// Pages: rows of one instant and of several, read 3 at a time, come
	// once each, in order, whatever the page boundaries; yield's error
	// stops the read and is returned.
	p := open(t, store.WithReadPage(3))
	var want []string
	for i := range 11 {
		at := base0.Add(time.Duration(i/4) * time.Minute) // four rows an instant
		st := settlement(Wallet(i%5+1), "risk-levels", 100+i, "1", "", at)
		mustAppend(t, p, st, true)
		want = append(want, st.Nonce)
	}
	got, err = collect(ctx, p, base0, base0.Add(time.Hour))
	if err != nil || len(got) != len(want) {
		t.Fatalf("paged read: %v, %d rows, want %d", err, len(got), len(want))
	}
	for i, g := range got {
		if g.Nonce != want[i] {
			t.Fatalf("paged read row %d: nonce %s, want %s", i, g.Nonce, want[i])
		}
	}
	stop := errors.New("enough")
	n := 0
	if err := p.EachSettlement(ctx, base0, base0.Add(time.Hour), func(ledger.Settlement) error {
		n++
		if n == 5 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 5 {
		t.Fatalf("a yield error after 5 rows: %v after %d rows", err, n)
	}
}

// collect reads the settlements of [from, to) into a slice.
func collect(ctx context.Context, s store.Store, from, to time.Time) ([]ledger.Settlement, error) {
	var out []ledger.Settlement
	err := s.EachSettlement(ctx, from, to, func(st ledger.Settlement) error {
		out = append(out, st)
		return nil
	})
	return out, err
}

func runLedger(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("AppendIsIdempotent", func(t *testing.T) {
		s := open(t)
		a := settlement(Wallet(1), "risk_levels", 1, "3400", "", base0)
		mustAppend(t, s, a, true)
		mustAppend(t, s, a, false)
		// The same authorization spelled differently is the same payment,
		// even with other details: the first record is kept.
		b := a
		b.Payer, b.Asset, b.Nonce = strings.ToUpper(a.Payer[2:]), strings.ToLower(a.Asset), strings.ToUpper(a.Nonce[2:])
		b.Payer, b.Nonce = "0x"+b.Payer, "0x"+b.Nonce
		b.ToolKey, b.Amount, b.SettledAt = "other_tool", "1", base0.Add(time.Hour)
		mustAppend(t, s, b, false)
		// Another nonce, asset or network is another payment.
		c := settlement(Wallet(1), "risk_levels", 2, "3400", "", base0.Add(time.Minute))
		mustAppend(t, s, c, true)
		d := a
		d.Network = "eip155:84532"
		mustAppend(t, s, d, true)
		ps := mustPayerStats(t, s, Wallet(1))
		if ps.PaidCalls != 3 || ps.Tools != 1 || !ps.FirstPaid.Equal(base0) || !ps.LastPaid.Equal(base0.Add(time.Minute)) {
			t.Fatalf("PayerStats = %+v, want 3 calls of 1 tool from %v to %v", ps, base0, base0.Add(time.Minute))
		}
	})

	t.Run("ConcurrentDuplicateAppends", func(t *testing.T) {
		s := open(t)
		a := settlement(Wallet(2), "risk_levels", 7, "3400", "", base0)
		const n = 30
		var inserted atomic.Int64
		errs := journaltest.Concurrently(n, waitFor, func(int) error {
			ok, err := s.Append(ctx, a)
			if ok {
				inserted.Add(1)
			}
			return err
		})
		for _, err := range errs {
			t.Errorf("Append: %v", err)
		}
		if inserted.Load() != 1 {
			t.Fatalf("%d appends reported inserted, want exactly 1", inserted.Load())
		}
		if ps := mustPayerStats(t, s, Wallet(2)); ps.PaidCalls != 1 {
			t.Fatalf("PaidCalls = %d after duplicate appends, want 1", ps.PaidCalls)
		}
	})

	t.Run("AppendValidates", func(t *testing.T) {
		s := open(t)
		good := settlement(Wallet(3), "risk_levels", 1, "3400", "", base0)
		for name, mutate := range map[string]func(*store.Settlement){
			"payer not an address":  func(x *store.Settlement) { x.Payer = "alice" },
			"payer too short":       func(x *store.Settlement) { x.Payer = "0x1234" },
			"negative amount":       func(x *store.Settlement) { x.Amount = "-1" },
			"fractional amount":     func(x *store.Settlement) { x.Amount = "1.5" },
			"empty amount":          func(x *store.Settlement) { x.Amount = "" },
			"leading zero amount":   func(x *store.Settlement) { x.Amount = "0100" },
			"79-digit amount":       func(x *store.Settlement) { x.Amount = strings.Repeat("9", 79) },
			"missing nonce":         func(x *store.Settlement) { x.Nonce = "" },
			"missing network":       func(x *store.Settlement) { x.Network = " " },
			"missing asset":         func(x *store.Settlement) { x.Asset = "" },
			"missing tool":          func(x *store.Settlement) { x.ToolKey = "" },
			"oversized tool":        func(x *store.Settlement) { x.ToolKey = strings.Repeat("t", store.MaxFieldBytes+1) },
			"invalid UTF-8 tool":    func(x *store.Settlement) { x.ToolKey = "\xff" },
			"zero settlement time":  func(x *store.Settlement) { x.SettledAt = time.Time{} },
			"oversized transaction": func(x *store.Settlement) { x.Transaction = strings.Repeat("f", store.MaxFieldBytes+1) },
		} {
			bad := good
			mutate(&bad)
			if ok, err := s.Append(ctx, bad); !errors.Is(err, store.ErrInvalid) || ok {
				t.Errorf("%s: Append = %v, %v; want ErrInvalid", name, ok, err)
			}
		}
		if tot := mustTotals(t, s); tot.SettledCalls != 0 {
			t.Fatalf("refused settlements were recorded: %+v", tot)
		}
		// A malformed referral code never stops a settled payment from
		// being recorded; it is recorded as none.
		odd := good
		odd.RefCode = "not a code!"
		mustAppend(t, s, odd, true)
		zero := settlement(Wallet(3), "risk_levels", 2, "0", "", base0)
		mustAppend(t, s, zero, true)
	})

	t.Run("PayerStats", func(t *testing.T) {
		s := open(t)
		if ps := mustPayerStats(t, s, Wallet(4)); ps.PaidCalls != 0 || ps.Tools != 0 || !ps.FirstPaid.IsZero() || !ps.LastPaid.IsZero() {
			t.Fatalf("PayerStats of a wallet that never paid = %+v, want zeros", ps)
		}
		t1, t2, t3 := base0, base0.Add(90*time.Second+1), base0.Add(26*time.Hour+7)
		// Appended out of order: first and last come from SettledAt.
		mustAppend(t, s, settlement(Wallet(4), "regex_test", 3, "100", "", t2), true)
		mustAppend(t, s, settlement(Wallet(4), "risk_levels", 1, "3400", "", t3), true)
		mustAppend(t, s, settlement(Wallet(4), "risk_levels", 2, "3400", "", t1), true)
		mustAppend(t, s, settlement(Wallet(5), "risk_levels", 4, "3400", "", base0.Add(-time.Hour)), true)
		ps := mustPayerStats(t, s, "0X"+strings.ToUpper(Wallet(4)[2:])) // any spelling
		want := club.PayerStats{Wallet: checksum(t, Wallet(4)), PaidCalls: 3, Tools: 2, FirstPaid: t1, LastPaid: t3}
		if ps.Wallet != want.Wallet || ps.PaidCalls != 3 || ps.Tools != 2 || !ps.FirstPaid.Equal(t1) || !ps.LastPaid.Equal(t3) {
			t.Fatalf("PayerStats = %+v, want %+v", ps, want)
		}
		if _, err := s.PayerStats(ctx, "nobody"); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("PayerStats(nobody) err = %v, want ErrInvalid", err)
		}
	})

	t.Run("ReferralStats", func(t *testing.T) {
		s := open(t)
		owner := Wallet(10)
		ref, err := s.PutReferral(ctx, owner, base0)
		if err != nil {
			t.Fatalf("PutReferral: %v", err)
		}
		other, err := s.PutReferral(ctx, Wallet(11), base0)
		if err != nil {
			t.Fatalf("PutReferral: %v", err)
		}
		code := ref.Code
		at := base0.Add(time.Minute)
		mustAppend(t, s, settlement(Wallet(20), "risk_levels", 1, "3400", code, at), true)
		mustAppend(t, s, settlement(Wallet(20), "risk_levels", 2, "3400", strings.ToLower(code), at), true) // codes are case-insensitive
		mustAppend(t, s, settlement(Wallet(21), "regex_test", 3, "100", " "+code+" ", at), true)
		mustAppend(t, s, settlement(owner, "risk_levels", 4, "3400", code, at), true) // self-referral: ignored
		mustAppend(t, s, settlement(Wallet(22), "risk_levels", 5, "3400", other.Code, at), true)
		mustAppend(t, s, settlement(Wallet(23), "risk_levels", 6, "3400", "", at), true)
		rs, err := s.ReferralStats(ctx, strings.ToLower(code))
		if err != nil {
			t.Fatalf("ReferralStats: %v", err)
		}
		if !rs.Registered || rs.Code != code || rs.Owner != checksum(t, owner) || !rs.CreatedAt.Equal(base0) ||
			rs.ReferredPayers != 2 || rs.PaidCalls != 3 {
			t.Fatalf("ReferralStats = %+v, want %s owned by %s: 2 payers, 3 calls", rs, code, checksum(t, owner))
		}
		if rs, err := s.ReferralStats(ctx, other.Code); err != nil || rs.ReferredPayers != 1 || rs.PaidCalls != 1 {
			t.Fatalf("ReferralStats(other) = %+v, %v; want 1 payer, 1 call", rs, err)
		}
		// A well-formed code nobody registered converts nothing, even if
		// settlements carried it.
		unreg, _ := club.ReferralCode(Wallet(12))
		mustAppend(t, s, settlement(Wallet(24), "risk_levels", 7, "3400", unreg, at), true)
		for _, c := range []string{unreg, "bogus", ""} {
			rs, err := s.ReferralStats(ctx, c)
			if err != nil || rs.Registered || rs.ReferredPayers != 0 || rs.PaidCalls != 0 || rs.Owner != "" {
				t.Fatalf("ReferralStats(%q) = %+v, %v; want unregistered and zero", c, rs, err)
			}
		}
		// Registering later counts the earlier settlements (computed at
		// query time).
		if _, err := s.PutReferral(ctx, Wallet(12), at); err != nil {
			t.Fatalf("PutReferral: %v", err)
		}
		if rs, err := s.ReferralStats(ctx, unreg); err != nil || !rs.Registered || rs.ReferredPayers != 1 || rs.PaidCalls != 1 {
			t.Fatalf("ReferralStats after registration = %+v, %v; want 1 payer, 1 call", rs, err)
		}
	})

	t.Run("Totals", func(t *testing.T) {
		s := open(t)
		tot := mustTotals(t, s)
		if tot.SettledCalls != 0 || tot.Payers != 0 || tot.ReferralCodes != 0 || len(tot.Revenue) != 0 {
			t.Fatalf("Totals of an empty store = %+v, want zeros", tot)
		}
		big78 := strings.Repeat("9", 78)
		mustAppend(t, s, settlement(Wallet(30), "a", 1, "9223372036854775807", "", base0), true) // max int64
		mustAppend(t, s, settlement(Wallet(30), "a", 2, "9223372036854775807", "", base0), true)
		mustAppend(t, s, settlement(Wallet(31), "a", 3, "123456789", "", base0), true)
		x := settlement(Wallet(31), "a", 4, big78, "", base0)
		x.Asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" // another asset
		mustAppend(t, s, x, true)
		y := settlement(Wallet(32), "a", 5, "1", "", base0)
		y.Asset = x.Asset
		mustAppend(t, s, y, true)
		if _, err := s.PutReferral(ctx, Wallet(30), base0); err != nil {
			t.Fatalf("PutReferral: %v", err)
		}
		tot = mustTotals(t, s)
		want := store.Totals{SettledCalls: 5, Payers: 3, ReferralCodes: 1, Revenue: []store.Revenue{
			{Network: base, Asset: strings.ToLower(x.Asset), Calls: 2, Amount: "1" + strings.Repeat("0", 78)},
			{Network: base, Asset: strings.ToLower(usdc), Calls: 3, Amount: "18446744073833008403"},
		}}
		if !reflect.DeepEqual(tot, want) {
			t.Fatalf("Totals = %+v\nwant     %+v", tot, want)
		}
	})
}

func runReferrals(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("PutAndGet", func(t *testing.T) {
		s := open(t)
		w := Wallet(40)
		code, ok := club.ReferralCode(w)
		if !ok {
			t.Fatalf("ReferralCode(%s) not ok", w)
		}
		if _, found, err := s.Referral(ctx, code); err != nil || found {
			t.Fatalf("Referral before PutReferral: found=%v err=%v", found, err)
		}
		if _, found, err := s.ReferralByOwner(ctx, w); err != nil || found {
			t.Fatalf("ReferralByOwner before PutReferral: found=%v err=%v", found, err)
		}
		first, err := s.PutReferral(ctx, w, base0)
		if err != nil {
			t.Fatalf("PutReferral: %v", err)
		}
		want := club.Referral{Code: code, Owner: checksum(t, w), CreatedAt: base0}
		if !sameReferral(first, want) {
			t.Fatalf("PutReferral = %+v, want %+v", first, want)
		}
		// Idempotent whatever the spelling; the first registration wins.
		again, err := s.PutReferral(ctx, checksum(t, w), base0.Add(time.Hour))
		if err != nil || !sameReferral(again, want) {
			t.Fatalf("second PutReferral = %+v, %v; want %+v", again, err, want)
		}
		for _, c := range []string{code, strings.ToLower(code), " " + code + "\n"} {
			got, found, err := s.Referral(ctx, c)
			if err != nil || !found || !sameReferral(got, want) {
				t.Fatalf("Referral(%q) = %+v, %v, %v; want %+v", c, got, found, err, want)
			}
		}
		got, found, err := s.ReferralByOwner(ctx, "0x"+strings.ToUpper(w[2:]))
		if err != nil || !found || !sameReferral(got, want) {
			t.Fatalf("ReferralByOwner = %+v, %v, %v; want %+v", got, found, err, want)
		}
		if _, found, err := s.Referral(ctx, "not-a-code"); err != nil || found {
			t.Fatalf("Referral(malformed) found=%v err=%v, want not found", found, err)
		}
		if _, err := s.PutReferral(ctx, "0xnope", base0); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("PutReferral(bad wallet) err = %v, want ErrInvalid", err)
		}
		if _, err := s.PutReferral(ctx, Wallet(41), time.Time{}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("PutReferral(zero time) err = %v, want ErrInvalid", err)
		}
		if _, _, err := s.ReferralByOwner(ctx, "0xnope"); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("ReferralByOwner(bad wallet) err = %v, want ErrInvalid", err)
		}
	})

	t.Run("ConcurrentPuts", func(t *testing.T) {
		s := open(t)
		w := Wallet(42)
		results := make([]club.Referral, 20)
		errs := journaltest.Concurrently(len(results), waitFor, func(i int) error {
			var err error
			results[i], err = s.PutReferral(ctx, w, base0.Add(time.Duration(i)*time.Second))
			return err
		})
		for _, err := range errs {
			t.Fatalf("PutReferral: %v", err)
		}
		for _, r := range results[1:] {
			if !sameReferral(r, results[0]) {
				t.Fatalf("concurrent PutReferral disagree: %+v vs %+v", r, results[0])
			}
		}
		if tot := mustTotals(t, s); tot.ReferralCodes != 1 {
			t.Fatalf("ReferralCodes = %d, want 1", tot.ReferralCodes)
		}
	})
}

func runLounge(t *testing.T, open Opener) {
	ctx := context.Background()
	entry := func(i int, name string, at time.Time) club.LoungeEntry {
		return club.LoungeEntry{Wallet: Wallet(i), AgentName: name, Role: "trader", Interests: []string{"gold", "risk"}, CheckedInAt: at}
	}

	t.Run("LatestWins", func(t *testing.T) {
		s := open(t)
		now := base0
		mustCheckIn(t, s, entry(1, "first", now.Add(-2*time.Hour)))
		later := entry(1, "second", now.Add(-time.Hour))
		later.Wallet = checksum(t, later.Wallet) // any spelling is the same wallet
		later.Interests = nil
		later.Role = ""
		mustCheckIn(t, s, later)
		mustCheckIn(t, s, entry(1, "stale", now.Add(-3*time.Hour))) // arrives late, is older: ignored
		got := mustLounge(t, s, now, 0)
		want := []club.LoungeEntry{{Wallet: checksum(t, Wallet(1)), AgentName: "second", Role: "", Interests: []string{}, CheckedInAt: now.Add(-time.Hour)}}
		if !sameEntries(got, want) {
			t.Fatalf("Lounge = %+v, want %+v", got, want)
		}
	})

	t.Run("NewestFirstAndLimit", func(t *testing.T) {
		s := open(t)
		now := base0
		mustCheckIn(t, s, entry(1, "a", now.Add(-3*time.Minute)))
		mustCheckIn(t, s, entry(2, "b", now.Add(-1*time.Minute)))
		mustCheckIn(t, s, entry(4, "d", now.Add(-2*time.Minute)))
		mustCheckIn(t, s, entry(3, "c", now.Add(-2*time.Minute))) // tie with d: by wallet
		got := mustLounge(t, s, now, 10)
		var names []string
		for _, e := range got {
			names = append(names, e.AgentName)
		}
		if strings.Join(names, ",") != "b,c,d,a" {
			t.Fatalf("order = %v, want b,c,d,a", names)
		}
		if got[0].Interests[1] != "risk" || got[0].Role != "trader" || !got[0].CheckedInAt.Equal(now.Add(-time.Minute)) {
			t.Fatalf("entry did not round-trip: %+v", got[0])
		}
		if got := mustLounge(t, s, now, 2); len(got) != 2 || got[0].AgentName != "b" || got[1].AgentName != "c" {
			t.Fatalf("Lounge(limit 2) = %+v", got)
		}
	})

	t.Run("CappedAtNewest100", func(t *testing.T) {
		s := open(t)
		now := base0
		const n = club.LoungeCap + 7
		for i := range n {
			mustCheckIn(t, s, entry(i, fmt.Sprint(i), now.Add(-time.Hour+time.Duration(i)*time.Second)))
		}
		for _, limit := range []int{0, -1, club.LoungeCap, club.LoungeCap + 1, 1000} {
			got := mustLounge(t, s, now, limit)
			if len(got) != club.LoungeCap || got[0].AgentName != fmt.Sprint(n-1) || got[len(got)-1].AgentName != fmt.Sprint(n-club.LoungeCap) {
				t.Fatalf("Lounge(limit %d): %d entries from %s to %s; want the newest %d", limit, len(got), got[0].AgentName, got[len(got)-1].AgentName, club.LoungeCap)
			}
		}
		// The oldest are gone for good, not merely hidden: a newer entry
		// dropping out of the cap later does not bring them back.
		tot := 0
		for _, e := range mustLounge(t, s, now, 0) {
			if e.AgentName == "0" {
				t.Fatal("the oldest entry survived the cap")
			}
			tot++
		}
		if tot != club.LoungeCap {
			t.Fatalf("%d entries, want %d", tot, club.LoungeCap)
		}
	})

	t.Run("ExpireAfter24h", func(t *testing.T) {
		s := open(t)
		now := base0
		mustCheckIn(t, s, entry(1, "edge", now.Add(-club.LoungeTTL)))                // exactly 24 h: expired
		mustCheckIn(t, s, entry(2, "old", now.Add(-club.LoungeTTL-time.Nanosecond))) // older: expired
		mustCheckIn(t, s, entry(3, "fresh", now.Add(-club.LoungeTTL+time.Nanosecond)))
		mustCheckIn(t, s, entry(4, "future", now.Add(time.Minute))) // clock skew: listed
		got := mustLounge(t, s, now, 0)
		if len(got) != 2 || got[0].AgentName != "future" || got[1].AgentName != "fresh" {
			t.Fatalf("Lounge = %+v, want future, fresh", got)
		}
		// Expired entries were deleted, not merely hidden.
		got = mustLounge(t, s, now.Add(-time.Hour), 0)
		if len(got) != 2 {
			t.Fatalf("expired entries came back: %+v", got)
		}
	})

	t.Run("CheckInValidates", func(t *testing.T) {
		s := open(t)
		good := entry(1, "ok", base0)
		for name, mutate := range map[string]func(*club.LoungeEntry){
			"wallet":         func(e *club.LoungeEntry) { e.Wallet = "me" },
			"time":           func(e *club.LoungeEntry) { e.CheckedInAt = time.Time{} },
			"name too long":  func(e *club.LoungeEntry) { e.AgentName = strings.Repeat("n", store.MaxFieldBytes+1) },
			"role not UTF-8": func(e *club.LoungeEntry) { e.Role = "\xc3" },
			"interest NUL":   func(e *club.LoungeEntry) { e.Interests = []string{"a\x00b"} },
			"too many interests": func(e *club.LoungeEntry) {
				e.Interests = make([]string, club.MaxInterests+1)
			},
		} {
			bad := good
			mutate(&bad)
			if err := s.CheckIn(ctx, bad); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: CheckIn err = %v, want ErrInvalid", name, err)
			}
		}
		if got := mustLounge(t, s, base0, 0); len(got) != 0 {
			t.Fatalf("refused entries were kept: %+v", got)
		}
	})

	t.Run("ConcurrentCheckIns", func(t *testing.T) {
		s := open(t)
		errs := journaltest.Concurrently(40, waitFor, func(i int) error {
			return s.CheckIn(ctx, entry(i%10, fmt.Sprint(i), base0.Add(time.Duration(i)*time.Millisecond)))
		})
		for _, err := range errs {
			t.Fatalf("CheckIn: %v", err)
		}
		got := mustLounge(t, s, base0.Add(time.Second), 0)
		if len(got) != 10 {
			t.Fatalf("%d entries, want one per wallet (10)", len(got))
		}
		for _, e := range got { // latest wins: i in 30..39
			if i, err := strconv.Atoi(e.AgentName); err != nil || i < 30 {
				t.Fatalf("entry %+v is not its wallet's latest", e)
			}
		}
	})
}

func runHousekeeping(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("PruneAll", func(t *testing.T) {
		s := open(t)
		keep := payment(1, "owner")
		keep.KeepUntil = base0.Add(time.Hour)
		gone := payment(2, "owner")
		gone.KeepUntil = base0
		forget := payment(3, "owner")
		forget.KeepUntil = base0.Add(time.Hour)
		for _, r := range []engine.Reservation{keep, gone, forget} {
			mustReserve(t, s, r)
		}
		mustSettle(t, s, forget, base0.Add(-time.Minute))
		mustSettle(t, s, gone, base0.Add(time.Minute))
		mustCheckIn(t, s, club.LoungeEntry{Wallet: Wallet(1), CheckedInAt: base0.Add(-25 * time.Hour)})
		mustCheckIn(t, s, club.LoungeEntry{Wallet: Wallet(2), CheckedInAt: base0.Add(-23 * time.Hour)})
		p, err := s.PruneAll(ctx, base0.Add(time.Nanosecond))
		if err != nil {
			t.Fatalf("PruneAll: %v", err)
		}
		if p != (store.Pruned{Payments: 1, Answers: 1, LoungeEntries: 1}) {
			t.Fatalf("PruneAll = %+v, want 1 payment, 1 answer and 1 lounge entry", p)
		}
		if _, err := s.Get(ctx, gone.Key); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("pruned row still there: Get err = %v", err)
		}
		if r, err := s.Get(ctx, forget.Key); err != nil || r.Answer != nil || r.State != engine.StateSettled {
			t.Fatalf("row whose answer was forgotten = %+v, %v", r, err)
		}
		if r, err := s.Get(ctx, keep.Key); err != nil || r.State != engine.StateReserved {
			t.Fatalf("live row = %+v, %v; want it kept", r, err)
		}
		// The ledger is kept whatever the journal forgets.
		if ps := mustPayerStats(t, s, gone.Payer); ps.PaidCalls != 1 {
			t.Fatalf("PayerStats after PruneAll = %+v, want the settlement kept", ps)
		}
	})

	t.Run("PingDialectAndCanceledContext", func(t *testing.T) {
		s := open(t)
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if d := s.Dialect(); d != "sqlite" && d != "postgres" {
			t.Fatalf("Dialect = %q", d)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Append(canceled, settlement(Wallet(1), "a", 1, "1", "", base0)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Append with a canceled context err = %v, want context.Canceled", err)
		}
		if _, err := s.Reserve(canceled, payment(1, "o"), 3); !errors.Is(err, context.Canceled) {
			t.Fatalf("Reserve with a canceled context err = %v, want context.Canceled", err)
		}
		if err := s.Heartbeat(canceled, "o", base0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Heartbeat with a canceled context err = %v, want context.Canceled", err)
		}
		// The store is still usable afterwards.
		mustAppend(t, s, settlement(Wallet(1), "a", 1, "1", "", base0), true)
	})

	t.Run("Close", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := s.Ping(ctx); err == nil {
			t.Fatal("Ping after Close succeeded")
		}
		if _, err := s.Reserve(ctx, payment(1, "o"), 3); err == nil || errors.Is(err, engine.ErrTaken) {
			t.Fatalf("Reserve after Close err = %v, want a failure", err)
		}
		if _, err := s.Get(ctx, payment(1, "o").Key); err == nil || errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("Get after Close err = %v, want a failure", err)
		}
	})

	t.Run("OperationTimeout", func(t *testing.T) {
		s := open(t, store.WithOpTimeout(time.Nanosecond))
		if _, err := s.Totals(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Totals under a 1 ns operation timeout err = %v, want DeadlineExceeded", err)
		}
	})
}

// RunOpen checks opening by DSN: migrations are idempotent (a second Open
// applies nothing and keeps the data) and safe when several openers start
// together. newDSN returns a DSN naming a fresh, empty database.
func RunOpen(t *testing.T, newDSN func(t *testing.T) string) {
	ctx := context.Background()
	openDSN := func(t *testing.T, dsn string) (store.Store, error) {
		s, err := store.Open(ctx, dsn)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	}

	t.Run("OpenTwice", func(t *testing.T) {
		dsn := newDSN(t)
		s1, err := openDSN(t, dsn)
		if err != nil {
			t.Fatalf("first Open: %v", err)
		}
		mustAppend(t, s1, settlement(Wallet(1), "a", 1, "1", "", base0), true)
		if err := s1.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		s2, err := openDSN(t, dsn)
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		if ps := mustPayerStats(t, s2, Wallet(1)); ps.PaidCalls != 1 {
			t.Fatalf("data lost across reopen: %+v", ps)
		}
		mustAppend(t, s2, settlement(Wallet(1), "a", 1, "1", "", base0), false)
	})

	t.Run("OpenConcurrently", func(t *testing.T) {
		dsn := newDSN(t)
		const n = 4
		stores := make([]store.Store, n)
		errs := journaltest.Concurrently(n, waitFor, func(i int) error {
			var err error
			stores[i], err = store.Open(ctx, dsn)
			return err
		})
		for _, s := range stores {
			if s != nil {
				t.Cleanup(func() { _ = s.Close() })
			}
		}
		for _, err := range errs {
			t.Fatalf("concurrent Open: %v", err)
		}
		// They share one database: a reservation made through one is seen
		// by all, and exactly one of them wins a race.
		rec := payment(1, "")
		var wins atomic.Int64
		for _, err := range journaltest.Concurrently(n*5, waitFor, func(i int) error {
			r := rec
			r.Owner = fmt.Sprintf("instance-%d", i)
			_, err := stores[i%n].Reserve(ctx, r, 3)
			if err == nil {
				wins.Add(1)
				return nil
			}
			if errors.Is(err, engine.ErrTaken) {
				return nil
			}
			return err
		}) {
			t.Fatalf("Reserve: %v", err)
		}
		if wins.Load() != 1 {
			t.Fatalf("%d winners across %d stores sharing a database, want 1", wins.Load(), n)
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		// A database without svc's schema is refused, and stays without it.
		dsn := newDSN(t)
		if s, err := store.Open(ctx, dsn, store.ReadOnly()); err == nil {
			_ = s.Close()
			t.Fatal("a read-only Open of an empty database succeeded")
		} else if !errors.Is(err, store.ErrSchema) && !errors.Is(err, store.ErrNoDatabase) {
			t.Fatalf("a read-only Open of an empty database: %v, want ErrSchema or ErrNoDatabase", err)
		}
		rw, err := openDSN(t, dsn)
		if err != nil {
			t.Fatalf("Open after the read-only attempt: %v", err)
		}
		mustAppend(t, rw, settlement(Wallet(1), "a", 1, "1", "", base0), true)
		ro, err := store.Open(ctx, dsn, store.ReadOnly())
		if err != nil {
			t.Fatalf("read-only Open: %v", err)
		}
		t.Cleanup(func() { _ = ro.Close() })
		rows, err := collect(ctx, ro, base0.Add(-time.Hour), base0.Add(time.Hour))
		if err != nil || len(rows) != 1 {
			t.Fatalf("read-only Settlements = %d rows, %v; want the one appended", len(rows), err)
		}
		if _, err := ro.Append(ctx, settlement(Wallet(2), "a", 2, "1", "", base0)); err == nil {
			t.Fatal("a read-only store accepted a write")
		}
		if ps := mustPayerStats(t, rw, Wallet(2)); ps.PaidCalls != 0 {
			t.Fatalf("the refused write landed: %+v", ps)
		}
	})
}

func mustAppend(t *testing.T, s store.Ledger, st store.Settlement, wantInserted bool) {
	t.Helper()
	ok, err := s.Append(context.Background(), st)
	if err != nil {
		t.Fatalf("Append(%s, nonce %s): %v", st.Payer, st.Nonce, err)
	}
	if ok != wantInserted {
		t.Fatalf("Append(%s, nonce %s) inserted = %v, want %v", st.Payer, st.Nonce, ok, wantInserted)
	}
}

func mustPayerStats(t *testing.T, s store.Ledger, wallet string) club.PayerStats {
	t.Helper()
	ps, err := s.PayerStats(context.Background(), wallet)
	if err != nil {
		t.Fatalf("PayerStats(%s): %v", wallet, err)
	}
	return ps
}

func mustTotals(t *testing.T, s store.Ledger) store.Totals {
	t.Helper()
	tot, err := s.Totals(context.Background())
	if err != nil {
		t.Fatalf("Totals: %v", err)
	}
	return tot
}

func mustCheckIn(t *testing.T, s store.LoungeStore, e club.LoungeEntry) {
	t.Helper()
	if err := s.CheckIn(context.Background(), e); err != nil {
		t.Fatalf("CheckIn(%s): %v", e.Wallet, err)
	}
}

func mustLounge(t *testing.T, s store.LoungeStore, now time.Time, limit int) []club.LoungeEntry {
	t.Helper()
	got, err := s.Lounge(context.Background(), now, limit)
	if err != nil {
		t.Fatalf("Lounge: %v", err)
	}
	return got
}

func checksum(t *testing.T, w string) string {
	t.Helper()
	cs, ok := evmaddr.Checksum(w)
	if !ok {
		t.Fatalf("%q is not an address", w)
	}
	return cs
}

func sameReferral(a, b club.Referral) bool {
	return a.Code == b.Code && a.Owner == b.Owner && a.CreatedAt.Equal(b.CreatedAt)
}

func sameEntries(a, b []club.LoungeEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Wallet != y.Wallet || x.AgentName != y.AgentName || x.Role != y.Role ||
			!x.CheckedInAt.Equal(y.CheckedInAt) || !reflect.DeepEqual(x.Interests, y.Interests) {
			return false
		}
	}
	return true
}

// payment returns a new reserved journal record numbered i (payer
// Wallet(i)), held by owner, created at base0.
func payment(i int, owner string) engine.Reservation {
	payer, nonce := Wallet(i), fmt.Sprintf("0x%064x", 0xc0ffee00+i)
	return engine.Reservation{
		Key:     exact.NonceKey(base, usdc, payer, nonce),
		Network: base, Asset: strings.ToLower(usdc), Payer: payer, Nonce: nonce, PayTo: Wallet(999), Amount: "3400",
		Request: engine.Request{Hash: fmt.Sprintf("sha256:%d", i), Resource: "POST /api/risk-levels",
			Product: "risk_levels", Transport: "http", RequestID: fmt.Sprintf("req-%d", i), X402Version: 2},
		Owner: owner, LeaseUntil: base0.Add(time.Minute), KeepUntil: base0.Add(time.Hour), Now: base0,
	}
}

// settlingFor is a move to settling of rec whose answer is kept until
// answerUntil.
func settlingFor(rec engine.Reservation, answerUntil time.Time) engine.Settling {
	return engine.Settling{
		Answer:      engine.Answer{Status: http.StatusOK, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"ok":true}`)},
		AnswerUntil: answerUntil, Payload: []byte(`{"x402Version":2}`), Requirements: []byte(`{"scheme":"exact"}`),
		Payer: rec.Payer, Amount: rec.Amount, LeaseUntil: base0.Add(2 * time.Minute),
	}
}

func mustReserve(t *testing.T, s store.Store, rec engine.Reservation) {
	t.Helper()
	if _, err := s.Reserve(context.Background(), rec, 3); err != nil {
		t.Fatalf("Reserve(%s): %v", rec.Key, err)
	}
}

// mustSettle moves the reserved rec through settling to settled (at base0).
func mustSettle(t *testing.T, s store.Store, rec engine.Reservation, answerUntil time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := s.Settling(ctx, rec.Key, rec.Owner, settlingFor(rec, answerUntil)); err != nil {
		t.Fatalf("Settling(%s): %v", rec.Key, err)
	}
	sr := x402.SettleResponse{Success: true, Transaction: fmt.Sprintf("0x%064x", 1), Network: base, Payer: rec.Payer}
	if err := s.Settle(ctx, rec.Key, sr, base0); err != nil {
		t.Fatalf("Settle(%s): %v", rec.Key, err)
	}
}

// runJournalStore checks what the store adds to the engine.Journal
// contract: the ledger it writes is the store's Ledger, validation, exact
// instants.
func runJournalStore(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("SettleWritesTheLedger", func(t *testing.T) {
		s := open(t)
		code, _ := club.ReferralCode(Wallet(50))
		if _, err := s.PutReferral(ctx, Wallet(50), base0); err != nil {
			t.Fatalf("PutReferral: %v", err)
		}
		rec := payment(1, "o")
		rec.Payer = checksum(t, rec.Payer) // as the authorization spells it
		rec.Request.RefCode, rec.Request.Transport = code, "mcp"
		mustReserve(t, s, rec)
		mustSettle(t, s, rec, base0.Add(time.Hour))
		ps := mustPayerStats(t, s, Wallet(1))
		if ps.PaidCalls != 1 || ps.Tools != 1 || !ps.FirstPaid.Equal(base0) {
			t.Fatalf("PayerStats = %+v, want the settled payment", ps)
		}
		if rs, err := s.ReferralStats(ctx, code); err != nil || rs.PaidCalls != 1 || rs.ReferredPayers != 1 {
			t.Fatalf("ReferralStats = %+v, %v; want the referred payment", rs, err)
		}
		tot := mustTotals(t, s)
		if tot.SettledCalls != 1 || len(tot.Revenue) != 1 || tot.Revenue[0].Amount != "3400" {
			t.Fatalf("Totals = %+v, want one payment of 3400", tot)
		}
		lr, ok := s.(journaltest.LedgerReader)
		if !ok {
			t.Fatalf("%T does not implement journaltest.LedgerReader", s)
		}
		e, found, err := lr.LedgerEntry(ctx, rec.Network, rec.Asset, rec.Payer, rec.Nonce)
		if err != nil || !found || e.Resource != rec.Request.Resource || e.Transport != "mcp" || e.RefCode != code ||
			e.Payer != rec.Payer || e.Asset != rec.Asset || e.Amount != "3400" || e.Product != "risk_levels" {
			t.Fatalf("LedgerEntry = %+v, %v, %v", e, found, err)
		}
	})

	t.Run("SettleAfterAnImport", func(t *testing.T) {
		s := open(t)
		rec := payment(2, "o")
		imported := settlement(rec.Payer, "imported_tool", 0, "1", "", base0.Add(-time.Hour))
		imported.Nonce, imported.Transaction = rec.Nonce, "0ximported"
		mustAppend(t, s, imported, true)
		mustReserve(t, s, rec)
		mustSettle(t, s, rec, base0.Add(time.Hour)) // the ledger insert is idempotent
		if r, err := s.Get(ctx, rec.Key); err != nil || r.State != engine.StateSettled {
			t.Fatalf("Get = %+v, %v; want settled", r, err)
		}
		ps := mustPayerStats(t, s, rec.Payer)
		if ps.PaidCalls != 1 || !ps.FirstPaid.Equal(base0.Add(-time.Hour)) {
			t.Fatalf("PayerStats = %+v, want the imported entry alone", ps)
		}
	})

	t.Run("SettleRefusesWhatTheLedgerCannotHold", func(t *testing.T) {
		s := open(t)
		rec := payment(3, "o")
		mustReserve(t, s, rec)
		st := settlingFor(rec, base0.Add(time.Hour))
		st.Amount = "3.40" // not atomic units
		if err := s.Settling(ctx, rec.Key, "o", st); err != nil {
			t.Fatalf("Settling: %v", err)
		}
		err := s.Settle(ctx, rec.Key, x402.SettleResponse{Success: true, Transaction: "0x1"}, base0)
		if !errors.Is(err, store.ErrInvalid) || errors.Is(err, engine.ErrState) {
			t.Fatalf("Settle of an amount the ledger refuses err = %v, want ErrInvalid", err)
		}
		if r, err := s.Get(ctx, rec.Key); err != nil || r.State != engine.StateSettling || r.Settlement != nil {
			t.Fatalf("the row after a refused Settle = %+v, %v; want it still settling", r, err)
		}
		if tot := mustTotals(t, s); tot.SettledCalls != 0 {
			t.Fatalf("Totals = %+v, want no ledger entry", tot)
		}
	})

	t.Run("Validation", func(t *testing.T) {
		s := open(t)
		for name, mod := range map[string]func(r *engine.Reservation){
			"no key":          func(r *engine.Reservation) { r.Key = "" },
			"oversized key":   func(r *engine.Reservation) { r.Key = strings.Repeat("k", store.MaxFieldBytes+1) },
			"oversized hash":  func(r *engine.Reservation) { r.Request.Hash = strings.Repeat("h", store.MaxFieldBytes+1) },
			"NUL in owner":    func(r *engine.Reservation) { r.Owner = "a\x00b" },
			"bad UTF-8":       func(r *engine.Reservation) { r.Request.Resource = "\xff" },
			"NUL in ref code": func(r *engine.Reservation) { r.Request.RefCode = "a\x00" },
		} {
			r := payment(4, "o")
			mod(&r)
			if _, err := s.Reserve(ctx, r, 3); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: Reserve err = %v, want ErrInvalid", name, err)
			}
		}
		rec := payment(5, "o")
		mustReserve(t, s, rec)
		before, _ := s.Get(ctx, rec.Key)
		st := settlingFor(rec, base0)
		st.Requirements = []byte("\xff")
		if err := s.Settling(ctx, rec.Key, "o", st); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Settling with requirements that are not JSON err = %v, want ErrInvalid", err)
		}
		if after, _ := s.Get(ctx, rec.Key); after.State != before.State || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("a refused Settling changed the row: %+v", after)
		}
		// A reason is a diagnostic: cut, never refused.
		long := strings.Repeat("é", store.MaxFieldBytes) + "\x00\xff"
		if err := s.Release(ctx, rec.Key, "o", long, true); err != nil {
			t.Fatalf("Release with a long reason: %v", err)
		}
		r, err := s.Get(ctx, rec.Key)
		if err != nil || r.State != engine.StateReleased || len(r.Reason) > store.MaxFieldBytes || !strings.HasPrefix(long, r.Reason) || r.Reason == "" {
			t.Fatalf("released row = %q (%d bytes), %v; want the reason cut to at most %d bytes", r.Reason, len(r.Reason), err, store.MaxFieldBytes)
		}
	})

	t.Run("InstantsRoundTripExactly", func(t *testing.T) {
		s := open(t)
		rec := payment(6, "o")
		rec.Now = base0 // nanoseconds
		rec.LeaseUntil = base0.Add(time.Nanosecond)
		rec.KeepUntil = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) // beyond the store's range: clamped
		mustReserve(t, s, rec)
		got, err := s.Get(ctx, rec.Key)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if !got.CreatedAt.Equal(base0) || !got.LeaseUntil.Equal(base0.Add(time.Nanosecond)) ||
			got.KeepUntil.Before(time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)) || !got.AnswerUntil.IsZero() {
			t.Fatalf("instants = created %v, lease %v, keep %v, answer %v", got.CreatedAt, got.LeaseUntil, got.KeepUntil, got.AnswerUntil)
		}
		// A far-future row is never past its KeepUntil.
		if err := s.Release(ctx, rec.Key, "o", "tool failed", true); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if got, err := s.Prune(ctx, time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), engine.PruneOptions{}); err != nil || got.Deleted != 0 {
			t.Fatalf("Prune = %d deleted, %v; want none", got.Deleted, err)
		}
		if _, err := s.Get(ctx, rec.Key); err != nil {
			t.Fatalf("Get after Prune: %v", err)
		}
	})
}

package club

import (
	"context"
	"net/http"
	"time"
)

// Status is the answer of GET /api/club/status: a wallet's membership,
// computed from the settlement ledger only.
type Status struct {
	OK     bool   `json:"ok"`
	Wallet string `json:"wallet"` // EIP-55 checksummed
	// Source says where the figures come from: "ledger" (settled x402
	// payments, each signed by its payer).
	Source string `json:"source"`
	Member bool   `json:"member"` // holds a tier
	// Tier is the highest tier held, null when none; Rank is its rank
	// (0 when none).
	Tier *string `json:"tier"`
	Rank int     `json:"rank"`
	// PaidCalls and ToolsBought are the wallet's settled calls and the
	// distinct tools among them.
	PaidCalls   int64 `json:"paidCalls"`
	ToolsBought int64 `json:"toolsBought"`
	// ReferredPayers and ReferredPaidCalls are what the wallet's registered
	// referral code converted (others' settled calls; zero without a code).
	ReferredPayers    int64 `json:"referredPayers"`
	ReferredPaidCalls int64 `json:"referredPaidCalls"`
	// FirstPaidAt and LastPaidAt bound the wallet's settled calls (null
	// when none).
	FirstPaidAt *time.Time `json:"firstPaidAt"`
	LastPaidAt  *time.Time `json:"lastPaidAt"`
	// NextTier is the tier above and what it needs (null at the top).
	NextTier *NextTier `json:"nextTier"`
	// Benefits are the current tier's (recognition only; empty when none).
	Benefits []string `json:"benefits"`
	// Referral is the wallet's registered code (null when it created none;
	// Hint then says how).
	Referral *StatusReferral `json:"referral"`
	Hint     string          `json:"hint,omitempty"`
}

// StatusReferral is a wallet's registered referral code.
type StatusReferral struct {
	Code       string     `json:"code"`
	CreatedAt  time.Time  `json:"createdAt"`
	Status     string     `json:"status"` // the code's status URL
	ShareLinks ShareLinks `json:"shareLinks"`
}

// StatusOf computes the membership status of wallet (any spelling of an EVM
// address the store accepts) from the ledger.
func (c *Club) StatusOf(ctx context.Context, wallet string) (Status, error) {
	ps, err := c.store.PayerStats(ctx, wallet)
	if err != nil {
		return Status{}, err
	}
	st := Status{OK: true, Wallet: ps.Wallet, Source: "ledger", PaidCalls: ps.PaidCalls, ToolsBought: ps.Tools, Benefits: []string{}}
	if !ps.FirstPaid.IsZero() {
		t := ps.FirstPaid
		st.FirstPaidAt = &t
	}
	if !ps.LastPaid.IsZero() {
		t := ps.LastPaid
		st.LastPaidAt = &t
	}
	if code, ok := ReferralCode(wallet); ok {
		rs, err := c.store.ReferralStats(ctx, code)
		if err != nil {
			return Status{}, err
		}
		if rs.Registered && rs.Owner == ps.Wallet {
			st.ReferredPayers, st.ReferredPaidCalls = rs.ReferredPayers, rs.PaidCalls
			st.Referral = &StatusReferral{Code: rs.Code, CreatedAt: rs.CreatedAt, Status: c.url(ReferralPathPrefix + rs.Code), ShareLinks: c.shareLinks(rs.Code)}
		}
	}
	if st.Referral == nil {
		st.Hint = "POST {\"wallet\": \"" + ps.Wallet + "\"} to " + c.url(ReferralCreatePath) + " for your referral code; payers you bring count towards INSIDER and PRIME"
	}
	tier, next := TierFor(st.PaidCalls, st.ReferredPayers)
	st.NextTier = next
	if tier != "" {
		st.Tier, st.Member = &tier, true
		for _, t := range Tiers() {
			if t.Name == tier {
				st.Rank, st.Benefits = t.Rank, t.Benefits
			}
		}
	}
	return st, nil
}

// ServeStatus answers GET /api/club/status?wallet=: 400 (field wallet) for
// a missing or malformed wallet, else the wallet's Status.
func (c *Club) ServeStatus(w http.ResponseWriter, r *http.Request) {
	var fe fieldErrors
	wallet, ok := checkWallet(&fe, "wallet", r.URL.Query().Get("wallet"))
	if !ok {
		writeProblem(w, r, invalidProblem(fe))
		return
	}
	st, err := c.StatusOf(r.Context(), wallet)
	if err != nil {
		c.writeStoreError(w, r, "status", err)
		return
	}
	c.writeJSON(w, r, http.StatusOK, "no-store", st)
}

package club

import (
	"context"
	"net/http"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// ShareLinks are the URLs a referral code's owner shares: each carries
// ?ref=CODE, so the calls made through them are attributed to the owner.
type ShareLinks struct {
	Catalog  string `json:"catalog"`  // the paid tools' catalog
	Club     string `json:"club"`     // the club's manifest, with the code as an invite
	PaidCall string `json:"paidCall"` // an example paid route (any paid route accepts ?ref=)
}

// shareLinks returns the share links of code.
func (c *Club) shareLinks(code string) ShareLinks {
	return ShareLinks{
		Catalog:  c.refURL("/api/catalog", code),
		Club:     c.refURL(ManifestPath, code),
		PaidCall: c.refURL(c.paidPath, code),
	}
}

// HeaderAlternative is the request header that carries a code instead of
// the query parameter.
type HeaderAlternative struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ReferralCreated is the answer of POST /api/club/referral/create.
type ReferralCreated struct {
	OK          bool              `json:"ok"`
	Code        string            `json:"code"`
	OwnerWallet string            `json:"ownerWallet"` // EIP-55 checksummed
	Created     bool              `json:"created"`     // false: the code already existed
	CreatedAt   time.Time         `json:"createdAt"`   // first registration
	Status      string            `json:"status"`      // the code's status URL
	ShareLinks  ShareLinks        `json:"shareLinks"`
	Header      HeaderAlternative `json:"header"`
	Attribution string            `json:"attribution"`
	Economics   string            `json:"economics"`
}

// CreateReferral registers the deterministic referral code of wallet (an
// EIP-55 checksummed or single-case EVM address), idempotently: created is
// true only for the call that registered it.
func (c *Club) CreateReferral(ctx context.Context, wallet string) (ReferralCreated, error) {
	ref, found, err := c.store.ReferralByOwner(ctx, wallet)
	if err != nil {
		return ReferralCreated{}, err
	}
	created := false
	if !found {
		now := c.now()
		if ref, err = c.store.PutReferral(ctx, wallet, now); err != nil {
			return ReferralCreated{}, err
		}
		// PutReferral returns the first registration: a concurrent
		// creation that won keeps its own time.
		created = ref.CreatedAt.Equal(now)
	}
	return ReferralCreated{
		OK:          true,
		Code:        ref.Code,
		OwnerWallet: ref.Owner,
		Created:     created,
		CreatedAt:   ref.CreatedAt,
		Status:      c.url(ReferralPathPrefix + ref.Code),
		ShareLinks:  c.shareLinks(ref.Code),
		Header:      HeaderAlternative{Name: HeaderRef, Value: ref.Code},
		Attribution: "Settled paid calls carrying ?" + QueryRef + "=" + ref.Code + " (any paid route) or the header " + HeaderRef + ": " + ref.Code +
			" are attributed to this wallet; distinct payers other than this wallet count as referred payers (self-referral is not counted).",
		Economics: Economics,
	}, nil
}

// ServeReferralCreate answers POST /api/club/referral/create with body
// {"wallet": "0x..."}: 201 with the code and share links the first time,
// 200 with the same code afterwards (on every instance). Unknown members,
// malformed JSON and a malformed wallet are 400.
func (c *Club) ServeReferralCreate(w http.ResponseWriter, r *http.Request) {
	members, fe, tooLarge := c.decodeObject(r, "wallet")
	if tooLarge != nil {
		writeProblem(w, r, *tooLarge)
		return
	}
	var wallet string
	if members != nil {
		s, ok := stringMember(&fe, members, "wallet")
		if ok {
			wallet, _ = checkWallet(&fe, "wallet", s)
		}
	}
	if len(fe) > 0 {
		writeProblem(w, r, invalidProblem(fe))
		return
	}
	res, err := c.CreateReferral(r.Context(), wallet)
	if err != nil {
		c.writeStoreError(w, r, "referral create", err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", res.Status)
	}
	c.writeJSON(w, r, status, "no-store", res)
}

// ReferralStatus is the answer of GET /api/club/referral/{code}.
type ReferralStatus struct {
	OK        bool      `json:"ok"`
	Code      string    `json:"code"`
	Owner     string    `json:"owner"` // EIP-55 checksummed
	CreatedAt time.Time `json:"createdAt"`
	// ReferredPayers are the distinct payers other than the owner whose
	// settled calls carried the code; PaidCalls those calls.
	ReferredPayers int64      `json:"referredPayers"`
	PaidCalls      int64      `json:"paidCalls"`
	SelfReferral   string     `json:"selfReferral"`
	Source         string     `json:"source"`
	ShareLinks     ShareLinks `json:"shareLinks"`
}

// ServeReferral answers GET /api/club/referral/{code}: 400 (field code) for
// a malformed code, 404 for one no wallet registered, else what it
// converted.
func (c *Club) ServeReferral(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("code")
	code, ok := NormalizeReferralCode(raw)
	if !ok {
		var fe fieldErrors
		fe.add("code", RuleReferralCode, "%q is not a referral code (%d characters of A-Z and 2-7)", clip.Runes(raw, 32), ReferralCodeLen)
		writeProblem(w, r, invalidProblem(fe))
		return
	}
	rs, err := c.store.ReferralStats(r.Context(), code)
	if err != nil {
		c.writeStoreError(w, r, "referral status", err)
		return
	}
	if !rs.Registered {
		writeProblem(w, r, newProblem(http.StatusNotFound, CodeNotFound, "no wallet registered the referral code "+code+"; POST {wallet} to "+c.url(ReferralCreatePath)+" to create yours"))
		return
	}
	c.writeJSON(w, r, http.StatusOK, "no-store", ReferralStatus{
		OK: true, Code: rs.Code, Owner: rs.Owner, CreatedAt: rs.CreatedAt,
		ReferredPayers: rs.ReferredPayers, PaidCalls: rs.PaidCalls,
		SelfReferral: "not counted", Source: "ledger",
		ShareLinks: c.shareLinks(rs.Code),
	})
}

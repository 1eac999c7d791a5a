package club

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// Club identity.
const (
	// Name is the club's name.
	Name = "svc club"
	// Purpose says what the club is for.
	Purpose = "Recognition for the agents and people who use svc's pay-per-call tools: membership tiers computed " +
		"from settled x402 payments, deterministic referral codes that attribute the payers you bring, and a " +
		"self-declared lounge to find peers by role and interest."
	// Economics states what the club is not.
	Economics = "Recognition only: no payouts, no token, no custody, no discounts. Tiers and referral counts are " +
		"computed from the settlement ledger; nobody holds or receives funds through the club, and every paid " +
		"call costs the same whatever the tier."
	// BeaconVersion is the version of the beacon document's shape.
	BeaconVersion = "1.0.0"
	// BeaconSchema names the beacon document's shape.
	BeaconSchema = "svc-club/1"
	// beaconMaxAge is the Cache-Control max-age of the beacon, in seconds.
	beaconMaxAge = 3600
	// manifestMaxAge is the Cache-Control max-age of the manifest without
	// an invite, in seconds.
	manifestMaxAge = 300
)

// EconomicsInfo is the economics statement as flags and text.
type EconomicsInfo struct {
	Statement string `json:"statement"`
	Payouts   bool   `json:"payouts"`
	Token     bool   `json:"token"`
	Custody   bool   `json:"custody"`
	Discounts bool   `json:"discounts"`
}

func economics() EconomicsInfo { return EconomicsInfo{Statement: Economics} }

// Link is a route of the club: method and absolute URL (a URL template with
// {placeholders} when Template is set).
type Link struct {
	Method   string `json:"method"`
	URL      string `json:"url"`
	Template bool   `json:"template,omitempty"`
}

// BeaconLinks are the club's routes, as absolute URLs.
type BeaconLinks struct {
	Manifest       Link `json:"manifest"`
	Beacon         Link `json:"beacon"`
	Status         Link `json:"status"`
	ReferralCreate Link `json:"referralCreate"`
	Referral       Link `json:"referral"`
	Lounge         Link `json:"lounge"`
	CheckIn        Link `json:"checkIn"`
}

func links(base string) BeaconLinks {
	return BeaconLinks{
		Manifest:       Link{Method: http.MethodGet, URL: base + ManifestPath},
		Beacon:         Link{Method: http.MethodGet, URL: base + BeaconPath},
		Status:         Link{Method: http.MethodGet, URL: base + StatusPath + "?wallet={wallet}", Template: true},
		ReferralCreate: Link{Method: http.MethodPost, URL: base + ReferralCreatePath},
		Referral:       Link{Method: http.MethodGet, URL: base + ReferralPathPrefix + "{code}", Template: true},
		Lounge:         Link{Method: http.MethodGet, URL: base + LoungePath},
		CheckIn:        Link{Method: http.MethodPost, URL: base + CheckInPath},
	}
}

// TierSummary is a tier in one line.
type TierSummary struct {
	Name      string `json:"name"`
	Qualifies string `json:"qualifies"`
}

// Beacon is the invite beacon served at /.well-known/svc-club.json: a
// small, cacheable document pointing at the club.
type Beacon struct {
	Schema    string        `json:"schema"`
	Version   string        `json:"version"`
	Name      string        `json:"name"`
	Purpose   string        `json:"purpose"`
	Free      bool          `json:"free"`
	Links     BeaconLinks   `json:"links"`
	Tiers     []TierSummary `json:"tiers"`
	Referral  string        `json:"referral"`
	Economics string        `json:"economics"`
}

// NewBeacon builds the beacon document for the public base URL baseURL
// (scheme://host[:port], no trailing slash). It depends on nothing else,
// so the discovery surfaces can embed or link it.
func NewBeacon(baseURL string) Beacon {
	base := strings.TrimRight(baseURL, "/")
	b := Beacon{
		Schema:    BeaconSchema,
		Version:   BeaconVersion,
		Name:      Name,
		Purpose:   Purpose,
		Free:      true,
		Links:     links(base),
		Referral:  "POST {wallet} to referralCreate for your deterministic code; paid calls carrying ?ref=CODE or the header X-Ref: CODE are attributed to you (self-referral is not counted).",
		Economics: Economics,
	}
	for _, t := range Tiers() {
		b.Tiers = append(b.Tiers, TierSummary{Name: t.Name, Qualifies: t.Description})
	}
	return b
}

// encodeBeacon encodes b and its strong ETag.
func encodeBeacon(b Beacon) ([]byte, string, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, "", fmt.Errorf("club: encoding the beacon: %w", err)
	}
	raw = append(raw, '\n')
	sum := sha256.Sum256(raw)
	return raw, `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`, nil
}

// Beacon returns the club's beacon document.
func (c *Club) Beacon() Beacon { return NewBeacon(c.baseURL) }

// ServeBeacon answers GET /.well-known/svc-club.json: the beacon, with
// Cache-Control (public, an hour) and a strong ETag; http.ServeContent
// answers a request whose If-None-Match names it with 304 Not Modified.
func (c *Club) ServeBeacon(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("ETag", c.beaconETag)
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", beaconMaxAge))
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(c.beacon))
}

// Vocabulary is what the lounge accepts as roles and interests: free-form
// terms under Terms, and suggested ones.
type Vocabulary struct {
	// FreeForm is true: any term following Terms is accepted, not only the
	// suggestions.
	FreeForm  bool      `json:"freeForm"`
	Roles     []string  `json:"roles"`     // suggested roles
	Interests []string  `json:"interests"` // suggested interests
	Terms     TermRules `json:"terms"`
}

// TermRules publishes the rules of a role or interest (see TermPattern).
type TermRules struct {
	MaxChars         int    `json:"maxChars"`         // of a normalized term
	MaxInterests     int    `json:"maxInterests"`     // distinct interests kept
	MaxInterestItems int    `json:"maxInterestItems"` // items a check-in may send
	Pattern          string `json:"pattern"`          // every stored term matches it
	Normalization    string `json:"normalization"`
	Characters       string `json:"characters"`
	Refused          string `json:"refused"`
}

// termRulesInfo is the published form of the term rules.
func termRulesInfo() TermRules {
	return TermRules{
		MaxChars:         MaxTermChars,
		MaxInterests:     MaxInterests,
		MaxInterestItems: MaxInterestItems,
		Pattern:          TermPattern,
		Normalization:    "Unicode NFC, then lower case; every run of spaces, '_' and dashes becomes one '-', none at either end; duplicate interests are dropped (first kept)",
		Characters:       termRules + fmt.Sprintf(" (Unicode L, Nd, then Mn/Mc, at most %d marks in a row); safe to show as is in HTML, Markdown, JSON or a terminal", maxMarkRun),
		Refused:          fmt.Sprintf("more than %d bytes as sent, control characters, bidirectional controls, '<' and '>', invisible (default-ignorable) characters, punctuation and symbols other than '-', and terms empty once normalized", maxTermInputBytes),
	}
}

// ReferralInfo describes referral codes in the manifest.
type ReferralInfo struct {
	Create       Link   `json:"create"`
	Status       Link   `json:"status"`
	QueryParam   string `json:"queryParam"`
	Header       string `json:"header"`
	CodeFormat   string `json:"codeFormat"`
	Derivation   string `json:"derivation"`
	SelfReferral string `json:"selfReferral"`
	Counts       string `json:"counts"`
}

// LoungeInfo describes the lounge in the manifest.
type LoungeInfo struct {
	List                    Link   `json:"list"`
	CheckIn                 Link   `json:"checkIn"`
	Cap                     int    `json:"cap"`
	TTLSeconds              int64  `json:"ttlSeconds"`
	OnePerWallet            bool   `json:"onePerWallet"`
	WalletOwnershipVerified bool   `json:"walletOwnershipVerified"`
	AgentNameMaxChars       int    `json:"agentNameMaxChars"`
	MaxInterests            int    `json:"maxInterests"` // distinct interests kept (duplicates are dropped)
	RateLimits              string `json:"rateLimits"`
	Note                    string `json:"note"`
}

// Invite is the ?ref= of a manifest request, checked: Valid is true when
// the code is well formed and registered. OwnerWallet is the owner's
// wallet masked to its first 6 and last 4 characters (the referral status
// route shows it whole).
type Invite struct {
	Code        string `json:"code"`
	WellFormed  bool   `json:"wellFormed"`
	Registered  bool   `json:"registered"`
	Valid       bool   `json:"valid"`
	OwnerWallet string `json:"ownerWallet,omitempty"`
	Referral    string `json:"referral,omitempty"` // the code's status URL
	Reason      string `json:"reason,omitempty"`   // why it is not valid
	Join        string `json:"join,omitempty"`     // how the invitee's calls carry the code
}

// Manifest is the answer of GET /api/club.
type Manifest struct {
	OK         bool          `json:"ok"`
	Name       string        `json:"name"`
	Version    string        `json:"version"`
	Purpose    string        `json:"purpose"`
	Free       bool          `json:"free"`
	Tiers      []Tier        `json:"tiers"`
	TierRule   string        `json:"tierRule"`
	Vocabulary Vocabulary    `json:"vocabulary"`
	Referral   ReferralInfo  `json:"referral"`
	Lounge     LoungeInfo    `json:"lounge"`
	Links      BeaconLinks   `json:"links"`
	Economics  EconomicsInfo `json:"economics"`
	Invite     *Invite       `json:"invite,omitempty"`
}

// Manifest returns the club's manifest without an invite.
func (c *Club) Manifest() Manifest {
	l := links(c.baseURL)
	return Manifest{
		OK:       true,
		Name:     Name,
		Version:  BeaconVersion,
		Purpose:  Purpose,
		Free:     true,
		Tiers:    Tiers(),
		TierRule: "Computed from the settlement ledger only. A wallet holds the highest tier any one of whose qualifiers it meets; referredPayers counts distinct payers other than the wallet whose settled calls carried the wallet's registered code.",
		Vocabulary: Vocabulary{
			FreeForm:  true,
			Roles:     append([]string(nil), c.roles...),
			Interests: append([]string(nil), c.interests...),
			Terms:     termRulesInfo(),
		},
		Referral: ReferralInfo{
			Create:       l.ReferralCreate,
			Status:       l.Referral,
			QueryParam:   QueryRef,
			Header:       HeaderRef,
			CodeFormat:   fmt.Sprintf("%d characters of A-Z and 2-7 (case-insensitive)", ReferralCodeLen),
			Derivation:   "deterministic: the first 10 characters of base32(SHA-256(\"svc-referral:\" + EIP-55 checksummed wallet)); the same wallet gets the same code on every instance",
			SelfReferral: "not counted: the owner's own paid calls never count for the owner's code",
			Counts:       "a settled paid call carrying ?ref=CODE or X-Ref: CODE attributes its payer to the code's owner; non-custodial, nothing is paid out",
		},
		Lounge: LoungeInfo{
			List:                    l.Lounge,
			CheckIn:                 l.CheckIn,
			Cap:                     LoungeCap,
			TTLSeconds:              int64(LoungeTTL / time.Second),
			OnePerWallet:            true,
			WalletOwnershipVerified: false,
			AgentNameMaxChars:       MaxAgentNameRunes,
			MaxInterests:            MaxInterests,
			RateLimits:              c.rateLimitText(),
			Note:                    "Entries are self-declared: the wallet's ownership is not verified. One entry per wallet (the latest check-in wins), the newest entries listed first, each for 24 hours; no IP address is kept.",
		},
		Links:     l,
		Economics: economics(),
	}
}

// rateLimitText describes the check-in limits.
func (c *Club) rateLimitText() string {
	desc := func(l *limiter, what string) string {
		if l == nil {
			return "no limit " + what
		}
		return fmt.Sprintf("%d check-ins per %s %s", l.capacity, windowText(l.per), what)
	}
	return desc(c.perAddress, "per client address") + "; " + desc(c.perWallet, "per wallet") + " (429 with Retry-After past them)"
}

// windowText names a rate window: "minute", "hour", "second" or a
// duration.
func windowText(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	}
	return d.String()
}

// ServeManifest answers GET /api/club. A ref query parameter is checked and
// echoed as an invite.
func (c *Club) ServeManifest(w http.ResponseWriter, r *http.Request) {
	m := c.Manifest()
	cache := fmt.Sprintf("public, max-age=%d", manifestMaxAge)
	if q := r.URL.Query(); q.Has(QueryRef) {
		m.Invite = c.invite(r, q.Get(QueryRef))
		cache = "no-store"
	}
	c.writeJSON(w, r, http.StatusOK, cache, m)
}

// invite checks a ref value.
func (c *Club) invite(r *http.Request, ref string) *Invite {
	code, ok := NormalizeReferralCode(ref)
	if !ok {
		return &Invite{Code: clip.Runes(strings.TrimSpace(ref), 32), Reason: fmt.Sprintf("malformed: a referral code is %d characters of A-Z and 2-7", ReferralCodeLen)}
	}
	inv := &Invite{Code: code, WellFormed: true}
	rs, err := c.store.ReferralStats(r.Context(), code)
	if err != nil {
		c.log.Error("club: checking an invite code failed", "error", err)
		inv.Reason = "the code could not be checked right now; try again later"
		return inv
	}
	if !rs.Registered {
		inv.Reason = "unknown: no wallet registered this code"
		return inv
	}
	inv.Registered, inv.Valid = true, true
	inv.OwnerWallet = maskWallet(rs.Owner)
	inv.Referral = c.url(ReferralPathPrefix + code)
	inv.Join = fmt.Sprintf("add ?%s=%s to any paid call (or send the header %s: %s); your settled calls then count for the code's owner", QueryRef, code, HeaderRef, code)
	return inv
}

// maskWallet keeps the first 6 and last 4 characters of an address.
func maskWallet(w string) string {
	if len(w) != 42 {
		return ""
	}
	return w[:6] + "…" + w[38:]
}

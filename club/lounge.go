package club

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// LoungeNote is attached to every lounge answer.
const LoungeNote = "Self-declared: wallet ownership is not verified, and the name, role and interests are what the caller declared."

// Entry is one lounge entry as served.
type Entry struct {
	Wallet       string    `json:"wallet"` // EIP-55 checksummed
	AgentName    string    `json:"agentName"`
	Role         string    `json:"role"`
	Interests    []string  `json:"interests"`
	CheckedInAt  time.Time `json:"checkedInAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	SelfDeclared bool      `json:"selfDeclared"` // always true
}

func entryOf(e LoungeEntry) Entry {
	in := e.Interests
	if in == nil {
		in = []string{}
	}
	return Entry{
		Wallet: e.Wallet, AgentName: e.AgentName, Role: e.Role, Interests: in,
		CheckedInAt: e.CheckedInAt, ExpiresAt: e.CheckedInAt.Add(LoungeTTL), SelfDeclared: true,
	}
}

// LoungeList is the answer of GET /api/club/lounge.
type LoungeList struct {
	OK         bool    `json:"ok"`
	Count      int     `json:"count"`
	Cap        int     `json:"cap"`
	TTLSeconds int64   `json:"ttlSeconds"`
	Entries    []Entry `json:"entries"` // newest first
	Note       string  `json:"note"`
	CheckIn    Link    `json:"checkIn"`
}

// ServeLounge answers GET /api/club/lounge: the unexpired entries, newest
// first, at most LoungeCap, each marked selfDeclared. No IP address
// is kept or shown.
func (c *Club) ServeLounge(w http.ResponseWriter, r *http.Request) {
	list, err := c.store.Lounge(r.Context(), c.now(), LoungeCap)
	if err != nil {
		c.writeStoreError(w, r, "lounge", err)
		return
	}
	out := LoungeList{
		OK: true, Count: len(list), Cap: LoungeCap, TTLSeconds: int64(LoungeTTL / time.Second),
		Entries: make([]Entry, 0, len(list)), Note: LoungeNote,
		CheckIn: Link{Method: http.MethodPost, URL: c.url(CheckInPath)},
	}
	for _, e := range list {
		out.Entries = append(out.Entries, entryOf(e))
	}
	c.writeJSON(w, r, http.StatusOK, "no-store", out)
}

// CheckInRequest is the body of POST /api/club/lounge/check-in.
type CheckInRequest struct {
	// Wallet is required: a public EVM address (see the package doc).
	Wallet string `json:"wallet"`
	// AgentName is optional; when given it is trimmed and put in NFC, and
	// must then be 1 to MaxAgentNameRunes visible, printable characters,
	// without '<', '>', control characters or bidirectional controls. It
	// keeps its case and punctuation: a consumer rendering it as HTML or
	// Markdown escapes it like any other text.
	AgentName string `json:"agentName,omitempty"`
	// Role is optional (empty or blank means none): any term, free-form,
	// normalized and checked by the term rules (see TermPattern): "Data
	// Scientist" is stored as "data-scientist".
	Role string `json:"role,omitempty"`
	// Interests is optional: at most MaxInterestItems items, each a term
	// normalized and checked like Role; duplicates (after normalization)
	// are dropped, first occurrence first, and at most MaxInterests
	// distinct terms remain.
	Interests []string `json:"interests,omitempty"`
}

// CheckInResult is the answer of POST /api/club/lounge/check-in.
type CheckInResult struct {
	OK    bool   `json:"ok"`
	Entry Entry  `json:"entry"`
	Note  string `json:"note"`
}

// checkInFields are the members a check-in body may have.
var checkInFields = [...]string{"wallet", "agentName", "role", "interests"}

// validateCheckIn checks req against the rules of CheckInRequest and
// returns the entry to store (without its time). Fields named in skip
// already failed to decode and are not checked again.
func (c *Club) validateCheckIn(fe *fieldErrors, req CheckInRequest, skip map[string]bool) LoungeEntry {
	var e LoungeEntry
	if !skip["wallet"] {
		e.Wallet, _ = checkWallet(fe, "wallet", req.Wallet)
	}
	if !skip["agentName"] {
		e.AgentName = checkAgentName(fe, req.AgentName)
	}
	if strings.TrimSpace(req.Role) != "" && !skip["role"] {
		role, p := normalizeTerm(req.Role)
		if p != nil {
			fe.add("role", p.rule, "%s (%q)", p.reason, clip.Runes(req.Role, 32))
		}
		e.Role = role
	}
	e.Interests = []string{}
	if skip["interests"] {
		return e
	}
	if len(req.Interests) > MaxInterestItems {
		fe.add("interests", RuleMax, "has %d items; at most %d", len(req.Interests), MaxInterestItems)
		return e
	}
	for i, s := range req.Interests {
		term, p := normalizeTerm(s)
		if p != nil {
			fe.add(fmt.Sprintf("interests[%d]", i), p.rule, "%s (%q)", p.reason, clip.Runes(s, 32))
			continue
		}
		if !slices.Contains(e.Interests, term) {
			e.Interests = append(e.Interests, term)
		}
	}
	if len(e.Interests) > MaxInterests {
		fe.add("interests", RuleMax, "has %d distinct interests once normalized; at most %d", len(e.Interests), MaxInterests)
	}
	return e
}

// checkAgentName applies the agentName rules and returns the name trimmed
// and in NFC.
func checkAgentName(fe *fieldErrors, raw string) string {
	if raw == "" {
		return ""
	}
	name := norm.NFC.String(strings.TrimSpace(raw))
	n := utf8.RuneCountInString(name)
	switch {
	case n == 0:
		fe.add("agentName", RuleMin, "must have at least 1 character besides spaces when given")
		return ""
	case n > MaxAgentNameRunes:
		fe.add("agentName", RuleMax, "has %d characters; at most %d", n, MaxAgentNameRunes)
		return ""
	}
	for _, r := range name {
		if p := refusedRune(r); p != nil {
			fe.add("agentName", p.rule, "%s", p.reason)
			return ""
		}
		if r == utf8.RuneError || invisible(r) || (!unicode.IsPrint(r) && r != ' ') {
			fe.add("agentName", RulePrintable, "must contain visible, printable characters only (found U+%04X)", r)
			return ""
		}
	}
	return name
}

// decodeCheckIn reads a check-in body strictly. skip names the members
// that failed to decode (wrong JSON type, too many items); members is nil
// when the body is not a JSON object at all.
func (c *Club) decodeCheckIn(r *http.Request) (req CheckInRequest, skip map[string]bool, fe fieldErrors, tooLarge *Problem) {
	members, fe, tooLarge := c.decodeObject(r, checkInFields[:]...)
	if tooLarge != nil || members == nil {
		return req, nil, fe, tooLarge
	}
	skip = map[string]bool{}
	for _, m := range []struct {
		field string
		dst   *string
	}{{"wallet", &req.Wallet}, {"agentName", &req.AgentName}, {"role", &req.Role}} {
		var ok bool
		if *m.dst, ok = stringMember(&fe, members, m.field); !ok {
			skip[m.field] = true
		}
	}
	if raw := members["interests"]; !isNull(raw) {
		var items []json.RawMessage
		switch err := json.Unmarshal(raw, &items); {
		case err != nil:
			fe.add("interests", RuleArray, "must be an array of strings")
			skip["interests"] = true
		case len(items) > MaxInterestItems:
			fe.add("interests", RuleMax, "has %d items; at most %d", len(items), MaxInterestItems)
			skip["interests"] = true
		default:
			for i, it := range items {
				var s string
				if err := json.Unmarshal(it, &s); err != nil {
					fe.add(fmt.Sprintf("interests[%d]", i), RuleString, "must be a string")
					skip["interests"] = true
					continue
				}
				req.Interests = append(req.Interests, s)
			}
		}
	}
	return req, skip, fe, nil
}

// CheckIn validates req and records it in the lounge at the club's clock,
// without rate limits (ServeCheckIn applies them). A *CheckInError reports
// the broken rules.
func (c *Club) CheckIn(ctx context.Context, req CheckInRequest) (Entry, error) {
	var fe fieldErrors
	e := c.validateCheckIn(&fe, req, nil)
	if len(fe) > 0 {
		return Entry{}, &CheckInError{Fields: fe}
	}
	return c.checkIn(ctx, e)
}

func (c *Club) checkIn(ctx context.Context, e LoungeEntry) (Entry, error) {
	e.CheckedInAt = c.now()
	if err := c.store.CheckIn(ctx, e); err != nil {
		return Entry{}, fmt.Errorf("club: check-in: %w", err)
	}
	return entryOf(e), nil
}

// CheckInError lists the rules a check-in broke.
type CheckInError struct {
	Fields []FieldError
}

// Error joins the broken rules' messages.
func (e *CheckInError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Message
	}
	return "club: invalid check-in: " + strings.Join(msgs, "; ")
}

// ServeCheckIn answers POST /api/club/lounge/check-in: 400 with every
// broken rule (field and rule), 413 past the body limit, 429 with
// Retry-After past the per-address or per-wallet limit, else 200 with the
// stored entry and a note that wallet ownership is not verified. Only valid
// check-ins count towards the limits.
func (c *Club) ServeCheckIn(w http.ResponseWriter, r *http.Request) {
	req, skip, fe, tooLarge := c.decodeCheckIn(r)
	if tooLarge != nil {
		writeProblem(w, r, *tooLarge)
		return
	}
	var e LoungeEntry
	if skip != nil { // the body was a JSON object: check every member
		e = c.validateCheckIn(&fe, req, skip)
	}
	if len(fe) > 0 {
		writeProblem(w, r, invalidProblem(fe))
		return
	}
	addrKey := c.clientKey(r)
	addrTok, ok, wait := c.perAddress.take(addrKey)
	if !ok {
		writeRateLimited(w, r, wait, "from this address")
		return
	}
	walletKey := strings.ToLower(e.Wallet)
	walletTok, ok, wait := c.perWallet.take(walletKey)
	if !ok {
		c.perAddress.refund(addrTok)
		writeRateLimited(w, r, wait, "for this wallet")
		return
	}
	entry, err := c.checkIn(r.Context(), e)
	if err != nil {
		c.perAddress.refund(addrTok)
		c.perWallet.refund(walletTok)
		c.writeStoreError(w, r, "check-in", err)
		return
	}
	c.writeJSON(w, r, http.StatusOK, "no-store", CheckInResult{OK: true, Entry: entry, Note: LoungeNote})
}

package club

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/evmaddr"
)

// The club's rules on what its store keeps. A Store implementation applies
// them (package store does, on SQLite and PostgreSQL).
const (
	// LoungeCap is the number of lounge entries kept and listed (newest
	// first).
	LoungeCap = 100
	// LoungeTTL is how long a lounge entry stays listed after its check-in.
	LoungeTTL = 24 * time.Hour
	// MaxInterests bounds the interests of a lounge entry (after
	// normalization and the removal of duplicates).
	MaxInterests = 16
	// ReferralCodeLen is the length of a referral code: 10 characters of
	// the RFC 4648 base32 alphabet (A–Z, 2–7), 50 bits.
	ReferralCodeLen = 10
)

// referralPrefix is the domain-separation prefix of the referral code hash.
const referralPrefix = "svc-referral:"

// ErrReferralCollision is what a Store's PutReferral returns (wrapped) when
// the derived code already belongs to another wallet: a 50-bit hash
// collision, in practice never, reported rather than silently merged.
var ErrReferralCollision = errors.New("club: referral code belongs to another wallet")

// ReferralCode derives the referral code of wallet: the first
// ReferralCodeLen characters of the unpadded RFC 4648 base32 encoding of
// SHA-256("svc-referral:" + the EIP-55 checksummed wallet). The same
// wallet, however it is spelled (any case, "0x" or "0X", surrounding
// space), gets the same code on every instance and every version; no state
// is involved. ok is false when wallet is not an EVM address.
func ReferralCode(wallet string) (code string, ok bool) {
	cs, ok := evmaddr.ChecksumLoose(wallet)
	if !ok {
		return "", false
	}
	sum := sha256.Sum256([]byte(referralPrefix + cs))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])[:ReferralCodeLen], true
}

// NormalizeReferralCode trims and upper-cases s and reports whether the
// result is a well-formed referral code (ReferralCodeLen base32
// characters). It says nothing of whether the code is registered.
func NormalizeReferralCode(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != ReferralCodeLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return "", false
		}
	}
	return s, true
}

// PayerStats summarizes one wallet's settled payments. A wallet that never
// paid has zero PaidCalls and zero times.
type PayerStats struct {
	Wallet    string    // EIP-55 checksummed
	PaidCalls int64     // settled payments
	Tools     int64     // distinct tools bought
	FirstPaid time.Time // earliest settlement; zero if none
	LastPaid  time.Time // latest settlement; zero if none
}

// ReferralStats is what a referral code converted. Only registered codes
// (PutReferral) convert: a settlement counts when it carries the code and
// its payer is not the code's owner (self-referral is ignored). It is
// computed at query time, so settlements that carried the code before it
// was registered count too. A payer who used several codes counts for each.
type ReferralStats struct {
	Code           string
	Registered     bool      // false: unknown code, all counts zero
	Owner          string    // EIP-55 checksummed; empty if not registered
	CreatedAt      time.Time // registration time; zero if not registered
	ReferredPayers int64     // distinct payers other than the owner
	PaidCalls      int64     // settlements carrying the code, owner's excluded
}

// Referral is a registered referral code and the wallet it belongs to.
type Referral struct {
	Code      string    // see ReferralCode
	Owner     string    // EIP-55 checksummed
	CreatedAt time.Time // first registration
}

// LoungeEntry is one self-declared lounge check-in as the store keeps it.
// Wallet ownership is not authenticated; the fields are what the caller
// declared, normalized by the club's rules (see CheckInRequest).
type LoungeEntry struct {
	Wallet      string    // EIP-55 checksummed on the way out
	AgentName   string    // may be empty
	Role        string    // may be empty
	Interests   []string  // at most MaxInterests; never nil on the way out
	CheckedInAt time.Time // the check-in instant
}

// Ledger is what the club reads of the settlement ledger.
type Ledger interface {
	// PayerStats summarizes the settled payments of wallet.
	PayerStats(ctx context.Context, wallet string) (PayerStats, error)
	// ReferralStats reports what a referral code converted; an unknown or
	// malformed code is not an error (Registered false).
	ReferralStats(ctx context.Context, code string) (ReferralStats, error)
}

// Referrals is what the club needs of the referral registry.
type Referrals interface {
	// PutReferral registers the code of owner (derived with ReferralCode)
	// at createdAt. It is idempotent: registering again returns the first
	// registration unchanged. A collision wraps ErrReferralCollision.
	PutReferral(ctx context.Context, owner string, createdAt time.Time) (Referral, error)
	// ReferralByOwner looks up the code registered by wallet.
	ReferralByOwner(ctx context.Context, wallet string) (r Referral, found bool, err error)
}

// Lounge is what the club needs of the lounge store.
type Lounge interface {
	// CheckIn records e, replacing the wallet's previous entry unless that
	// one has a later CheckedInAt (latest wins, whatever the arrival
	// order). Entries beyond the newest LoungeCap are dropped.
	CheckIn(ctx context.Context, e LoungeEntry) error
	// Lounge lists up to limit entries (limit outside 1..LoungeCap means
	// LoungeCap), newest first (ties by wallet), excluding those checked
	// in LoungeTTL or more before now.
	Lounge(ctx context.Context, now time.Time, limit int) ([]LoungeEntry, error)
}

// Store is everything the club needs of the durable store. package store
// implements it on SQLite and PostgreSQL.
type Store interface {
	Ledger
	Referrals
	Lounge
}

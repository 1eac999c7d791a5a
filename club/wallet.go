package club

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/seed1284c1d2/svc/internal/clientlimit"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
)

// checkWallet validates a wallet given as field and returns its EIP-55
// form. The rules, in order: present (required); 0x followed by 40 hex
// digits (evm_address); either all hex letters in one case or exactly the
// EIP-55 checksummed spelling (checksum: a mixed-case address that fails it
// is probably mistyped); not the zero address (nonzero). Surrounding space
// is ignored.
func checkWallet(fe *fieldErrors, field, s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		fe.add(field, RuleRequired, "is required: a public EVM address (0x followed by 40 hex digits)")
		return "", false
	}
	sum, ok := evmaddr.Checksum(s)
	if !ok {
		fe.add(field, RuleEVMAddress, "%q is not an EVM address (0x followed by 40 hex digits)", clip.Runes(s, 48))
		return "", false
	}
	if evmaddr.SpellingOf(s, sum) == evmaddr.BadChecksum {
		fe.add(field, RuleChecksum, "%s has mixed case but fails its EIP-55 checksum (probably a typo); send it in lower case or as %s if it is right", s, sum)
		return "", false
	}
	if strings.Trim(s[2:], "0") == "" {
		fe.add(field, RuleNonZero, "the zero address is not a wallet")
		return "", false
	}
	return sum, true
}

// RefFromRequest returns the referral code a request carries, normalized
// (trimmed, upper case; see NormalizeReferralCode): the "ref" query
// parameter when it is a well-formed code, else the X-Ref header when it
// is one, else "". Whether the code is registered is not checked here: the
// ledger counts only registered codes, and never the owner's own calls.
//
// The server records it with each settlement:
//
//	st.RefCode = club.RefFromRequest(r)
func RefFromRequest(r *http.Request) string {
	if r == nil {
		return ""
	}
	if r.URL != nil {
		if code, ok := NormalizeReferralCode(r.URL.Query().Get(QueryRef)); ok {
			return code
		}
	}
	if code, ok := NormalizeReferralCode(r.Header.Get(HeaderRef)); ok {
		return code
	}
	return ""
}

// clientAddress is the throttling key of a request, by the same rule as the
// server's free-route limit (internal/clientlimit.Key).
func clientAddress(r *http.Request, trusted []netip.Prefix) string {
	return clientlimit.Key(r, trusted)
}

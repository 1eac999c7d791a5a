package wire

import (
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
)

// EqualAddressFold compares two hex addresses case-insensitively.
func EqualAddressFold(a, b string) bool { return strings.EqualFold(a, b) }

// CheckPayTo validates a receiving address: 0x + 40 hex digits, not zero,
// all lower case or with a valid EIP-55 checksum. It returns the
// checksummed form, or what is wrong.
func CheckPayTo(s string) (sum, problem string) {
	a, ok := evmaddr.Parse(s)
	if !ok {
		return "", "must be 0x followed by 40 hex digits"
	}
	if a == (common.Address{}) {
		return "", "must not be the zero address"
	}
	sum = a.Hex()
	if s != sum && s != strings.ToLower(sum) {
		return "", "mixed-case address with an invalid EIP-55 checksum (use lower case or the checksummed form " + sum + ")"
	}
	return sum, ""
}

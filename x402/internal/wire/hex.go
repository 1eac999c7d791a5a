package wire

import (
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/internal/clip"
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

// ParseAddress parses 0x + 40 hex digits (any case; the EIP-55 checksum
// is not enforced, as on chain).
func ParseAddress(s string) (common.Address, bool) { return evmaddr.Parse(s) }

// DecodeHex decodes 0x + exactly 2·len(dst) hex digits into dst.
func DecodeHex(dst []byte, s string) bool { return evmaddr.DecodeHex(dst, s) }

// Clip cuts s to at most n bytes (on a rune boundary) for an error
// message that echoes user input.
func Clip(s string, n int) string { return clip.Bytes(s, n) }

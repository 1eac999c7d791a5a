package wire

import (
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/evmaddr"
)

// ParseHexFixed decodes "0x" (lower-case x) + exactly 2*len(dst) hex digits
// (either case) into dst.
func ParseHexFixed(dst []byte, s string) bool {
	if len(s) != 2+2*len(dst) || s[:2] != "0x" {
		return false
	}
	for i := range dst {
		hi, ok1 := hexNibble(s[2+2*i])
		lo, ok2 := hexNibble(s[3+2*i])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

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

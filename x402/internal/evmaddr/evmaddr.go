// Package evmaddr is where the x402 packages parse EVM addresses and the
// other fixed-size hex values of EVM messages: exactly "0x" (lower-case x)
// followed by the hex digits in any case, nothing trimmed. What a caller
// accepts beyond that (one case only, the zero address) is the caller's
// policy. The x402 tree imports nothing of svc's outside it: this is its
// own copy of the syntax svc's internal/evmaddr fixes for the rest of svc.
package evmaddr

import "github.com/ethereum/go-ethereum/common"

// Parse decodes s, "0x" followed by 40 hex digits in either case; ok is
// false for anything else.
func Parse(s string) (a common.Address, ok bool) {
	if !DecodeHex(a[:], s) {
		return common.Address{}, false
	}
	return a, true
}

// DecodeHex decodes "0x" (lower-case x) followed by exactly 2*len(dst) hex
// digits in either case into dst: the syntax of an address, and of the
// other fixed-size values of EVM messages (nonces, signatures, hashes). On
// false, dst may be partly written.
func DecodeHex(dst []byte, s string) bool {
	if len(s) != 2+2*len(dst) || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for i := range dst {
		hi, ok1 := nibble(s[2+2*i])
		lo, ok2 := nibble(s[3+2*i])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// nibble is the value of hex digit c.
func nibble(c byte) (byte, bool) {
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

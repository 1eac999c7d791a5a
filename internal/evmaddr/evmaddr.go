// Package evmaddr is the one place svc parses EVM addresses and spells them
// in their EIP-55 checksummed form. The checksum itself is go-ethereum's
// (common.Address.Hex); this package only fixes the syntax every caller
// shares: exactly "0x" (lower-case x) followed by 40 hex digits in any case,
// nothing trimmed. What a caller accepts beyond that (one case only, the
// zero address, surrounding space) is the caller's policy.
package evmaddr

import (
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// Len is the length of an address in text: "0x" and 40 hex digits.
const Len = 2 + 2*common.AddressLength

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

// Checksum returns the EIP-55 form of s (see Parse); ok is false when s is
// not an address. A mixed-case s with a wrong checksum is re-spelled, not
// refused: use SpellingOf to tell.
func Checksum(s string) (sum string, ok bool) {
	a, ok := Parse(s)
	if !ok {
		return "", false
	}
	return a.Hex(), true
}

// ChecksumLoose is Checksum for an address read from a person or a
// database rather than a protocol message: surrounding white space is
// ignored and the prefix may be "0X".
func ChecksumLoose(s string) (sum string, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) == Len && s[0] == '0' && s[1] == 'X' {
		s = "0x" + s[2:]
	}
	return Checksum(s)
}

// Spelling is how the hex letters of an address are cased.
type Spelling int

const (
	// OneCase: every hex letter in one case, or no letter at all; such an
	// address carries no checksum.
	OneCase Spelling = iota
	// Checksummed: mixed case equal to the EIP-55 form.
	Checksummed
	// BadChecksum: mixed case that differs from the EIP-55 form (probably
	// a typo).
	BadChecksum
)

// SpellingOf classifies the case of an address that Parse accepts, given
// its EIP-55 form sum (from Checksum).
func SpellingOf(s, sum string) Spelling {
	digits := s[2:]
	switch {
	case digits == strings.ToLower(digits) || digits == strings.ToUpper(digits):
		return OneCase
	case s == sum:
		return Checksummed
	}
	return BadChecksum
}

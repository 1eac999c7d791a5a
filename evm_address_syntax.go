package svc

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/sha3"
)

// Checksum states reported by EVMAddressSyntax.
const (
	// EVMChecksumValid: the letters are in mixed case and match EIP-55.
	EVMChecksumValid = "valid"
	// EVMChecksumInvalid: the letters are in mixed case and do not match
	// EIP-55, which usually means a mistyped address.
	EVMChecksumInvalid = "invalid"
	// EVMChecksumNone: all hex letters share one case (or there are none),
	// so the address carries no checksum.
	EVMChecksumNone = "none"
)

// Reason codes of an address that is not syntactically valid.
const (
	// EVMReasonPrefix: the string does not start with the two characters "0x".
	EVMReasonPrefix = "prefix"
	// EVMReasonLength: "0x" is not followed by exactly 40 characters.
	EVMReasonLength = "length"
	// EVMReasonHex: one of the 40 characters is not a hex digit.
	EVMReasonHex = "hex"
	// EVMReasonEmpty: the candidate is the empty string.
	EVMReasonEmpty = "empty"
)

// EVMAddressSyntaxRequest is the input of EVMAddressSyntax.
type EVMAddressSyntaxRequest struct {
	// Address is the candidate 20-byte address, for example
	// "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed". The member is required
	// in JSON; the empty string is a candidate like any other (not valid,
	// reason "empty").
	Address string `json:"address"`
}

// EVMAddressSyntaxResponse is the output of EVMAddressSyntax.
type EVMAddressSyntaxResponse struct {
	// Valid is true iff the address is exactly "0x" followed by 40 hex
	// digits.
	Valid bool `json:"valid"`
	// Reason explains why the address is not valid (empty when it is).
	Reason string `json:"reason,omitempty"`
	// ReasonCode is the machine-readable reason: "empty", "prefix",
	// "length" or "hex".
	ReasonCode string `json:"reasonCode,omitempty"`
	// Checksum is the EIP-55 status of a valid address: "valid", "invalid"
	// or "none" (empty when the address is not valid).
	Checksum string `json:"checksum,omitempty"`
	// Checksummed is the EIP-55 mixed-case form of a valid address.
	Checksummed string `json:"checksummed,omitempty"`
	// IsZeroAddress is true for 0x0000000000000000000000000000000000000000,
	// which no one controls (tokens sent there are burnt).
	IsZeroAddress bool `json:"isZeroAddress"`
}

// EVMAddressSyntax checks the syntax of an EVM (Ethereum, Base, ...)
// address without any network access.
//
// An address is valid iff it is exactly the two characters "0x" (lower-case
// x; "0X" is not accepted) followed by 40 hex digits: nothing is trimmed, so
// surrounding white space makes it invalid. An invalid address is not an
// error: the response says valid false, with a reason naming the first
// broken rule (empty, then prefix, then length, then the first non-hex
// character and its 0-based character index). The empty string too is a
// candidate that is not an address (reason code "empty"), not an error.
//
// For a valid address the response adds the EIP-55 checksum status and
// form: the checksummed form upper-cases hex letter i when nibble i of
// Keccak-256 (the original, pre-SHA-3 padding) of the 40 lower-case hex
// digits is 8 or more. Checksum is "none" when all letters share one case
// (all lower, all upper or no letters at all: such an address carries no
// checksum), "valid" when the mixed case equals the checksummed form and
// "invalid" otherwise.
func EVMAddressSyntax(ctx context.Context, req EVMAddressSyntaxRequest) (EVMAddressSyntaxResponse, error) {
	if err := ctx.Err(); err != nil {
		return EVMAddressSyntaxResponse{}, errorf(KindTimeout, err, "evm_address_syntax: %v", err)
	}
	if err := req.Validate(); err != nil {
		return EVMAddressSyntaxResponse{}, err
	}
	a := req.Address
	if code, reason := evmSyntaxProblem(a); code != "" {
		return EVMAddressSyntaxResponse{Valid: false, Reason: reason, ReasonCode: code}, nil
	}
	hexPart := a[2:]
	sum := evmChecksummed(hexPart)
	resp := EVMAddressSyntaxResponse{
		Valid:         true,
		Checksummed:   sum,
		IsZeroAddress: strings.Trim(hexPart, "0") == "",
	}
	switch {
	case hexPart == strings.ToLower(hexPart) || hexPart == strings.ToUpper(hexPart):
		resp.Checksum = EVMChecksumNone
	case a == sum:
		resp.Checksum = EVMChecksumValid
	default:
		resp.Checksum = EVMChecksumInvalid
	}
	return resp, nil
}

// evmSyntaxProblem returns the reason code and message of the first broken
// syntax rule of a, or two empty strings when a is valid.
func evmSyntaxProblem(a string) (code, reason string) {
	if a == "" {
		return EVMReasonEmpty, `is empty: an address is "0x" and 40 hex digits`
	}
	if !strings.HasPrefix(a, "0x") {
		if strings.HasPrefix(a, "0X") {
			return EVMReasonPrefix, `must start with a lower-case "0x", not "0X"`
		}
		return EVMReasonPrefix, `must start with "0x"`
	}
	if n := utf8.RuneCountInString(a); n != 42 {
		return EVMReasonLength, fmt.Sprintf(`must be 42 characters ("0x" and 40 hex digits), not %d`, n)
	}
	i := 0
	for _, r := range a {
		if i >= 2 && (r >= utf8.RuneSelf || !evmIsHex(byte(r))) {
			return EVMReasonHex, fmt.Sprintf("character %q at index %d is not a hex digit", r, i)
		}
		i++
	}
	return "", ""
}

func evmIsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// evmChecksummed returns "0x" and the EIP-55 form of 40 hex digits.
func evmChecksummed(hexDigits string) string {
	lower := strings.ToLower(hexDigits)
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(lower))
	sum := h.Sum(nil)
	out := []byte("0x" + lower)
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		if c < 'a' {
			continue
		}
		nibble := sum[i/2]
		if i%2 == 0 {
			nibble >>= 4
		}
		if nibble&0x0f >= 8 {
			out[2+i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

// Validate reports whether EVMAddressSyntax accepts req: any string is a
// candidate, the empty one included. A malformed address is not invalid
// input; it is the answer (valid false with its reason). Only a nil
// request is refused.
func (req *EVMAddressSyntaxRequest) Validate() error {
	if req == nil {
		return InvalidField("", "required", "the request is missing")
	}
	return nil
}

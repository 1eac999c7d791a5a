package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Fingerprint identifies a paid call for the payment journal, the same way
// on every transport (HTTP, MCP, A2A): the hex SHA-256 over the
// length-prefixed parts transport, name (the tool as the transport names
// it) and input, the call's canonical input (Call.Input). Each part is
// written as its decimal byte length, ':' and the bytes. A payment is
// replayed only to the same fingerprint, so the transport and the name
// keep an authorization bought on one transport, or for one tool, from
// buying another.
func Fingerprint(transport, name string, input []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(transport), []byte(name), input} {
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Fingerprint is the call's Fingerprint on transport, under name: it hashes
// the decoded input re-encoded (Input: members in their declared order,
// numbers in plain decimal form), so neither the JSON's formatting nor its
// member order, nor the order of query parameters, changes it; any value
// does.
func (c *Call) Fingerprint(transport, name string) string {
	in, _ := c.p.input() // a decoded request always encodes
	return Fingerprint(transport, name, in)
}

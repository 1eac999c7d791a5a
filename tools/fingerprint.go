package tools

import "github.com/seed1284c1d2/svc/x402/seller"

// Fingerprint is the call's fingerprint for the payment journal on
// transport, under name (seller.Fingerprint, the rule of every transport):
// it hashes the decoded input re-encoded (Input: members in their declared
// order, numbers in plain decimal form), so neither the JSON's formatting
// nor its member order, nor the order of query parameters, changes it; any
// value does.
func (c *Call) Fingerprint(transport, name string) string {
	in, _ := c.p.input() // a decoded request always encodes
	return seller.Fingerprint(transport, name, in)
}

// Package wire holds the low-level helpers shared by package x402 and its
// subpackages: uint256 words parsed from decimal strings, fixed-length hex,
// short echoes of user input in messages, JSON shape checks and the fast
// decoder cursor of payment payloads.
package wire

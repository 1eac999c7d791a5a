// Package wire holds the low-level helpers shared by package x402 and its
// subpackages: uint256 words parsed from decimal strings, fixed-length hex,
// short echoes of user input in messages and JSON shape checks.
package wire

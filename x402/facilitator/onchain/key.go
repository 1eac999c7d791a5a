package onchain

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
)

// KeyFromEnv reads a relayer private key (64 hex digits, with or without
// 0x) from the environment variable name. The key never appears in an
// error.
func KeyFromEnv(name string) (*ecdsa.PrivateKey, error) {
	v, ok := os.LookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("x402 onchain: the relayer key variable %s is not set", name)
	}
	k, err := ParseKey(v)
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: the relayer key in %s: %w", name, err)
	}
	return k, nil
}

// KeyFromFile reads a relayer private key (64 hex digits, with or without
// 0x, surrounding white space ignored) from a file. The key never appears
// in an error.
func KeyFromFile(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("x402 onchain: read the relayer key file %s: %w", path, pe.Err)
		}
		return nil, fmt.Errorf("x402 onchain: read the relayer key file %s", path)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: the relayer key in %s: %w", path, err)
	}
	return k, nil
}

// ParseKey parses a hex private key (64 hex digits, with or without 0x,
// surrounding white space ignored); its errors never echo the input.
func ParseKey(s string) (*ecdsa.PrivateKey, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "0x")
	if len(s) != 64 {
		return nil, fmt.Errorf("must be 64 hex digits (a 32-byte secp256k1 key), got %d characters", len(s))
	}
	k, err := crypto.HexToECDSA(s)
	if err != nil {
		return nil, errors.New("not a valid secp256k1 private key in hex")
	}
	return k, nil
}

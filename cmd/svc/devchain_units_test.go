package main

import (
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/internal/envflag"
)

// TestParseServeEmbeddedChain: --chain embedded is dev mode's defaults
// (simulated terminal, the dev payTo) settled on chain in the process; it
// is refused, naming the conflicting flag, with another way to settle, an
// RPC URL, another network, a non-loopback address or an unknown value.
func TestParseServeEmbeddedChain(t *testing.T) {
	c, err := parseServe([]string{"--dev", "--chain", "embedded"}, io.Discard, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.devChain == nil || c.devMode || c.settle != settleOnchain || !c.devPayTo || c.terminal != "simulated" {
		t.Fatalf("config: devChain %v devMode %v settle %q devPayTo %v terminal %q", c.devChain, c.devMode, c.settle, c.devPayTo, c.terminal)
	}
	if c, err := parseServe(nil, io.Discard, envOf(map[string]string{"SVC_CHAIN": "embedded"})); err != nil || c.devChain == nil {
		t.Fatalf("SVC_CHAIN=embedded: %v", err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown value":      {[]string{"--chain", "anvil"}, `--chain "anvil"`},
		"with a facilitator": {[]string{"--chain", "embedded", "--facilitator-url", "https://f.example", "--pay-to", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"}, "--facilitator-url"},
		"with settle":        {[]string{"--chain", "embedded", "--settle", "onchain"}, "--settle"},
		"with an rpc url":    {[]string{"--chain", "embedded", "--rpc-url", "http://127.0.0.1:8545"}, "--rpc-url"},
		"another network":    {[]string{"--chain", "embedded", "--network", "eip155:84532"}, "--network"},
		"public address":     {[]string{"--dev", "--chain", "embedded", "--addr", "0.0.0.0:8080"}, "loopback"},
	} {
		_, err := parseServe(tc.args, io.Discard, envOf(nil))
		if err == nil || !errors.As(err, new(envflag.UsageError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a usage error naming %q", name, err, tc.want)
		}
	}
}

// TestUSDCString writes atomic units as USDC without trailing zeros.
func TestUSDCString(t *testing.T) {
	for atomic, want := range map[int64]string{0: "0", 1: "0.000001", 5000: "0.005", 1_000_000: "1", 1_009_995_000: "1009.995"} {
		if got := usdcString(big.NewInt(atomic)); got != want {
			t.Errorf("usdcString(%d) = %q, want %q", atomic, got, want)
		}
	}
}

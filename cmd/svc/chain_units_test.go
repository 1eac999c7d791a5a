package main

import (
	"context"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
)

func TestDecimalUnits(t *testing.T) {
	for in, want := range map[string]string{"1": "1000000000", "1.5": "1500000000", "0.000000001": "1", "0": "0", " 2 ": "2000000000"} {
		got, err := decimalUnits(in, 9)
		if err != nil || got.String() != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	if got, err := decimalUnits("", 9); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"-1", "1e9", "0.0000000001", "abc", "1/2"} {
		if _, err := decimalUnits(bad, 9); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzDecimalUnits: never a panic; an accepted amount is a non-negative
// integer that the same number of decimals reads back.
func FuzzDecimalUnits(f *testing.F) {
	for _, s := range []string{"1", "0.5", "", "-1", "1e3", "123456789.123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := decimalUnits(s, 9)
		if err != nil || v == nil {
			return
		}
		if v.Sign() < 0 {
			t.Fatalf("%q gave %s", s, v)
		}
		back, err := decimalUnits(new(big.Rat).SetFrac(v, big.NewInt(1_000_000_000)).FloatString(9), 9)
		if err != nil || back.Cmp(v) != 0 {
			t.Fatalf("%q gave %s, read back as %v %v", s, v, back, err)
		}
	})
}

// TestParseServeOnchain: --settle onchain needs an RPC URL, a relayer key
// and a payTo; errors never show the key.
func TestParseServeOnchain(t *testing.T) {
	const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	env := map[string]string{"SVC_RELAYER_KEY": key}
	c, err := parseServe([]string{"--settle", "onchain", "--rpc-url", "http://127.0.0.1:8545", "--pay-to", payTo, "--max-fee-gwei", "2.5"}, io.Discard, envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.devMode || c.settle != settleOnchain || c.chain.relayerKey == nil {
		t.Fatalf("config %+v", c)
	}
	bad := map[string]struct {
		args []string
		env  map[string]string
	}{
		"unknown settle":     {args: []string{"--settle", "chain"}, env: env},
		"with a facilitator": {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--facilitator-url", "https://f.example"}, env: env},
		"no rpc url":         {args: []string{"--settle", "onchain", "--pay-to", payTo}, env: env},
		"no key":             {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo}},
		"malformed key":      {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo}, env: map[string]string{"SVC_RELAYER_KEY": key[:60]}},
		"no payTo":           {args: []string{"--settle", "onchain", "--rpc-url", "http://x"}, env: env},
		"bad fee cap":        {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--max-fee-gwei", "-1"}, env: env},
		"bad confirmations":  {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--confirmations", "0"}, env: env},
		"bad min balance":    {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--min-relayer-balance", "lots"}, env: env},
		"key in another var": {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--relayer-key-env", "OTHER"}, env: env},
		"missing key file":   {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--relayer-key-file", "/nonexistent/key"}},
		"key as the var":     {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--relayer-key-env", key}},
		"bare key as var":    {args: []string{"--settle", "onchain", "--rpc-url", "http://x", "--pay-to", payTo, "--relayer-key-env", key[2:]}},
	}
	for name, tc := range bad {
		_, err := parseServe(tc.args, io.Discard, envOf(tc.env))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), key[2:20]) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
}

// TestFacilitatorCommandNeedsATokenAndAnRPC: `svc facilitator` refuses to
// start without a bearer token of 16+ characters or without --rpc-url
// (exit status 2), before touching any chain.
func TestFacilitatorCommandNeedsATokenAndAnRPC(t *testing.T) {
	const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"no token":    {[]string{"facilitator", "--rpc-url", "http://127.0.0.1:1"}, map[string]string{"SVC_RELAYER_KEY": key}},
		"short token": {[]string{"facilitator", "--rpc-url", "http://127.0.0.1:1"}, map[string]string{"SVC_RELAYER_KEY": key, "SVC_FACILITATOR_TOKEN": "short"}},
		"no rpc":      {[]string{"facilitator"}, map[string]string{"SVC_RELAYER_KEY": key, "SVC_FACILITATOR_TOKEN": "0123456789abcdef0123"}},
		"no key":      {[]string{"facilitator", "--rpc-url", "http://127.0.0.1:1"}, map[string]string{"SVC_FACILITATOR_TOKEN": "0123456789abcdef0123"}},
		"key as var":  {[]string{"facilitator", "--rpc-url", "http://127.0.0.1:1", "--relayer-key-env", key}, map[string]string{"SVC_FACILITATOR_TOKEN": "0123456789abcdef0123"}},
		// The token itself given instead of its variable's name.
		"token as var": {[]string{"facilitator", "--rpc-url", "http://127.0.0.1:1", "--token-env", "Tok3nGivenAsTheName9f2c"}, map[string]string{"SVC_RELAYER_KEY": key}},
	} {
		var stderr strings.Builder
		if code := run(context.Background(), tc.args, io.Discard, &stderr, envOf(tc.env)); code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", name, code, stderr.String())
		}
		if strings.Contains(stderr.String(), key[2:20]) {
			t.Errorf("%s: the key was printed", name)
		}
		if strings.Contains(stderr.String(), "Tok3nGivenAsTheName9f2c") {
			t.Errorf("%s: the token was printed", name)
		}
	}
}

// TestRedactURLHidesEverySpelling: an RPC error names the endpoint as
// net/http prints it (user name kept, password as ***) or with its path
// key; none of the credentials survive.
func TestRedactURLHidesEverySpelling(t *testing.T) {
	raw := "https://rpcuser:rpcpass1234@rpc.example.com/v2/k3yk3yk3yk3yk3y?apikey=q1q1q1q1q1q1q1"
	for _, msg := range []string{
		`Post "https://rpcuser:***@rpc.example.com/v2/k3yk3yk3yk3yk3y?apikey=q1q1q1q1q1q1q1": dial tcp: connection refused`,
		`Post "` + raw + `": EOF`,
		`bad key k3yk3yk3yk3yk3y`,
	} {
		got := redactURL(errors.New(msg), raw).Error()
		for _, secret := range []string{"rpcuser", "rpcpass1234", "k3yk3yk3yk3yk3y", "q1q1q1q1q1q1q1"} {
			if strings.Contains(got, secret) {
				t.Errorf("%q → %q still holds %q", msg, got, secret)
			}
		}
	}
}

// TestParseServeFacilitatorWithRPC: --rpc-url next to --facilitator-url is
// the read-only endpoint recovery reads the chain from: no relayer key is
// asked for. Without a way to settle, or in dev mode on purpose, it is
// refused.
func TestParseServeFacilitatorWithRPC(t *testing.T) {
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	c, err := parseServe([]string{"--facilitator-url", "https://f.example", "--rpc-url", "https://rpc.example/v2/k3y", "--pay-to", payTo}, io.Discard, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.devMode || c.settle != "" || c.statusRPC != "https://rpc.example/v2/k3y" || c.chain.relayerKey != nil {
		t.Fatalf("config %+v", c)
	}
	if c, err := parseServe([]string{"--facilitator-url", "https://f.example", "--pay-to", payTo}, io.Discard, envOf(nil)); err != nil || c.statusRPC != "" {
		t.Fatalf("without --rpc-url: %+v %v", c, err)
	}
	for name, args := range map[string][]string{
		"dev mode by default": {"--rpc-url", "https://rpc.example/v2/k3y"},
		"dev mode on purpose": {"--dev", "--rpc-url", "https://rpc.example/v2/k3y"},
		"bad confirmations":   {"--facilitator-url", "https://f.example", "--rpc-url", "https://rpc.example/v2/k3y", "--pay-to", payTo, "--confirmations", "0"},
	} {
		_, err := parseServe(args, io.Discard, envOf(nil))
		if err == nil || (!strings.Contains(err.Error(), "rpc-url") && !strings.Contains(err.Error(), "confirmations")) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "k3y") {
			t.Errorf("%s: the error shows the RPC URL: %v", name, err)
		}
	}
}

// TestServeRecoveryNoteOnTheBanner: the start-up banner says what the
// recovery of an interrupted settlement relies on.
func TestServeRecoveryNoteOnTheBanner(t *testing.T) {
	for _, tc := range []struct {
		c    serveConfig
		want string
	}{
		{serveConfig{devMode: true}, "local facilitator's records"},
		{serveConfig{settle: settleOnchain}, "backed by the chain"},
		{serveConfig{facilitatorURL: "https://f.example", statusRPC: "https://rpc.example"}, "backed by the chain"},
		{serveConfig{facilitatorURL: "https://f.example"}, "DEPENDS ON THE FACILITATOR DEDUPLICATING"},
	} {
		if got := recoveryNote(&tc.c); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q in it", tc.c, got, tc.want)
		}
	}
}

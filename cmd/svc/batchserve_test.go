package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// TestServeSchemesFlags: --schemes and the batch-settlement flags are
// checked before anything starts, naming the flag and the rule; the
// receiver authorizer's key never appears in an error; batch-settlement is
// offered first.
func TestServeSchemesFlags(t *testing.T) {
	const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return envOf(m)
	}
	c, err := parseServe(nil, io.Discard, env())
	if err != nil || len(c.batch.names) != 1 || c.batch.names[0] != x402.SchemeExact || c.batch.key != nil {
		t.Fatalf("the default: %+v %v", c.batch, err)
	}
	rpc := []string{"--facilitator-url", "https://facilitator.example", "--pay-to", "0x5eED00000000000000000000000000000000c0DE", "--rpc-url", "http://127.0.0.1:8545"}
	c, err = parseServe(append([]string{"--schemes", "exact,batch-settlement", "--withdraw-delay", "1h", "--min-deposit", "$0.5"}, rpc...), io.Discard,
		env("SVC_RECEIVER_AUTHORIZER_KEY", key))
	if err != nil || strings.Join(c.batch.names, ",") != batch.Scheme+","+x402.SchemeExact || c.batch.key == nil || c.batch.delay != 3600 || c.batch.min != "500000" {
		t.Fatalf("batch-settlement on: %+v %v", c.batch, err)
	}
	path := filepath.Join(t.TempDir(), "auth.key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = parseServe(append([]string{"--schemes", "batch-settlement", "--receiver-authorizer-key-file", path}, rpc...), io.Discard, env()); err != nil || c.batch.key == nil {
		t.Fatalf("the key from a file: %v", err)
	}
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--schemes", "exact,upto"}, nil, `--schemes: "upto" is not a scheme`},
		{[]string{"--schemes", "exact,exact"}, nil, "--schemes names exact twice"},
		{[]string{"--schemes", " , "}, nil, "--schemes names no payment scheme"},
		{[]string{"--schemes", "batch-settlement"}, nil, "needs the receiver authorizer's private key in $SVC_RECEIVER_AUTHORIZER_KEY"},
		{[]string{"--schemes", "batch-settlement", "--withdraw-delay", "5m"}, []string{"SVC_RECEIVER_AUTHORIZER_KEY", key}, "--withdraw-delay 5m0s must be whole seconds from 15m to 720h"},
		{[]string{"--schemes", "batch-settlement", "--withdraw-delay", "900500ms"}, []string{"SVC_RECEIVER_AUTHORIZER_KEY", key}, "must be whole seconds"},
		{[]string{"--schemes", "batch-settlement", "--min-deposit", "lots"}, []string{"SVC_RECEIVER_AUTHORIZER_KEY", key}, `--min-deposit "lots" is not an amount of dollars`},
		{[]string{"--min-deposit", "1"}, nil, "--min-deposit is for --schemes with batch-settlement"},
		{[]string{"--schemes", "batch-settlement", "--facilitator-url", "https://facilitator.example", "--pay-to", "0x5eED00000000000000000000000000000000c0DE"},
			[]string{"SVC_RECEIVER_AUTHORIZER_KEY", key}, "--schemes batch-settlement needs --rpc-url"},
		{[]string{"--schemes", "batch-settlement", "--claim-batch", "0"}, []string{"SVC_RECEIVER_AUTHORIZER_KEY", key}, "--claim-batch must be at least 1"},
		{[]string{"--schemes", "batch-settlement", "--claim-threshold", "much"}, []string{"SVC_RECEIVER_AUTHORIZER_KEY", key}, `--claim-threshold "much" is not an amount of dollars`},
		{[]string{"--schemes", "batch-settlement", "--receiver-authorizer-key-env", key}, nil, "takes the NAME of an environment variable"},
		{[]string{"--schemes", "batch-settlement"}, []string{"SVC_RECEIVER_AUTHORIZER_KEY", key[:20]}, "the receiver authorizer key in $SVC_RECEIVER_AUTHORIZER_KEY"},
	} {
		_, err := parseServe(tc.args, io.Discard, env(tc.env...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), key[2:20]) {
			t.Errorf("%v: the error repeats the key: %v", tc.args, err)
		}
	}
}

// TestServeBatchNeedsAFacilitatorThatSupportsIt: dev mode's local
// facilitator supports no batch-settlement (there is no chain to hold
// channels): svc serve --dev --schemes batch-settlement refuses to start,
// saying why.
func TestServeBatchNeedsAFacilitatorThatSupportsIt(t *testing.T) {
	const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	var out strings.Builder
	err := serve(context.Background(), []string{"--dev", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db"), "--schemes", "batch-settlement"},
		&out, envOf(map[string]string{"SVC_RECEIVER_AUTHORIZER_KEY": key}))
	if err == nil || !strings.Contains(err.Error(), "the facilitator does not support batch-settlement on eip155:8453") {
		t.Fatalf("dev mode with batch-settlement: %v", err)
	}
	if strings.Contains(err.Error()+out.String(), key[2:20]) {
		t.Fatal("the key was printed")
	}
}

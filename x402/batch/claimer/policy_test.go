package claimer_test

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// Policies that could let a withdrawal end unseen, or that make no sense,
// are refused with an error naming the field.
func TestPolicyCheck(t *testing.T) {
	if err := (claimer.Policy{}).Check(); err != nil {
		t.Fatalf("the zero policy (defaults): %v", err)
	}
	if err := (claimer.Policy{Interval: 3 * time.Minute, WithdrawMargin: 6 * time.Minute}).Check(); err != nil {
		t.Fatalf("3 × 3m + 6m fits the shortest delay: %v", err)
	}
	for field, p := range map[string]claimer.Policy{
		"Interval":         {Interval: 4 * time.Minute},
		"WithdrawMargin":   {WithdrawMargin: 15 * time.Minute},
		"WithdrawInterval": {Interval: time.Minute, WithdrawInterval: 2 * time.Minute},
		"MaxBatch":         {MaxBatch: 1001},
		"ScanLimit":        {ScanLimit: -1},
		"Threshold":        {Threshold: big.NewInt(0)},
		"SweepThreshold":   {SweepThreshold: big.NewInt(-1)},
		"durations":        {IdleAfter: -time.Second},
	} {
		err := p.Check()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", field, err)
		}
	}
}

// New names what is missing.
func TestNewRefusesIncompleteConfigs(t *testing.T) {
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
	for want, cfg := range map[string]claimer.Config{
		"network":  {Network: "eip155:1", Channels: chans, Log: log},
		"Channels": {Network: x402.NetworkBase, Log: log},
		"Log":      {Network: x402.NetworkBase, Channels: chans},
		"Chain":    {Network: x402.NetworkBase, Channels: chans, Log: log},
		"MaxBatch": {Network: x402.NetworkBase, Channels: chans, Log: log, Chain: (*ethclient.Client)(nil), Policy: claimer.Policy{MaxBatch: -1}},
	} {
		if _, err := claimer.New(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

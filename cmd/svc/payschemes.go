package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchclient "github.com/seed1284c1d2/svc/x402/batch/client"
	"github.com/seed1284c1d2/svc/x402/client"
)

// payingSchemes names the payment schemes svc pay and svc call pay with.
func payingSchemes() []string { return []string{x402.SchemeExact, batch.Scheme} }

// schemeFlags are the payment scheme flags of svc pay and svc call.
type schemeFlags struct {
	scheme   *string
	deposit  *string
	channels *string
	refund   *bool
}

// addSchemeFlags declares --scheme, --deposit, --channels and --refund.
func addSchemeFlags(f *envflag.Set) *schemeFlags {
	return &schemeFlags{
		scheme: f.String("scheme", "", x402.SchemeExact, "payment scheme to pay with (one of those this client pays: "+strings.Join(payingSchemes(), ", ")+")"),
		deposit: f.String("deposit", "", "", "batch-settlement: USD deposited when a channel is opened or runs short, and the most deposited "+
			"(default: "+fmt.Sprint(batchclient.DepositMultiple)+" calls, at most "+fmt.Sprint(batchclient.DepositMultiple)+" × --max; raised to the server's minDeposit within that cap)"),
		channels: f.String("channels", "SVC_CHANNELS", "", "batch-settlement: directory of the channel state files (default: the user's config dir/svc/channels)"),
		refund:   f.EnvBool("refund", "", false, "batch-settlement: ask the server for the channel's unclaimed remainder back instead of paying"),
	}
}

// check validates the flags before anything is sent.
func (s *schemeFlags) check() error {
	name := strings.TrimSpace(*s.scheme)
	if !slices.Contains(payingSchemes(), name) {
		return envflag.UsageError(fmt.Sprintf("--scheme %q: this client pays %s only", clip.Runes(name, 40), quoteList(payingSchemes())))
	}
	if name != batch.Scheme && (*s.refund || *s.deposit != "") {
		return envflag.UsageError("--deposit and --refund are for --scheme " + batch.Scheme)
	}
	if *s.deposit != "" {
		if _, err := x402.PriceToAtomic(strings.TrimPrefix(strings.TrimSpace(*s.deposit), "$"), 6); err != nil {
			return envflag.UsageError(fmt.Sprintf("--deposit %q is not an amount of dollars", clip.Runes(*s.deposit, 40)))
		}
	}
	return nil
}

// options returns the Transport options paying with the chosen scheme
// with the key of hexKey (empty: a dry run, which chooses without
// signing). The exact scheme needs none: the Transport's Signer pays. A
// batch-settlement deposit is capped by --deposit when given, else by
// DepositMultiple calls at maxUSD each: a server's
// minDeposit above it is refused.
func (s *schemeFlags) options(hexKey, maxUSD string) ([]client.Option, error) {
	name := strings.TrimSpace(*s.scheme)
	if name == x402.SchemeExact {
		return nil, nil
	}
	if hexKey == "" {
		return []client.Option{client.WithSchemes(chooseOnly{name: name})}, nil
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(hexKey), "0x"))
	if err != nil {
		return nil, errors.New("the private key must be 64 hex digits (optionally 0x-prefixed) of a valid secp256k1 key")
	}
	dir := strings.TrimSpace(*s.channels)
	if dir == "" {
		cfg, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no --channels directory and no user config directory: %w", err)
		}
		dir = filepath.Join(cfg, "svc", "channels")
	}
	cfg := batchclient.Config{Key: key, Dir: dir}
	if *s.deposit != "" {
		atomic, _ := x402.PriceToAtomic(strings.TrimPrefix(strings.TrimSpace(*s.deposit), "$"), 6)
		cfg.Deposit, _ = new(big.Int).SetString(atomic, 10)
		if cfg.Deposit.Sign() <= 0 {
			return nil, envflag.UsageError("--deposit must be positive")
		}
		cfg.MaxDeposit = cfg.Deposit
	} else {
		atomic, err := x402.PriceToAtomic(maxUSD, 6)
		if err != nil {
			return nil, envflag.UsageError(fmt.Sprintf("--max %q is not an amount of dollars", clip.Runes(maxUSD, 40)))
		}
		limit, _ := new(big.Int).SetString(atomic, 10)
		cfg.MaxDeposit = limit.Mul(limit, big.NewInt(batchclient.DepositMultiple))
	}
	bs, err := batchclient.New(cfg)
	if err != nil {
		return nil, err
	}
	if *s.refund {
		return []client.Option{client.WithSchemes(bs.Refunder(nil))}, nil
	}
	return []client.Option{client.WithSchemes(bs)}, nil
}

// chooseOnly stands for a scheme in a dry run: the Transport chooses its
// requirements but never pays with it.
type chooseOnly struct{ name string }

// Scheme implements x402.Mechanism.
func (c chooseOnly) Scheme() string { return c.name }

// Networks implements x402.Mechanism: every known network.
func (c chooseOnly) Networks() []string {
	var ids []string
	for _, n := range x402.Networks() {
		ids = append(ids, n.CAIP2)
	}
	return ids
}

// Payload implements x402.ClientScheme: a dry run signs nothing.
func (c chooseOnly) Payload(context.Context, x402.PaymentRequirements, time.Time, time.Duration) (json.RawMessage, error) {
	return nil, errors.New("a dry run pays nothing")
}

// settledLine tells a successful payment response: an amount paid on
// chain, or a channel's charge (batch-settlement), and the refund asked.
func settledLine(sr *x402.SettleResponse) string {
	line := fmt.Sprintf("paid %s on %s to the server's payTo (payer %s), transaction %s", atomicUSDC(sr.Amount), sr.Network, sr.Payer, sr.Transaction)
	re, err := batch.ParseResponseExtra(sr.Extra)
	if err != nil || re.ChannelState == nil {
		return line
	}
	cs := re.ChannelState
	switch {
	case re.ChargedAmount != "" && sr.Transaction != "":
		line = fmt.Sprintf("deposited %s (transaction %s), charged %s", atomicUSDC(sr.Amount), sr.Transaction, atomicUSDC(re.ChargedAmount))
	case re.ChargedAmount != "":
		line = "charged " + atomicUSDC(re.ChargedAmount)
	default:
		line = fmt.Sprintf("refunded %s, transaction %s", atomicUSDC(sr.Amount), sr.Transaction)
	}
	return fmt.Sprintf("%s on channel %s (payer %s; charged in all %s, balance %s, claimed %s)", line, clip.Runes(cs.ChannelID, 70), sr.Payer,
		atomicUSDC(cs.ChargedCumulativeAmount), atomicUSDC(cs.Balance), atomicUSDC(cs.TotalClaimed))
}

package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	batchserver "github.com/seed1284c1d2/svc/x402/batch/server"
)

// servingSchemes are the payment schemes svc serve sells with.
func servingSchemes() []string { return []string{x402.SchemeExact, batch.Scheme} }

// sellSchemeFlags are svc serve's payment scheme flags. The receiver
// authorizer's key is the on-chain facilitator's (authorizerFlags): one
// key, whichever part signs.
type sellSchemeFlags struct {
	schemes       *string
	auth          *authorizerFlags
	withdrawDelay *time.Duration
	minDeposit    *string

	// The claimer's policy.
	claimInterval  *time.Duration
	claimThreshold *string
	claimIdle      *time.Duration
	claimBatch     *int

	// Resolved by check.
	names  []string // in the order offered
	policy claimer.Policy
	key    *ecdsa.PrivateKey
	delay  uint64 // seconds
	min    string // atomic units, "" for none
}

// addSellSchemeFlags declares --schemes and the batch-settlement flags; auth
// holds the receiver authorizer's key flags.
func addSellSchemeFlags(f *envflag.Set, auth *authorizerFlags) *sellSchemeFlags {
	return &sellSchemeFlags{
		schemes: f.String("schemes", "SVC_SCHEMES", x402.SchemeExact, "payment schemes offered, comma-separated ("+strings.Join(servingSchemes(), ", ")+
			"); batch-settlement is offered first when on (the cheapest to settle)"),
		auth:          auth,
		withdrawDelay: f.Duration("withdraw-delay", "SVC_WITHDRAW_DELAY", time.Duration(batchserver.DefaultWithdrawDelay)*time.Second, "batch-settlement: the channels' withdrawal delay (15m to 720h): how long a payer's withdrawal waits, the time the server has to claim"),
		minDeposit:    f.String("min-deposit", "SVC_MIN_DEPOSIT", "", "batch-settlement: smallest deposit asked of a channel, in USD (default: none)"),
		claimInterval: f.Duration("claim-interval", "SVC_CLAIM_INTERVAL", claimer.DefaultInterval,
			"batch-settlement: time between two passes of the claimer (each reads the escrow's view of every channel with unclaimed charges; a pending withdrawal is claimed at once)"),
		claimThreshold: f.String("claim-threshold", "SVC_CLAIM_THRESHOLD", "$1", "batch-settlement: claim every channel once their unclaimed total reaches this many USD"),
		claimIdle:      f.Duration("claim-idle", "SVC_CLAIM_IDLE", time.Hour, "batch-settlement: claim a channel not charged for this long (0: never for idleness)"),
		claimBatch:     f.Int("claim-batch", "SVC_CLAIM_BATCH", claimer.DefaultMaxBatch, "batch-settlement: the most channels one claim transaction carries"),
	}
}

// sellSchemeFlagNames are the flags of addSellSchemeFlags, for the help's groups.
func sellSchemeFlagNames() []string {
	return []string{"schemes", "receiver-authorizer-key-env", "receiver-authorizer-key-file", "withdraw-delay", "min-deposit",
		"claim-interval", "claim-threshold", "claim-idle", "claim-batch"}
}

// on reports whether batch-settlement is offered.
func (b *sellSchemeFlags) on() bool { return slices.Contains(b.names, batch.Scheme) }

// check resolves the flags; the receiver authorizer's key is read only when
// batch-settlement is offered, and never appears in an error.
func (b *sellSchemeFlags) check(getenv func(string) string) error {
	b.names = nil
	for _, s := range strings.Split(*b.schemes, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(servingSchemes(), s) {
			return envflag.UsageError(fmt.Sprintf("--schemes: %q is not a scheme this server sells with (%s)", clip.Runes(s, 40), strings.Join(servingSchemes(), ", ")))
		}
		if slices.Contains(b.names, s) {
			return envflag.UsageError(fmt.Sprintf("--schemes names %s twice", s))
		}
		b.names = append(b.names, s)
	}
	if len(b.names) == 0 {
		return envflag.UsageError("--schemes names no payment scheme (" + strings.Join(servingSchemes(), ", ") + ")")
	}
	if b.on() {
		// The cheapest to settle first: a voucher settles with a write.
		b.names = append([]string{batch.Scheme}, slices.DeleteFunc(b.names, func(s string) bool { return s == batch.Scheme })...)
	}
	d := *b.withdrawDelay
	if d%time.Second != 0 || d < batch.MinWithdrawDelay*time.Second || d > batch.MaxWithdrawDelay*time.Second {
		return envflag.UsageError(fmt.Sprintf("--withdraw-delay %s must be whole seconds from 15m to 720h (the escrow's bounds)", d))
	}
	b.delay = uint64(d / time.Second)
	if v := strings.TrimPrefix(strings.TrimSpace(*b.minDeposit), "$"); v != "" {
		atomic, err := x402.PriceToAtomic(v, 6)
		if err != nil {
			return envflag.UsageError(fmt.Sprintf("--min-deposit %q is not an amount of dollars", clip.Runes(*b.minDeposit, 40)))
		}
		b.min = atomic
	}
	threshold, err := x402.PriceToAtomic(strings.TrimPrefix(strings.TrimSpace(*b.claimThreshold), "$"), 6)
	if err != nil {
		return envflag.UsageError(fmt.Sprintf("--claim-threshold %q is not an amount of dollars", clip.Runes(*b.claimThreshold, 40)))
	}
	b.policy = claimer.Policy{Interval: *b.claimInterval, IdleAfter: *b.claimIdle, MaxBatch: *b.claimBatch}
	if t, ok := new(big.Int).SetString(threshold, 10); ok && t.Sign() > 0 {
		b.policy.Threshold = t
	}
	if *b.claimBatch < 1 {
		return envflag.UsageError("--claim-batch must be at least 1")
	}
	if *b.claimIdle < 0 {
		return envflag.UsageError("--claim-idle must not be negative")
	}
	if err := b.policy.Check(); err != nil {
		return envflag.UsageError("--claim-interval: " + err.Error())
	}
	if !b.on() {
		if b.min != "" {
			return envflag.UsageError("--min-deposit is for --schemes with " + batch.Scheme)
		}
		return nil
	}
	k, err := b.readKey(getenv)
	if err != nil {
		return err
	}
	b.key = k
	return nil
}

// readKey reads the receiver authorizer's key (--receiver-authorizer-key-
// file, else the variable --receiver-authorizer-key-env names, by default
// SVC_RECEIVER_AUTHORIZER_KEY), which batch-settlement needs.
func (b *sellSchemeFlags) readKey(getenv func(string) string) (*ecdsa.PrivateKey, error) {
	if err := b.auth.check(getenv); err != nil {
		return nil, err
	}
	if b.auth.key == nil {
		return nil, envflag.UsageError(fmt.Sprintf("--schemes %s needs the receiver authorizer's private key in $%s (or --receiver-authorizer-key-env, --receiver-authorizer-key-file): it signs the channels' claims and refunds",
			batch.Scheme, defaultAuthorizerKeyEnv))
	}
	return b.auth.key, nil
}

// serverSchemes returns the schemes of --schemes in the order offered:
// exact as built, and batch-settlement over fac, whose /supported must
// list batch-settlement on network (the local facilitator of dev mode
// does not: there is no chain to hold channels), with the channel store
// of st.
func (b *sellSchemeFlags) serverSchemes(ctx context.Context, exact x402.ServerScheme, fac x402.Facilitator, st store.Store, network string, log *slog.Logger) ([]x402.ServerScheme, error) {
	var out []x402.ServerScheme
	for _, name := range b.names {
		switch name {
		case x402.SchemeExact:
			out = append(out, exact)
		case batch.Scheme:
			if err := supports(ctx, fac, batch.Scheme, network); err != nil {
				return nil, err
			}
			s, err := batchserver.New(batchserver.Config{Facilitator: fac, Store: st.Channels(), Key: b.key, WithdrawDelay: b.delay,
				MinDeposit: b.min, Networks: []string{network}, Logger: log})
			if err != nil {
				return nil, err
			}
			log.Info("svc: batch-settlement offered", "receiver_authorizer", s.ReceiverAuthorizer().Hex(), "withdraw_delay_s", b.delay)
			out = append(out, s)
		}
	}
	return out, nil
}

// supports checks that fac's /supported lists scheme on network.
func supports(ctx context.Context, fac x402.Facilitator, scheme, network string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	sup, err := fac.Supported(ctx)
	if err != nil {
		return fmt.Errorf("--schemes %s: the facilitator's supported kinds could not be read: %w", scheme, err)
	}
	for _, k := range sup.Kinds {
		if k.Scheme == scheme && x402.CAIP2(k.Network) == network && (k.X402Version == 0 || k.X402Version == x402.Version) {
			return nil
		}
	}
	return errors.New("--schemes " + scheme + ": the facilitator does not support " + scheme + " on " + network +
		" (its /supported does not list it; the local facilitator of dev mode never does, as it has no chain to hold channels): " +
		"use a facilitator that does, or drop " + scheme + " from --schemes")
}

// startClaimer starts the claimer of the batch-settlement channels of st
// on network (when batch-settlement is offered): it claims what the server
// charged through fac, reading the escrow through rpcURL, with its
// metrics in reg. The returned function stops it and waits.
func (b *sellSchemeFlags) startClaimer(ctx context.Context, network, rpcURL string, fac x402.Facilitator, st store.Store, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
	if !b.on() {
		return func() {}, nil
	}
	ec, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("batch-settlement claimer: the chain: %w", err)
	}
	c, err := claimer.New(claimer.Config{Network: network, Channels: st.Channels(), Log: st.BatchClaims(), Facilitator: fac, Chain: ec,
		AuthorizerKey: b.key, Policy: b.policy, Registerer: reg, Logger: log.With("component", "claimer")})
	if err != nil {
		ec.Close()
		return nil, fmt.Errorf("batch-settlement claimer: %w", err)
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(cctx); err != nil && cctx.Err() == nil {
			log.Error("svc: the batch-settlement claimer stopped", "error", err)
		}
	}()
	return func() {
		cancel()
		<-done
		ec.Close()
	}, nil
}

package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// defaultAuthorizerKeyEnv is where the batch-settlement receiver
// authorizer key is read from when --receiver-authorizer-key-env is not
// given (and nothing is read when it is unset).
const defaultAuthorizerKeyEnv = "SVC_RECEIVER_AUTHORIZER_KEY"

// authorizerFlags are the flags of the on-chain facilitator's optional
// batch-settlement receiver authorizer key.
type authorizerFlags struct {
	keyEnv, keyFile *string
	key             *ecdsa.PrivateKey // read by check; nil: none
}

func addAuthorizerFlags(f *envflag.Set) *authorizerFlags {
	return &authorizerFlags{
		keyEnv: f.String("receiver-authorizer-key-env", "", "", "batch-settlement: name of the environment variable holding the facilitator's receiver authorizer key "+
			"(hex; it signs the claims and refunds of the channels that name it, and /supported announces its address); default "+defaultAuthorizerKeyEnv+" when set, else none"),
		keyFile: f.String("receiver-authorizer-key-file", "SVC_RECEIVER_AUTHORIZER_KEY_FILE", "", "batch-settlement: file holding the receiver authorizer key (instead of --receiver-authorizer-key-env)"),
	}
}

// check reads the receiver authorizer key, if one is configured. The key
// never appears in an error.
func (a *authorizerFlags) check(getenv func(string) string) error {
	if p := strings.TrimSpace(*a.keyFile); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return envflag.UsageError(fmt.Sprintf("--receiver-authorizer-key-file %s: %v", p, err))
		}
		k, err := onchain.ParseKey(string(b))
		if err != nil {
			return envflag.UsageError(fmt.Sprintf("the receiver authorizer key in %s: %v", p, err))
		}
		a.key = k
		return nil
	}
	name := strings.TrimSpace(*a.keyEnv)
	explicit := name != ""
	if !explicit {
		name = defaultAuthorizerKeyEnv
	}
	if err := envNameError("--receiver-authorizer-key-env", defaultAuthorizerKeyEnv, name); err != nil {
		return err
	}
	v := getenv(name)
	if strings.TrimSpace(v) == "" {
		if explicit {
			return envflag.UsageError(fmt.Sprintf("--receiver-authorizer-key-env: $%s is empty", name))
		}
		return nil
	}
	k, err := onchain.ParseKey(v)
	if err != nil {
		return envflag.UsageError(fmt.Sprintf("the receiver authorizer key in $%s: %v", name, err))
	}
	a.key = k
	return nil
}

// onchainMux is the on-chain facilitator serving both of its schemes,
// exact and batch-settlement, through one facilitator.Mux and one relayer.
// It keeps the relayer's readiness, metrics and Close, which svc serve's
// health and shutdown use.
type onchainMux struct {
	*facilitator.Mux
	fac   *onchain.Facilitator
	batch *onchain.BatchFacilitator
}

// Relayer returns the relayer's address.
func (m *onchainMux) Relayer() common.Address { return m.fac.Relayer() }

// RelayerBalance returns the relayer's native balance.
func (m *onchainMux) RelayerBalance(ctx context.Context) (*big.Int, error) {
	return m.fac.RelayerBalance(ctx)
}

// Pending returns the number of transactions sent and not yet mined.
func (m *onchainMux) Pending() int { return m.fac.Pending() }

// Ready reports whether the relayer can settle.
func (m *onchainMux) Ready(ctx context.Context) error { return m.fac.Ready(ctx) }

// Close stops following the transactions in flight.
func (m *onchainMux) Close() { m.fac.Close() }

// buildMux connects the on-chain facilitator and registers it and its
// batch-settlement facilitator (with the receiver authorizer key, if any)
// in one Mux.
func (o *onchainFlags) buildMux(ctx context.Context, network, payTo string, signers *exact.SignerCache, log *slog.Logger) (*onchainMux, error) {
	f, err := o.build(ctx, network, payTo, signers, log)
	if err != nil {
		return nil, err
	}
	b := f.Batch(onchain.BatchConfig{ReceiverAuthorizerKey: o.auth.key})
	m, err := facilitator.NewMux(f, b)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("on-chain facilitator: %w", err)
	}
	return &onchainMux{Mux: m, fac: f, batch: b}, nil
}

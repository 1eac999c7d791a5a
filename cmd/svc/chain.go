package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/internal/scrub"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// settleOnchain is the --settle value of svc serve that settles on chain
// in-process.
const settleOnchain = "onchain"

// defaultRelayerKeyEnv is where the relayer key is read from by default.
const defaultRelayerKeyEnv = "SVC_RELAYER_KEY"

// defaultTokenEnv is the variable holding svc facilitator's bearer token
// when --token-env is not given.
const defaultTokenEnv = "SVC_FACILITATOR_TOKEN"

// onchainFlags are the flags of the on-chain facilitator, shared by
// `svc serve --settle onchain` and `svc facilitator`.
type onchainFlags struct {
	rpcURL, keyEnv, keyFile *string
	maxFeeGwei, maxTipGwei  *string
	minBalanceEth           *string
	confirmations           *int
	relayerKey              *ecdsa.PrivateKey // read by check
	auth                    *authorizerFlags  // the batch-settlement receiver authorizer key
}

func addOnchainFlags(f *envflag.Set) *onchainFlags {
	return &onchainFlags{
		rpcURL:        f.String("rpc-url", "SVC_RPC_URL", "", "EVM JSON-RPC endpoint of the payment network (never logged): the on-chain facilitator settles through it; svc serve --facilitator-url reads it (read-only, no key) to recover interrupted settlements from the chain"),
		keyEnv:        f.String("relayer-key-env", "", defaultRelayerKeyEnv, "name of the environment variable holding the relayer's private key (hex; it pays the gas)"),
		keyFile:       f.String("relayer-key-file", "SVC_RELAYER_KEY_FILE", "", "file holding the relayer's private key (instead of --relayer-key-env)"),
		maxFeeGwei:    f.String("max-fee-gwei", "SVC_MAX_FEE_GWEI", "", "cap of the fee per gas of a settlement, in gwei (empty: no cap)"),
		maxTipGwei:    f.String("max-tip-gwei", "SVC_MAX_TIP_GWEI", "", "cap of the priority fee per gas, in gwei (empty: the node's suggestion)"),
		minBalanceEth: f.String("min-relayer-balance", "SVC_MIN_RELAYER_BALANCE", "0", "relayer balance (ETH) under which settlements stop (503) and readiness fails"),
		confirmations: f.Int("confirmations", "SVC_CONFIRMATIONS", onchain.DefaultConfirmations, "blocks a settlement waits for (1: its own); with --facilitator-url --rpc-url, the blocks a transfer needs before recovery takes it as proof"),
		auth:          addAuthorizerFlags(f),
	}
}

// check validates the flags and reads the relayer key, without touching
// the chain.
func (o *onchainFlags) check(getenv func(string) string) error {
	if strings.TrimSpace(*o.rpcURL) == "" {
		return envflag.UsageError("on-chain settlement needs --rpc-url (SVC_RPC_URL)")
	}
	for name, v := range map[string]*string{"--max-fee-gwei": o.maxFeeGwei, "--max-tip-gwei": o.maxTipGwei} {
		if _, err := decimalUnits(*v, 9); err != nil {
			return envflag.UsageError(name + ": " + err.Error())
		}
	}
	if _, err := decimalUnits(*o.minBalanceEth, 18); err != nil {
		return envflag.UsageError("--min-relayer-balance: " + err.Error())
	}
	if *o.confirmations < 1 || *o.confirmations > 1000 {
		return envflag.UsageError("--confirmations must be between 1 and 1000")
	}
	k, err := o.key(getenv)
	if err != nil {
		return err
	}
	o.relayerKey = k
	return o.auth.check(getenv)
}

// decimalUnits reads a non-negative decimal amount scaled by 10^decimals
// ("1.5" gwei → 1500000000 wei); "" is nil.
func decimalUnits(s string, decimals int) (*big.Int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 || strings.ContainsAny(s, "eE/") {
		return nil, fmt.Errorf("%q is not a non-negative decimal number", s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)))
	if !r.IsInt() {
		return nil, fmt.Errorf("%q has more than %d decimals", s, decimals)
	}
	return r.Num(), nil
}

// build connects the facilitator to the chain.
func (o *onchainFlags) build(ctx context.Context, network, payTo string, signers *exact.SignerCache, log *slog.Logger) (*onchain.Facilitator, error) {
	maxFee, _ := decimalUnits(*o.maxFeeGwei, 9)
	maxTip, _ := decimalUnits(*o.maxTipGwei, 9)
	minBal, _ := decimalUnits(*o.minBalanceEth, 18)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f, err := onchain.New(ctx, onchain.Config{
		RPCURL: strings.TrimSpace(*o.rpcURL), Network: network, RelayerKey: o.relayerKey, PayTo: payTo,
		Verifier: exact.Verifier{Signers: signers}, MaxFeePerGas: maxFee, MaxPriorityFeePerGas: maxTip,
		MinRelayerBalance: minBal, Confirmations: uint64(*o.confirmations), Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("on-chain facilitator: %w", redactURL(err, *o.rpcURL))
	}
	return f, nil
}

// key reads the relayer key from --relayer-key-file, else from the
// variable --relayer-key-env names. The key never appears in an error.
func (o *onchainFlags) key(getenv func(string) string) (*ecdsa.PrivateKey, error) {
	if p := strings.TrimSpace(*o.keyFile); p != "" {
		return onchain.KeyFromFile(p)
	}
	name := strings.TrimSpace(*o.keyEnv)
	if name == "" {
		name = defaultRelayerKeyEnv
	}
	if err := envNameError("--relayer-key-env", defaultRelayerKeyEnv, name); err != nil {
		return nil, err
	}
	v := getenv(name)
	if strings.TrimSpace(v) == "" {
		return nil, envflag.UsageError(fmt.Sprintf("on-chain settlement needs the relayer's private key in $%s (or --relayer-key-file)", name))
	}
	k, err := onchain.ParseKey(v)
	if err != nil {
		return nil, envflag.UsageError(fmt.Sprintf("the relayer key in $%s: %v", name, err))
	}
	return k, nil
}

// statusReader connects to the RPC endpoint of svc serve --facilitator-url
// --rpc-url: a read-only reader of the chain recovery asks what became of
// an interrupted settlement (a transfer counts once it has confirmations
// blocks). The endpoint's chain id must be network's.
func statusReader(ctx context.Context, rpcURL, network string, confirmations uint64) (*onchain.StatusReader, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: strings.TrimSpace(rpcURL), Network: network, Confirmations: confirmations})
	if err != nil {
		return nil, fmt.Errorf("--rpc-url: %w", redactURL(err, rpcURL))
	}
	return r, nil
}

// redactURL keeps an RPC URL (which may carry an API key) out of an error.
func redactURL(err error, url string) error {
	url = strings.TrimSpace(url)
	if url != "" && strings.Contains(err.Error(), url) {
		err = errors.New(strings.ReplaceAll(err.Error(), url, "<rpc-url>"))
	}
	// What is left of it in other spellings (net/http prints the user name
	// and "***" for the password; a key in the path or the query).
	var sec scrub.Secrets
	sec.AddPrivateURL(url)
	return sec.Err(err)
}

// facilitatorCmd runs `svc facilitator`: the on-chain facilitator served
// over the x402 facilitator HTTP API behind a bearer token.
func facilitatorCmd(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) (err error) {
	f := envflag.New("facilitator", stderr, getenv, "svc facilitator --rpc-url URL [--relayer-key-env NAME | --relayer-key-file PATH] [--token-env NAME] [flags]")
	addr := f.String("addr", "SVC_FACILITATOR_ADDR", "127.0.0.1:8402", "listen address (port 0 picks a free port; the bound address is printed)")
	network := f.String("network", "SVC_NETWORK", x402.NetworkBase, "network settled on (CAIP-2 id); the RPC endpoint must serve it")
	payTo := f.String("pay-to", "SVC_PAY_TO", "", "when set, the only receiving wallet accepted")
	tokenEnv := f.String("token-env", "", defaultTokenEnv, "name of the environment variable holding the bearer token clients must send")
	logLevel := f.String("log-level", "SVC_LOG_LEVEL", "info", "debug, info, warn or error")
	logFormat := f.String("log-format", "SVC_LOG_FORMAT", "text", "text or json")
	oc := addOnchainFlags(f)
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	if err := oc.check(getenv); err != nil {
		return err
	}
	if p := strings.TrimSpace(*payTo); p != "" {
		if err := payToError("--pay-to", p); err != nil {
			return err
		}
	}
	n, ok := x402.LookupNetwork(strings.TrimSpace(*network))
	if !ok {
		return envflag.UsageError(fmt.Sprintf("--network %q is not a known network", *network))
	}
	token := strings.TrimSpace(getenv(strings.TrimSpace(*tokenEnv)))
	if len(token) < minTokenLen {
		return envflag.UsageError("the facilitator spends the relayer's gas: set a bearer token of at least 16 characters in " +
			tokenVarWhere("--token-env", defaultTokenEnv, strings.TrimSpace(*tokenEnv)))
	}
	// Neither the RPC URL's key nor the token leaves in a log line, an
	// error or an answer (see secrets).
	var sec scrub.Secrets
	sec.AddPrivateURL(*oc.rpcURL)
	sec.Add(token)
	defer func() { err = sec.Err(err) }()
	stderr = sec.Writer(stderr)
	log, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	mux, err := oc.buildMux(ctx, n.CAIP2, strings.TrimSpace(*payTo), exact.NewSignerCache(4096), log)
	if err != nil {
		return err
	}
	defer mux.Close()
	fac := mux.fac
	ln, err := net.Listen("tcp", strings.TrimSpace(*addr))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	api := fac.Handler(onchain.ServerOptions{
		Auth:  func(h http.Handler) http.Handler { return tokenAuth(h, token, "x402 facilitator", false) },
		Mask:  sec.Err,
		Serve: mux,
	})
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "svc facilitator %s — on-chain settlement on %s (exact, batch-settlement) — listening on http://%s\n  relayer: %s (send it gas)\n",
		buildVersion(), n.CAIP2, ln.Addr(), fac.Relayer().Hex())
	if a := mux.batch.ReceiverAuthorizer(); a != (common.Address{}) {
		fmt.Fprintf(stderr, "  receiver authorizer (batch-settlement): %s\n", a.Hex())
	}
	log.Info("svc facilitator: listening", "addr", ln.Addr().String(), "network", n.CAIP2, "relayer", fac.Relayer().Hex())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return srv.Shutdown(sctx)
}

// reconcile runs `svc reconcile`: every settled payment of a period in the
// journal is compared with the chain, and the mismatches are listed.
func reconcile(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("reconcile", stderr, getenv, "svc reconcile --from DATE --to DATE --rpc-url URL [--db DSN] [--pay-to ADDR] [--json]")
	db := f.String("db", "SVC_DATABASE_URL", defaultDB, "SQLite file path, or a postgres:// URL")
	rpcURL := f.String("rpc-url", "SVC_RPC_URL", "", "EVM JSON-RPC endpoint of the payments' chain (never logged)")
	fromS := f.String("from", "", "", "start of the period (RFC 3339 or YYYY-MM-DD, inclusive), by settlement time; default 30 days before --to")
	toS := f.String("to", "", "", "end of the period (RFC 3339 or YYYY-MM-DD, exclusive); default the end of today (UTC)")
	payTo := f.String("pay-to", "SVC_PAY_TO", "", "the wallet the payments were due to, for ledger rows whose payment record has been pruned (their payTo is checked against it)")
	asJSON := f.Bool("json", false, "print the mismatches as JSON lines")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	from, to, err := ledger.ParsePeriod(*fromS, *toS, time.Now())
	if err != nil {
		return envflag.UsageError(err.Error())
	}
	if strings.TrimSpace(*rpcURL) == "" {
		return envflag.UsageError("--rpc-url (SVC_RPC_URL) is required: the chain to compare with")
	}
	defaultPayTo := strings.TrimSpace(*payTo)
	if defaultPayTo != "" {
		if err := payToError("--pay-to", defaultPayTo); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	st, err := openStoreReadOnly(ctx, strings.TrimSpace(*db))
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := ethclient.DialContext(ctx, strings.TrimSpace(*rpcURL))
	if err != nil {
		return fmt.Errorf("rpc: %w", redactURL(err, *rpcURL))
	}
	defer c.Close()
	type finding struct {
		SettledAt   time.Time `json:"settledAt"`
		Tool        string    `json:"tool"`
		Network     string    `json:"network"`
		Asset       string    `json:"asset"`
		Payer       string    `json:"payer"`
		PayTo       string    `json:"payTo,omitempty"`
		Nonce       string    `json:"nonce"`
		Amount      string    `json:"amount"`
		Transaction string    `json:"transaction"`
		Mismatch    string    `json:"mismatch"`
		Detail      string    `json:"detail"`
	}
	dev := 0 // dev-mode rows: nothing was settled on chain
	// Channel charges (batch-settlement) reach payTo through the claims:
	// counted here, and the claims are compared with the escrow below.
	charges, chargedAmount := 0, new(big.Int)
	networks := map[string]bool{}
	// Streamed: the chain is asked row by row, outside any database read.
	rec, err := onchain.Reconcile(ctx, c, func(yield func(finding, onchain.Settled) error) error {
		return st.EachSettlement(ctx, from, to, func(r ledger.Settlement) error {
			if ledger.IsDev(r) {
				dev++
				return nil
			}
			if ledger.IsChannelCharge(r) {
				charges++
				if a, ok := new(big.Int).SetString(r.Amount, 10); ok {
					chargedAmount.Add(chargedAmount, a)
				}
				networks[r.Network] = true
				return nil
			}
			s := onchain.Settled{Transaction: r.Transaction, Token: r.Asset, Payer: r.Payer, Nonce: r.Nonce, Amount: r.Amount, PayTo: defaultPayTo}
			// The payment record, while it is kept, names the payTo the
			// payer signed for.
			rec, err := st.Get(ctx, exact.NonceKey(r.Network, r.Asset, r.Payer, r.Nonce))
			switch {
			case err == nil && rec.PayTo != "":
				s.PayTo = rec.PayTo
			case err != nil && !errors.Is(err, engine.ErrNotFound):
				return fmt.Errorf("payment journal: %w", err)
			}
			return yield(finding{r.SettledAt, r.ToolKey, r.Network, r.Asset, r.Payer, s.PayTo, r.Nonce, r.Amount, r.Transaction, "", ""}, s)
		})
	})
	if err != nil {
		return redactURL(err, *rpcURL)
	}
	checked, unchecked := rec.Checked, rec.NoPayee
	found := make([]finding, 0, len(rec.Mismatches))
	for _, m := range rec.Mismatches {
		x := m.Row
		x.Mismatch, x.Detail = m.Mismatch.Kind, m.Mismatch.Detail
		found = append(found, x)
	}
	// Every channel the claim log says was claimed: the escrow's
	// totalClaimed must be at least the claim's total.
	claimsChecked := 0
	for _, network := range slices.Sorted(maps.Keys(networks)) {
		claimed, err := st.BatchClaims().Claimed(ctx, network, 1<<20)
		if err != nil {
			return fmt.Errorf("batch claim log: %w", err)
		}
		ids := make([]common.Hash, len(claimed))
		for i, cl := range claimed {
			ids[i] = cl.ChannelID
		}
		views, err := claimer.ReadChannels(ctx, c, ids)
		if err != nil {
			return fmt.Errorf("reconcile: %w", redactURL(err, *rpcURL))
		}
		for _, cl := range claimed {
			oc, ok := views[cl.ChannelID]
			if !ok {
				return fmt.Errorf("reconcile: the escrow's view of channel %s was not read", cl.ChannelID.Hex())
			}
			claimsChecked++
			if oc.TotalClaimed.Cmp(cl.TotalClaimed) < 0 {
				found = append(found, finding{SettledAt: cl.ClaimedAt, Tool: "(claim)", Network: network, Asset: cl.Channel.Token.Hex(), Payer: cl.Channel.Payer.Hex(),
					PayTo: cl.Channel.Receiver.Hex(), Nonce: cl.ChannelID.Hex(), Amount: cl.TotalClaimed.String(), Transaction: cl.ClaimID,
					Mismatch: "claim_not_on_chain", Detail: fmt.Sprintf("the escrow's totalClaimed is %s, the claim log's %s", oc.TotalClaimed, cl.TotalClaimed)})
			}
		}
	}
	checked += claimsChecked
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, x := range found {
			if err := enc.Encode(x); err != nil {
				return err
			}
		}
	} else {
		fmt.Fprintf(stdout, "reconcile %s .. %s: %d settled payments checked against the chain, %d mismatches",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), checked, len(found))
		if dev > 0 {
			fmt.Fprintf(stdout, "; %d dev-mode payments skipped (the local facilitator settled nothing on chain)", dev)
		}
		if charges > 0 {
			fmt.Fprintf(stdout, "; %d batch-settlement channel charges (%s atomic units) are paid by claims: %d claimed channels checked against the escrow (see svc batch status for what is not claimed yet)",
				charges, chargedAmount, claimsChecked)
		}
		fmt.Fprintln(stdout)
		if len(found) > 0 {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "\nSETTLED\tMISMATCH\tTRANSACTION\tPAYER\tNONCE\tAMOUNT\tDETAIL")
			for _, x := range found {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.SettledAt.UTC().Format(time.RFC3339), x.Mismatch, x.Transaction, x.Payer, x.Nonce, x.Amount, x.Detail)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if dev > 0 && *asJSON {
		fmt.Fprintf(stderr, "svc reconcile: %d dev-mode payments skipped (the local facilitator settled nothing on chain)\n", dev)
	}
	if unchecked > 0 {
		fmt.Fprintf(stderr, "svc reconcile: the payee of %d settled payments is unknown (their payment records are pruned): give --pay-to to check it\n", unchecked)
	}
	if len(found) > 0 {
		return fmt.Errorf("%d of %d settled payments do not match the chain", len(found), checked)
	}
	return nil
}

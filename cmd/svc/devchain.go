package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/internal/devchain"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// chainEmbedded is the --chain value of svc serve that runs the dev chain
// in the server.
const chainEmbedded = "embedded"

// devchainDB is the database the lines printed by svc devchain use, apart
// from dev mode's.
const devchainDB = "svc-data/devchain.db"

// devchainCallLine is the paid call svc devchain suggests.
const devchainCallLine = `svc call risk-levels --json '{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}' --key-env PAYER_KEY`

const devchainSynopsis = `svc devchain [--addr 127.0.0.1:8545] [--seed TEXT] [--payer-usdc N]
       svc devchain fund ADDRESS USDC [--eth N] [--rpc-url URL]
       svc devchain advance DURATION [--rpc-url URL]

Runs a local EVM chain in this process for trying on-chain settlement: chain id
8453 (Base's), test USDC (TestUSDC, EIP-3009, anyone may mint) at Base USDC's
address, the batch-settlement escrow and Multicall3 at their canonical
addresses, a relayer with ETH for gas and a payer with 1000 test USDC, their DEV
keys printed (valid on this chain only). It prints the lines to paste to run
svc serve --settle onchain on it and to pay a call. "fund" gives test USDC (and
ETH with --eth) to an address; "advance" moves the chain's clock forward.`

// devchainCmd runs `svc devchain`, `svc devchain fund` and `svc devchain
// advance`.
func devchainCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) > 0 {
		switch args[0] {
		case "fund":
			return devchainFund(ctx, args[1:], stdout, stderr, getenv)
		case "advance":
			return devchainAdvance(ctx, args[1:], stdout, stderr, getenv)
		}
	}
	f := envflag.New("devchain", stderr, getenv, devchainSynopsis)
	addr := f.String("addr", "SVC_DEVCHAIN_ADDR", devchain.DefaultAddr, "JSON-RPC listen address, loopback only (port 0 picks a free port)")
	seed := f.String("seed", "SVC_DEVCHAIN_SEED", "", "derive the dev keys from this text, the same on every run (default: fresh keys every run)")
	payerUSDC := f.String("payer-usdc", "", "1000", "test USDC minted for the payer at start")
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return envflag.UsageError(fmt.Sprintf("svc devchain: unknown subcommand %q (fund, advance, or none to run the chain)", f.Arg(0)))
	}
	usdc, err := decimalUnits(*payerUSDC, 6)
	if err != nil {
		return envflag.UsageError("--payer-usdc: " + err.Error())
	}
	if usdc == nil {
		usdc = new(big.Int)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	chain, err := devchain.Start(sctx, devchain.Config{Addr: strings.TrimSpace(*addr), Seed: *seed, PayerUSDC: usdc, Logger: log})
	cancel()
	if err != nil {
		if strings.Contains(err.Error(), "loopback") {
			return envflag.UsageError("--addr: " + err.Error())
		}
		return err
	}
	defer chain.Close()
	printDevchain(stdout, chain, usdc, *seed != "")
	<-ctx.Done()
	fmt.Fprintln(stderr, "svc devchain: stopped (the chain lived in memory: it is gone)")
	return nil
}

// printDevchain prints what svc devchain runs and the lines to paste.
func printDevchain(w io.Writer, c *devchain.Chain, payerUSDC *big.Int, seeded bool) {
	a := c.Accounts()
	keys := "fresh for this run"
	if seeded {
		keys = "derived from --seed: the same on every run"
	}
	fmt.Fprintf(w, `svc devchain %s — a local EVM chain in this process, listening on %s
  NOT Base: chain id %d is Base's so that Base clients work unchanged, but the USDC is a test token and nothing here is worth money
  USDC:     %s  TestUSDC (EIP-3009 like USDC; anyone may mint)
  escrow:   %s  x402BatchSettlement (batch-settlement channels; EIP-3009 deposit collector %s, Multicall3 %s)
  relayer:  %s  1000 ETH (pays the gas of settlements)
  payer:    %s  %s test USDC, 1 ETH
  payTo:    %s  (receives the payments)
  DEV KEYS (%s), valid on this chain only: never use them, or send real funds, anywhere else

Paste into another shell:

export SVC_RPC_URL=%s
export SVC_RELAYER_KEY=%s
export SVC_PAY_TO=%s
export PAYER=%s
export PAYER_KEY=%s

svc serve --settle onchain --rpc-url %s --pay-to %s --db %s
%s
svc devchain fund %s 10
svc reconcile --rpc-url %s --db %s

`, buildVersion(), c.URL(), c.ChainID(), devchain.USDC.Hex(), batch.SettlementAddress, batch.ERC3009CollectorAddress, devchain.Multicall3.Hex(), a.Relayer.Address.Hex(), a.Payer.Address.Hex(), usdcString(payerUSDC),
		a.PayTo.Address.Hex(), keys, c.URL(), a.Relayer.KeyHex(), a.PayTo.Address.Hex(), a.Payer.Address.Hex(), a.Payer.KeyHex(),
		c.URL(), a.PayTo.Address.Hex(), devchainDB, devchainCallLine, a.Payer.Address.Hex(), c.URL(), devchainDB)
}

// usdcString writes atomic units (6 decimals) as USDC, without trailing
// zeros.
func usdcString(atomic *big.Int) string {
	r := new(big.Rat).SetFrac(atomic, big.NewInt(1_000_000))
	s := r.FloatString(6)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// devchainRPCFlag is the --rpc-url of fund and advance: $SVC_RPC_URL (as
// svc devchain's lines export it), else the default address.
func devchainRPCFlag(f *envflag.Set) *string {
	return f.String("rpc-url", "SVC_RPC_URL", "http://"+devchain.DefaultAddr, "the svc devchain's JSON-RPC endpoint")
}

// devchainDial connects to the dev chain at url.
func devchainDial(ctx context.Context, url string) (*rpc.Client, error) {
	url = strings.TrimSpace(url)
	c, err := rpc.DialContext(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("--rpc-url: %w", redactURL(err, url))
	}
	return c, nil
}

// devchainCallError says what a failed devchain_ call means.
func devchainCallError(err error, method, url string) error {
	var re rpc.Error
	if errors.As(err, &re) && re.ErrorCode() == -32601 {
		return fmt.Errorf("--rpc-url: the endpoint does not answer %s: it is not an svc devchain", method)
	}
	var he rpc.HTTPError
	if errors.As(err, &he) {
		return fmt.Errorf("--rpc-url: the endpoint answered HTTP %d to %s: it is not an svc devchain", he.StatusCode, method)
	}
	if strings.Contains(err.Error(), "connection refused") {
		return fmt.Errorf("--rpc-url: no chain answers there: start one with `svc devchain`, or give its URL with --rpc-url (SVC_RPC_URL)")
	}
	return fmt.Errorf("%s: %w", method, redactURL(err, url))
}

// devchainFund runs `svc devchain fund ADDRESS USDC [--eth N]`.
func devchainFund(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("devchain fund", stderr, getenv, "svc devchain fund ADDRESS USDC [--eth N] [--rpc-url URL]\n\nGives ADDRESS USDC test USDC (a decimal amount, e.g. 10 or 0.25) and, with --eth, ETH, on an svc devchain.")
	rpcURL := devchainRPCFlag(f)
	ethAmount := f.String("eth", "", "", "ETH to send as well (a decimal amount)")
	pos, err := f.ParseInterspersed(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return envflag.UsageError("svc devchain fund takes ADDRESS and USDC, e.g. svc devchain fund 0x… 10")
	}
	if err := payToError("ADDRESS", pos[0]); err != nil {
		return err
	}
	usdc, err := decimalUnits(pos[1], 6)
	if err != nil {
		return envflag.UsageError("USDC: " + err.Error())
	}
	wei, err := decimalUnits(*ethAmount, 18)
	if err != nil {
		return envflag.UsageError("--eth: " + err.Error())
	}
	if usdc.Sign() == 0 && (wei == nil || wei.Sign() == 0) {
		return envflag.UsageError("USDC: nothing to send: give an amount above 0 (or --eth)")
	}
	var weiArg any
	if wei != nil {
		weiArg = wei.String()
	}
	var res devchain.FundResult
	if err := devchainCall(ctx, *rpcURL, &res, "devchain_fund", common.HexToAddress(pos[0]), usdc.String(), weiArg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "funded %s: %s USDC", common.HexToAddress(pos[0]).Hex(), usdcString(usdc))
	if wei != nil && wei.Sign() > 0 {
		fmt.Fprintf(stdout, " and %s ETH", strings.TrimSpace(*ethAmount))
	}
	fmt.Fprintf(stdout, "; it now holds %s test USDC\n", usdcString(res.USDCBalance.ToInt()))
	for _, h := range res.Transactions {
		fmt.Fprintf(stdout, "  transaction %s\n", h.Hex())
	}
	return nil
}

// devchainCall calls method of the svc devchain at rpcURL into res,
// within a minute.
func devchainCall(ctx context.Context, rpcURL string, res any, method string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := devchainDial(ctx, rpcURL)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.CallContext(ctx, res, method, args...); err != nil {
		return devchainCallError(err, method, rpcURL)
	}
	return nil
}

// devchainAdvance runs `svc devchain advance DURATION`.
func devchainAdvance(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("devchain advance", stderr, getenv, "svc devchain advance DURATION [--rpc-url URL]\n\nMoves an svc devchain's clock forward by DURATION (1h, 90s, or whole seconds): the block it seals is that much after the last one.")
	rpcURL := devchainRPCFlag(f)
	pos, err := f.ParseInterspersed(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return envflag.UsageError("svc devchain advance takes a DURATION, e.g. svc devchain advance 1h")
	}
	d, err := time.ParseDuration(pos[0])
	if err != nil {
		n, nerr := strconv.ParseInt(pos[0], 10, 64)
		if nerr != nil {
			return envflag.UsageError(fmt.Sprintf("DURATION %q: want a duration such as 1h or 90s, or whole seconds", pos[0]))
		}
		d = time.Duration(n) * time.Second
	}
	if d < time.Second || d%time.Second != 0 {
		return envflag.UsageError(fmt.Sprintf("DURATION %q: the clock moves by whole seconds, at least 1s", pos[0]))
	}
	var res devchain.AdvanceResult
	if err := devchainCall(ctx, *rpcURL, &res, "devchain_advance", hexutil.Uint64(d/time.Second)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "the chain's clock moved %s: block %d at %s\n", d, uint64(res.Block), time.Unix(int64(res.Timestamp), 0).UTC().Format(time.RFC3339))
	return nil
}

// devChainRun is the dev chain `svc serve --chain embedded` runs in the
// server; chain is set once it runs.
type devChainRun struct {
	chain  *devchain.Chain
	tmpDir string // the default store's, removed at exit
}

// checkEmbeddedChain validates --chain against the rest of c's flags: the
// embedded chain is dev mode's way to settle for real, on loopback only.
func checkEmbeddedChain(c *serveConfig, value, rpcURL string) error {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "":
		return nil
	case chainEmbedded:
	default:
		return envflag.UsageError(fmt.Sprintf("--chain %q: the only value is %q (a local dev chain in this process)", value, chainEmbedded))
	}
	switch {
	case c.facilitatorURL != "":
		return envflag.UsageError("--chain embedded settles on its own dev chain: drop --facilitator-url (SVC_FACILITATOR_URL)")
	case c.settle != "":
		return envflag.UsageError("--chain embedded settles on its own dev chain: drop --settle (run `svc devchain` and --settle onchain --rpc-url to use a chain outside the server)")
	case strings.TrimSpace(rpcURL) != "":
		return envflag.UsageError("--chain embedded settles on its own dev chain: drop --rpc-url (SVC_RPC_URL)")
	case c.network != x402.NetworkBase:
		return envflag.UsageError(fmt.Sprintf("--chain embedded runs chain id %d (Base's): --network must be %s", devchain.ChainID, x402.NetworkBase))
	}
	if err := checkDevAddr(c.addr); err != nil {
		return envflag.UsageError(fmt.Sprintf("--chain embedded is dev mode and listens on loopback only: --addr %q is not a loopback address", c.addr))
	}
	c.devChain = &devChainRun{}
	return nil
}

// startEmbeddedChain starts the dev chain and the on-chain facilitator
// settling on it with the chain's relayer. With the default --db, the
// store is a new file for this run (the chain lives in memory, so a
// journal kept past it would name transactions no chain has).
func startEmbeddedChain(c *serveConfig, log *slog.Logger, signers *exact.SignerCache) (x402.Facilitator, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chain, err := devchain.Start(ctx, devchain.Config{Addr: "127.0.0.1:0", Logger: log})
	if err != nil {
		return nil, err
	}
	c.devChain.chain = chain
	if c.db == defaultDB {
		dir, err := os.MkdirTemp("", "svc-devchain-")
		if err != nil {
			_ = chain.Close()
			return nil, fmt.Errorf("store directory: %w", err)
		}
		c.devChain.tmpDir = dir
		c.db = filepath.Join(dir, "svc.db")
	}
	url := chain.URL()
	c.chain.rpcURL = &url
	c.chain.relayerKey = chain.Accounts().Relayer.Key
	f, err := c.chain.build(ctx, c.network, c.payTo, signers, log)
	if err != nil {
		_ = chain.Close()
		return nil, err
	}
	return &embeddedFacilitator{Facilitator: f, run: c.devChain}, nil
}

// embeddedFacilitator is the on-chain facilitator of the embedded chain;
// Close stops both.
type embeddedFacilitator struct {
	*onchain.Facilitator
	run *devChainRun
}

// Close stops the facilitator, then the chain.
func (f *embeddedFacilitator) Close() {
	f.Facilitator.Close()
	_ = f.run.chain.Close()
	if f.run.tmpDir != "" {
		_ = os.RemoveAll(f.run.tmpDir)
	}
}

// bannerLines tells what the embedded chain is and how to pay on it.
func (e *devChainRun) bannerLines() string {
	if e.chain == nil {
		return ""
	}
	a := e.chain.Accounts()
	return fmt.Sprintf(`  payments:    settled ON THE EMBEDDED DEV CHAIN in this process, for real (receipts, balances): NOT Base, test USDC, no real money
  dev chain:   %s (chain id %d; svc reconcile --rpc-url takes it while the server runs; it is gone when it stops)
               payer %s holds test USDC; its DEV key (this chain only):
               export PAYER_KEY=%s
`, e.chain.URL(), e.chain.ChainID(), a.Payer.Address.Hex(), a.Payer.KeyHex())
}

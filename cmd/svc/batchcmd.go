package main

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// batchCmd runs `svc batch status` and `svc batch refund`: the
// operator's view of the batch-settlement channels and the refund of idle
// ones.
func batchCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, `svc batch — the batch-settlement channels

Usage:
  svc batch status [flags]                          channels with unclaimed charges, pending
                                                    withdrawals, pending and recent claims
  svc batch refund --idle 24h [--channel ID] [--dry-run] [flags]
                                                    claim what idle channels were charged, then
                                                    return the rest to their payers

svc batch <command> -h lists the flags.
`)
		if len(args) == 0 {
			return envflag.UsageError("svc batch needs a command: status or refund")
		}
		return nil
	}
	switch args[0] {
	case "status":
		return batchStatus(ctx, args[1:], stdout, stderr, getenv)
	case "refund":
		return batchRefund(ctx, args[1:], stdout, stderr, getenv)
	}
	return envflag.UsageError(fmt.Sprintf("svc batch: unknown command %q (status or refund)", args[0]))
}

// batchFlags are the flags both commands share.
type batchFlags struct {
	db, rpcURL, network, facURL *string
	auth                        *authorizerFlags
	jsonOut                     *bool
}

func addBatchFlags(f *envflag.Set) *batchFlags {
	return &batchFlags{
		db:      f.String("db", "SVC_DATABASE_URL", defaultDB, "SQLite file path, or a postgres:// URL (the channel records and the claim log)"),
		rpcURL:  f.String("rpc-url", "SVC_RPC_URL", "", "EVM JSON-RPC endpoint of the network (never logged): the escrow's views are read through it"),
		network: f.String("network", "SVC_NETWORK", x402.NetworkBase, "payment network (CAIP-2 id)"),
		facURL:  f.String("facilitator-url", "SVC_FACILITATOR_URL", "", "x402 facilitator base URL that settles the claims, sweeps and refunds"),
		auth:    addAuthorizerFlags(f),
		jsonOut: f.EnvBool("json", "", false, "print JSON"),
	}
}

// key reads the receiver authorizer's key; required says whether its
// absence is an error. The key never appears in an error.
func (b *batchFlags) key(getenv func(string) string, required bool) (*ecdsa.PrivateKey, error) {
	if err := b.auth.check(getenv); err != nil {
		return nil, err
	}
	if b.auth.key == nil && required {
		return nil, envflag.UsageError("the receiver authorizer's private key is needed in $" + defaultAuthorizerKeyEnv + " (or --receiver-authorizer-key-env, --receiver-authorizer-key-file)")
	}
	return b.auth.key, nil
}

// emptyChannels is the channel source of a store that keeps no channel
// records: only the claim log's channels are known.
type emptyChannels struct{}

func (emptyChannels) Claimable(context.Context, string, int) ([]batch.ChannelRecord, error) {
	return nil, nil
}

func (emptyChannels) Mirror(context.Context, string, common.Hash, batch.OnChain, time.Time) error {
	return nil
}

// open connects what a command needs: the store (channel records and
// claim log), the chain, the facilitator when settling, and the claimer.
func (b *batchFlags) open(ctx context.Context, stderr io.Writer, key *ecdsa.PrivateKey, settle bool) (*claimer.Claimer, func(), error) {
	if _, ok := x402.LookupNetwork(strings.TrimSpace(*b.network)); !ok {
		return nil, nil, envflag.UsageError(fmt.Sprintf("--network %q is not a known network", *b.network))
	}
	rpcURL := strings.TrimSpace(*b.rpcURL)
	if rpcURL == "" {
		return nil, nil, envflag.UsageError("svc batch needs --rpc-url (SVC_RPC_URL) to read the escrow")
	}
	facURL := strings.TrimSpace(*b.facURL)
	if settle && facURL == "" {
		return nil, nil, envflag.UsageError("svc batch refund needs --facilitator-url (SVC_FACILITATOR_URL) to settle the claims and refunds")
	}
	st, err := openStore(ctx, strings.TrimSpace(*b.db))
	if err != nil {
		return nil, nil, err
	}
	ec, err := ethclient.DialContext(ctx, rpcURL)
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("--rpc-url: %w", redactURL(err, rpcURL))
	}
	closeAll := func() { ec.Close(); st.Close() }
	var chans claimer.Channels = emptyChannels{}
	if cs, ok := any(st).(claimer.Channels); ok {
		chans = cs
	} else {
		fmt.Fprintln(stderr, "svc batch: this store keeps no channel records: only the channels of the claim log are known")
	}
	cfg := claimer.Config{Network: strings.TrimSpace(*b.network), Channels: chans, Log: st.BatchClaims(), Chain: ec, AuthorizerKey: key,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	if facURL != "" {
		f, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: facURL})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--facilitator-url: %w", err)
		}
		cfg.Facilitator = f
	}
	c, err := claimer.New(cfg)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return c, closeAll, nil
}

// batchStatus prints the channels with unclaimed charges, the pending
// withdrawals and the claims.
func batchStatus(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("batch status", stderr, getenv, "svc batch status [--db DSN] [--rpc-url URL] [--network N] [--json]")
	b := addBatchFlags(f)
	recent := f.Int("recent", "", 10, "recent claims listed")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	key, err := b.key(getenv, false)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c, closeAll, err := b.open(ctx, stderr, key, false)
	if err != nil {
		return err
	}
	defer closeAll()
	st, err := c.Status(ctx, *recent)
	if err != nil {
		return redactURL(err, *b.rpcURL)
	}
	if *b.jsonOut {
		return printBatchJSON(stdout, statusJSON(st))
	}
	fmt.Fprintf(stdout, "network %s: %d channels with unclaimed charges, %s unclaimed (atomic units), %d pending withdrawals, %d pending claims\n",
		st.Network, len(st.Channels), st.Unclaimed, st.Withdrawals, len(st.Pending))
	if len(st.Channels) > 0 {
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHANNEL\tPAYER\tCHARGED\tCLAIMED\tBALANCE\tUNCLAIMED\tLAST CHARGE\tWITHDRAWAL ENDS")
		for _, ch := range st.Channels {
			ends := "-"
			if !ch.WithdrawalEnds.IsZero() {
				ends = ch.WithdrawalEnds.Format(time.RFC3339)
			}
			note := ""
			if ch.Foreign {
				note = " (another authorizer)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", ch.ChannelID.Hex(), ch.Payer.Hex(), ch.Charged, ch.OnChain.TotalClaimed, ch.OnChain.Balance,
				ch.Unclaimed, ch.LastRequestAt.UTC().Format(time.RFC3339), ends, note)
		}
		_ = tw.Flush()
	}
	for _, r := range st.Recent {
		fmt.Fprintf(stdout, "claim %s %s: %d channels, tx %s, %s %s\n", r.ID, r.State, len(r.Rows), orDash(r.Tx), r.UpdatedAt.UTC().Format(time.RFC3339), r.Reason)
	}
	return nil
}

// batchRefund claims what idle channels were charged and refunds the rest.
func batchRefund(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("batch refund", stderr, getenv, "svc batch refund --idle 24h [--channel ID] [--dry-run] [--db DSN] [--rpc-url URL] [--facilitator-url URL]")
	b := addBatchFlags(f)
	idle := f.Duration("idle", "", 0, "refund the channels not charged for at least this long (e.g. 24h); required unless --channel names one")
	channel := f.String("channel", "", "", "refund only this channel (0x + 64 hex digits)")
	dry := f.EnvBool("dry-run", "", false, "print what would be claimed and refunded, change nothing")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	opt := claimer.RefundOptions{IdleFor: *idle, DryRun: *dry}
	if *idle < 0 {
		return envflag.UsageError("--idle must not be negative")
	}
	if id := strings.TrimSpace(*channel); id != "" {
		if !isHash(id) {
			return envflag.UsageError(fmt.Sprintf("--channel %q: want 0x and 64 hex digits", clipArg(id)))
		}
		h := common.HexToHash(id)
		opt.Channel = &h
	} else if *idle == 0 {
		return envflag.UsageError("svc batch refund needs --idle (e.g. --idle 24h) or --channel")
	}
	key, err := b.key(getenv, true)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	c, closeAll, err := b.open(ctx, stderr, key, !opt.DryRun)
	if err != nil {
		return err
	}
	defer closeAll()
	res, err := c.Refund(ctx, opt)
	if *b.jsonOut {
		if werr := printBatchJSON(stdout, refundJSON(res, opt.DryRun)); werr != nil {
			return werr
		}
	} else {
		verb := "refunded"
		if opt.DryRun {
			verb = "would refund"
		}
		total := new(big.Int)
		for _, r := range res {
			line := fmt.Sprintf("%s payer %s: claimed first %s, %s %s", r.ChannelID.Hex(), r.Payer.Hex(), r.Unclaimed, verb, r.Refund)
			if r.Tx != "" {
				line += " (tx " + r.Tx + ")"
			}
			if r.Err != nil {
				line += ": not refunded: " + r.Err.Error()
			}
			total.Add(total, r.Refund)
			fmt.Fprintln(stdout, line)
		}
		fmt.Fprintf(stdout, "%d channels, %s %s (atomic units)\n", len(res), verb, total)
	}
	if err != nil {
		return redactURL(err, *b.rpcURL)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("some refunds failed")
		}
	}
	return nil
}

// isHash reports whether s is 0x and 64 hex digits.
func isHash(s string) bool {
	if len(s) != 66 || !strings.HasPrefix(s, "0x") {
		return false
	}
	for _, c := range s[2:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipArg(s string) string {
	if len(s) > 70 {
		return s[:70] + "…"
	}
	return s
}

func printBatchJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// statusJSON is Status as svc batch status --json prints it.
func statusJSON(st claimer.Status) any {
	type ch struct {
		ChannelID      string `json:"channelId"`
		Payer          string `json:"payer"`
		Receiver       string `json:"receiver"`
		Charged        string `json:"charged"`
		TotalClaimed   string `json:"totalClaimed"`
		Balance        string `json:"balance"`
		Unclaimed      string `json:"unclaimed"`
		LastRequestAt  string `json:"lastRequestAt"`
		WithdrawalEnds string `json:"withdrawalEnds,omitempty"`
		Foreign        bool   `json:"foreign,omitempty"`
	}
	type claim struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Channels int    `json:"channels"`
		Tx       string `json:"tx,omitempty"`
		Reason   string `json:"reason,omitempty"`
		At       string `json:"at"`
	}
	out := struct {
		Network     string  `json:"network"`
		Unclaimed   string  `json:"unclaimed"`
		Withdrawals int     `json:"pendingWithdrawals"`
		Channels    []ch    `json:"channels"`
		Pending     []claim `json:"pendingClaims"`
		Recent      []claim `json:"recentClaims"`
	}{Network: st.Network, Unclaimed: st.Unclaimed.String(), Withdrawals: st.Withdrawals, Channels: []ch{}, Pending: []claim{}, Recent: []claim{}}
	for _, c := range st.Channels {
		o := ch{ChannelID: c.ChannelID.Hex(), Payer: c.Payer.Hex(), Receiver: c.Receiver.Hex(), Charged: c.Charged.String(), TotalClaimed: c.OnChain.TotalClaimed.String(),
			Balance: c.OnChain.Balance.String(), Unclaimed: c.Unclaimed.String(), LastRequestAt: c.LastRequestAt.UTC().Format(time.RFC3339), Foreign: c.Foreign}
		if !c.WithdrawalEnds.IsZero() {
			o.WithdrawalEnds = c.WithdrawalEnds.Format(time.RFC3339)
		}
		out.Channels = append(out.Channels, o)
	}
	conv := func(rs []claimer.Record) []claim {
		cs := []claim{}
		for _, r := range rs {
			cs = append(cs, claim{ID: r.ID, State: string(r.State), Channels: len(r.Rows), Tx: r.Tx, Reason: r.Reason, At: r.UpdatedAt.UTC().Format(time.RFC3339)})
		}
		return cs
	}
	out.Pending, out.Recent = conv(st.Pending), conv(st.Recent)
	return out
}

// refundJSON is Refund's results as svc batch refund --json prints them.
func refundJSON(res []claimer.RefundResult, dry bool) any {
	type row struct {
		ChannelID    string `json:"channelId"`
		Payer        string `json:"payer"`
		LastActivity string `json:"lastActivity"`
		ClaimedFirst string `json:"claimedFirst"`
		Refund       string `json:"refund"`
		Tx           string `json:"tx,omitempty"`
		GasUsed      uint64 `json:"gasUsed,omitempty"`
		Error        string `json:"error,omitempty"`
	}
	out := struct {
		DryRun   bool  `json:"dryRun"`
		Channels []row `json:"channels"`
	}{DryRun: dry, Channels: []row{}}
	for _, r := range res {
		o := row{ChannelID: r.ChannelID.Hex(), Payer: r.Payer.Hex(), LastActivity: r.LastActivity.UTC().Format(time.RFC3339), ClaimedFirst: r.Unclaimed.String(),
			Refund: r.Refund.String(), Tx: r.Tx, GasUsed: r.GasUsed}
		if r.Err != nil {
			o.Error = r.Err.Error()
		}
		out.Channels = append(out.Channels, o)
	}
	return out
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/internal/scrub"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// payments prints the payment journal for the operator: how many rows each
// state holds, and the rows of one state (unknown by default: payments that
// may have settled but that recovery could not tell, to reconcile by hand),
// oldest first. It never prints a payment's signature.
func payments(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("payments", stderr, getenv, "svc payments [--db DSN] [--state unknown] [--limit 100] [--json]")
	db := f.String("db", "SVC_DATABASE_URL", defaultDB, "SQLite file path, or a postgres:// URL")
	stateName := f.String("state", "", "unknown", "state to list: reserved, settling, settled, released, failed or unknown")
	limit := f.Int("limit", "", 100, "rows to list at most (1-10000)")
	asJSON := f.Bool("json", false, "print the rows as JSON lines")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	var state engine.State
	for _, s := range engine.States() {
		if strings.EqualFold(s.String(), strings.TrimSpace(*stateName)) {
			state = s
		}
	}
	if state == 0 {
		return envflag.UsageError(fmt.Sprintf("--state %q is not a payment state (reserved, settling, settled, released, failed, unknown)", *stateName))
	}
	if *limit < 1 || *limit > 10000 {
		return envflag.UsageError("--limit must be between 1 and 10000")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := openStoreReadOnly(ctx, strings.TrimSpace(*db))
	if err != nil {
		return err
	}
	defer st.Close()
	return printPayments(ctx, st, state, *limit, *asJSON, scrub.DisplayDSN(*db), stdout)
}

// printPayments prints the counts of journal j (named where) and up to
// limit rows in state, as a table or as JSON lines.
func printPayments(ctx context.Context, j engine.OperatorJournal, state engine.State, limit int, asJSON bool,
	where string, stdout io.Writer) error {
	counts, err := j.Counts(ctx)
	if err != nil {
		return fmt.Errorf("payment journal: %w", err)
	}
	rows, err := j.List(ctx, state, limit)
	if err != nil {
		return fmt.Errorf("payment journal: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(paymentView(r)); err != nil {
				return err
			}
		}
		return nil
	}
	var parts []string
	for _, s := range engine.States() {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	fmt.Fprintf(stdout, "payment journal (%s): %s\n\n", where, strings.Join(parts, ", "))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tRESOURCE\tTRANSPORT\tPAYER\tNONCE\tAMOUNT\tREQUEST ID\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.CreatedAt.UTC().Format(time.RFC3339), r.Resource, r.Transport,
			r.Payer, r.Nonce, r.Amount, r.RequestID, r.Reason)
	}
	return tw.Flush()
}

// paymentRow is what `svc payments --json` prints of a journal row: what
// identifies and reconciles the payment, without the signed payload or
// the answer.
type paymentRow struct {
	Key         string    `json:"key"`
	State       string    `json:"state"`
	Network     string    `json:"network"`
	Asset       string    `json:"asset"`
	Payer       string    `json:"payer"`
	PayTo       string    `json:"payTo"`
	Nonce       string    `json:"nonce"`
	Amount      string    `json:"amount"`
	Resource    string    `json:"resource"`
	Product     string    `json:"product"`
	Transport   string    `json:"transport"`
	RequestID   string    `json:"requestId,omitempty"`
	RefCode     string    `json:"refCode,omitempty"`
	Attempts    int       `json:"attempts"`
	Reason      string    `json:"reason,omitempty"`
	Transaction string    `json:"transaction,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

func paymentView(r engine.Record) paymentRow {
	v := paymentRow{Key: r.Key, State: r.State.String(), Network: r.Network, Asset: r.Asset, Payer: r.Payer, PayTo: r.PayTo,
		Nonce: r.Nonce, Amount: r.Amount, Resource: r.Resource, Product: r.Product, Transport: r.Transport,
		RequestID: r.RequestID, RefCode: r.RefCode, Attempts: r.Attempts, Reason: r.Reason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Settlement != nil {
		v.Transaction = r.Settlement.Transaction
	}
	return v
}

package ledger

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// CSVHeader returns the header row of WriteCSV (a new slice each call).
func CSVHeader() []string {
	return []string{"record", "time", "day", "tool", "route", "amount_usdc", "payer", "transaction", "network",
		"asset", "ref_code", "transport", "dev", "calls", "dev_calls", "dev_amount_usdc"}
}

// WriteCSV writes the report as one CSV table (RFC 4180) whose first
// column says what a row is: "payment" (one settled payment; calls is 1),
// then "tool" totals, "day" totals (UTC), "ref_code" totals and one
// "total". Totals rows leave the per-payment columns empty; their
// amount_usdc and calls count real settlements, dev_calls and
// dev_amount_usdc dev-mode ones. A dev-mode payment has dev "true" and
// its amount in dev_amount_usdc (amount_usdc "0.000000").
func (r Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return fmt.Errorf("ledger: csv: %w", err)
	}
	for _, e := range r.Entries {
		amount, dev, calls, devCalls := e.AmountUSDC, "0.000000", "1", "0"
		if e.Dev {
			amount, dev, calls, devCalls = "0.000000", e.AmountUSDC, "0", "1"
		}
		_ = cw.Write([]string{"payment", e.Time.Format(time.RFC3339Nano), e.Time.Format(DayLayout), e.Tool, e.Route, amount,
			e.Payer, e.Transaction, e.Network, e.Asset, e.RefCode, e.Transport, strconv.FormatBool(e.Dev), calls, devCalls, dev})
	}
	total := func(kind string, t Total, tool, day, ref string) {
		_ = cw.Write([]string{kind, "", day, tool, "", t.AmountUSDC, "", "", "", "", ref, "", "",
			strconv.FormatInt(t.Calls, 10), strconv.FormatInt(t.DevCalls, 10), t.DevAmountUSDC})
	}
	for _, t := range r.ByTool {
		total("tool", t, t.Key, "", "")
	}
	for _, t := range r.ByDay {
		total("day", t, "", t.Key, "")
	}
	for _, t := range r.ByRef {
		total("ref_code", t, "", "", t.Key)
	}
	total("total", r.Total, "", "", "")
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("ledger: csv: %w", err)
	}
	return nil
}

// WriteJSON writes the report as one JSON document (indented).
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("ledger: json: %w", err)
	}
	return nil
}

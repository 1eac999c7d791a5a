package ledger

import (
	"bufio"
	"context"
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
		"asset", "ref_code", "transport", "dev", "calls", "dev_calls", "dev_amount_usdc",
		"channel_charge", "charge_calls", "charge_amount_usdc"}
}

// Format is an output format of Write.
type Format string

// The formats of Write and of `svc ledger --format`.
const (
	CSV  Format = "csv"
	JSON Format = "json"
)

// Write streams the ledger of [from, to) read from src to w in format: each
// payment is written as it is read, then the totals; memory stays bounded
// by the number of tools, days and referral codes, whatever the period's
// size. The CSV is WriteCSV's table; the JSON is the document of
// WriteJSON, one payment a line.
func Write(ctx context.Context, src Source, from, to time.Time, format Format, w io.Writer) error {
	b := newBuilder(from, to)
	bw := bufio.NewWriterSize(w, 64<<10)
	var each func(Entry) error
	var end func(Report) error
	switch format {
	case CSV:
		cw := csv.NewWriter(bw)
		if err := cw.Write(CSVHeader()); err != nil {
			return fmt.Errorf("ledger: csv: %w", err)
		}
		each = func(e Entry) error { return cw.Write(csvEntry(e)) }
		end = func(r Report) error {
			csvTotals(cw, r)
			cw.Flush()
			return cw.Error()
		}
	case JSON:
		head, err := json.Marshal(struct {
			From time.Time `json:"from"`
			To   time.Time `json:"to"`
		}{b.r.From, b.r.To})
		if err != nil {
			return fmt.Errorf("ledger: json: %w", err)
		}
		bw.Write(head[:len(head)-1])
		bw.WriteString(`,"payments":[`)
		sep := "\n"
		each = func(e Entry) error {
			line, err := json.Marshal(e)
			if err != nil {
				return err
			}
			bw.WriteString(sep)
			sep = ",\n"
			_, err = bw.Write(line)
			return err
		}
		end = func(r Report) error {
			tail, err := json.Marshal(struct {
				ByTool []Total `json:"byTool"`
				ByDay  []Total `json:"byDay"`
				ByRef  []Total `json:"byRefCode"`
				Total  Total   `json:"total"`
			}{r.ByTool, r.ByDay, r.ByRef, r.Total})
			if err != nil {
				return err
			}
			bw.WriteString("\n],")
			bw.Write(tail[1:])
			_, err = bw.WriteString("\n")
			return err
		}
	default:
		return fmt.Errorf("ledger: format %q: want csv or json", format)
	}
	if err := src.EachSettlement(ctx, from, to, func(s Settlement) error {
		e, err := b.add(s)
		if err != nil {
			return err
		}
		return each(e)
	}); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := end(b.report()); err != nil {
		return fmt.Errorf("ledger: %s: %w", format, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ledger: %s: %w", format, err)
	}
	return nil
}

// WriteCSV writes the report as one CSV table (RFC 4180) whose first
// column says what a row is: "payment" (one settled payment; calls is 1),
// then "tool" totals, "day" totals (UTC), "ref_code" totals and one
// "total". Totals rows leave the per-payment columns empty; their
// amount_usdc and calls count real settlements, dev_calls and
// dev_amount_usdc dev-mode ones. A dev-mode payment has dev "true" and
// its amount in dev_amount_usdc (amount_usdc "0.000000"). A charge to a
// batch-settlement channel has channel_charge "true"; charge_calls and
// charge_amount_usdc count the part of calls and amount_usdc charged to
// channels (claimed and swept later, in batches).
func (r Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return fmt.Errorf("ledger: csv: %w", err)
	}
	for _, e := range r.Entries {
		_ = cw.Write(csvEntry(e))
	}
	csvTotals(cw, r)
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("ledger: csv: %w", err)
	}
	return nil
}

// csvEntry is the CSV row of one payment.
func csvEntry(e Entry) []string {
	amount, dev, calls, devCalls := e.AmountUSDC, "0.000000", "1", "0"
	if e.Dev {
		amount, dev, calls, devCalls = "0.000000", e.AmountUSDC, "0", "1"
	}
	charge, chargeCalls := "0.000000", "0"
	if e.ChannelCharge && !e.Dev {
		charge, chargeCalls = e.AmountUSDC, "1"
	}
	return []string{"payment", e.Time.Format(time.RFC3339Nano), e.Time.Format(DayLayout), e.Tool, e.Route, amount,
		e.Payer, e.Transaction, e.Network, e.Asset, e.RefCode, e.Transport, strconv.FormatBool(e.Dev), calls, devCalls, dev,
		strconv.FormatBool(e.ChannelCharge), chargeCalls, charge}
}

// csvTotals writes the totals rows of r (the csv.Writer keeps the first
// error).
func csvTotals(cw *csv.Writer, r Report) {
	total := func(kind string, t Total, tool, day, ref string) {
		_ = cw.Write([]string{kind, "", day, tool, "", t.AmountUSDC, "", "", "", "", ref, "", "",
			strconv.FormatInt(t.Calls, 10), strconv.FormatInt(t.DevCalls, 10), t.DevAmountUSDC, "", strconv.FormatInt(t.ChargeCalls, 10), t.ChargeAmountUSDC})
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

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchclient "github.com/seed1284c1d2/svc/x402/batch/client"
	"github.com/seed1284c1d2/svc/x402/client"
)

// batchAnswer is a paid call's answer on any transport.
type batchAnswer struct {
	paid   bool
	reason string // the refusal reason, when refused
	body   []byte // the paid answer, or the refusal as it came
	sr     *x402.SettleResponse
	pr     *x402.PaymentRequired // HTTP: the offer of a 402
	status int                   // HTTP status
}

// batchHTTP calls tl over HTTP with payment pp (nil: none).
func batchHTTP(t *testing.T, c *http.Client, base string, tl *tools.Tool, input []byte, pp *x402.PaymentPayload) batchAnswer {
	t.Helper()
	header := ""
	if pp != nil {
		h, err := x402.EncodeHeader(*pp)
		if err != nil {
			t.Fatal(err)
		}
		header = h
	}
	a := clusterMust(t, c, tl.Method, base+tl.Path, string(input), header)
	out := batchAnswer{status: a.status, body: a.body, paid: a.status == http.StatusOK}
	if v := a.header.Get(x402.HeaderPaymentResponse); v != "" {
		var sr x402.SettleResponse
		if err := x402.DecodeHeader(v, &sr); err != nil {
			t.Fatalf("PAYMENT-RESPONSE: %v", err)
		}
		out.sr = &sr
	}
	if v := a.header.Get(x402.HeaderPaymentRequired); v != "" {
		pr, err := x402.DecodePaymentRequired(v)
		if err != nil {
			t.Fatal(err)
		}
		out.pr, out.reason = &pr, pr.Error
	}
	return out
}

// jsonRPC posts one JSON-RPC request to path and returns its result (an
// event-stream answer's data line, or the JSON body).
func jsonRPC(t *testing.T, c *http.Client, url string, header map[string]string, req any) (json.RawMessage, http.Header) {
	t.Helper()
	b, _ := json.Marshal(req)
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				body = []byte(strings.TrimSpace(d))
				break
			}
		}
	} else {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		body = buf.Bytes()
	}
	if len(body) == 0 {
		return nil, resp.Header
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error != nil {
		t.Fatalf("JSON-RPC %s: %s (%v)", url, body, err)
	}
	return env.Result, resp.Header
}

// batchMCP calls tl's MCP tool with payment pp in _meta.
func batchMCP(t *testing.T, c *http.Client, base string, tl *tools.Tool, input []byte, pp *x402.PaymentPayload) batchAnswer {
	t.Helper()
	hdr := map[string]string{}
	_, h := jsonRPC(t, c, base+"/mcp", hdr, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "batch-test", "version": "1"}}})
	if sid := h.Get("Mcp-Session-Id"); sid != "" {
		hdr["Mcp-Session-Id"] = sid
	}
	hdr["Mcp-Protocol-Version"] = "2025-06-18"
	jsonRPC(t, c, base+"/mcp", hdr, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	params := map[string]any{"name": tl.OperationID, "arguments": json.RawMessage(input)}
	if pp != nil {
		params["_meta"] = map[string]any{"x402/payment": pp}
	}
	res, _ := jsonRPC(t, c, base+"/mcp", hdr, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
	var r struct {
		IsError           bool                       `json:"isError"`
		StructuredContent json.RawMessage            `json:"structuredContent"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("MCP tools/call: %s", res)
	}
	out := batchAnswer{paid: !r.IsError, body: r.StructuredContent}
	if raw, ok := r.Meta["x402/payment-response"]; ok {
		var sr x402.SettleResponse
		if err := json.Unmarshal(raw, &sr); err != nil {
			t.Fatal(err)
		}
		out.sr = &sr
	}
	if r.IsError {
		var pr x402.PaymentRequired
		if json.Unmarshal(r.StructuredContent, &pr) == nil {
			out.reason = pr.Error
		}
	}
	return out
}

// batchA2A sends tl's call as an A2A message paying up front with pp.
func batchA2A(t *testing.T, c *http.Client, base string, tl *tools.Tool, input []byte, pp *x402.PaymentPayload) batchAnswer {
	t.Helper()
	msg := map[string]any{"role": "user", "messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()),
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"tool": tl.Key, "input": json.RawMessage(input)}}}}
	if pp != nil {
		msg["metadata"] = map[string]any{"x402.payment.payload": pp, "x402.payment.status": "payment-submitted"}
	}
	res, _ := jsonRPC(t, c, base+"/a2a", nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{"message": msg}})
	var task struct {
		Status struct {
			State   string `json:"state"`
			Message struct {
				Metadata map[string]json.RawMessage `json:"metadata"`
			} `json:"message"`
		} `json:"status"`
		Artifacts []struct {
			Parts []struct {
				Data json.RawMessage `json:"data"`
			} `json:"parts"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(res, &task); err != nil {
		t.Fatalf("A2A message/send: %s", res)
	}
	out := batchAnswer{paid: task.Status.State == "completed", body: res}
	var receipts []x402.SettleResponse
	_ = json.Unmarshal(task.Status.Message.Metadata["x402.payment.receipts"], &receipts)
	if n := len(receipts); n > 0 {
		out.sr = &receipts[n-1]
		if !receipts[n-1].Success {
			out.reason = receipts[n-1].ErrorReason
		}
	}
	if out.paid && len(task.Artifacts) > 0 && len(task.Artifacts[0].Parts) > 0 {
		out.body = task.Artifacts[0].Parts[0].Data
	}
	return out
}

// batchPayload is a PaymentPayload of a batch-settlement payload.
func batchPayload(t *testing.T, req x402.PaymentRequirements, p batch.Payload) *x402.PaymentPayload {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return &x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}
}

// TestChainBatchServeRefusals: with a channel opened by our client
// (x402/batch/client) on `svc serve --schemes batch-settlement`, stale,
// decreasing, replayed, over-balance, wrong-receiver, wrong-token and
// forged vouchers are refused before the tool runs, over HTTP, MCP and
// A2A, and nothing is charged; invalid input and a terminal down ask no
// payment and leave the voucher unused; a retry of an answered voucher
// gets the recorded answer; a client that lost its state is
// resynchronised by the corrective 402; cooperative refunds, partial over
// MCP then of the rest over A2A, run no tool and return the amounts to the
// payer through the official facilitator (the first with the claim of the
// latest voucher, signed by svc's receiver authorizer); the last closes
// the channel's record, and a refund of the closed channel is refused.
func TestChainBatchServeRefusals(t *testing.T) {
	w := newBatchWorld(t)
	ts := batchTools(t, 4)
	sort.Slice(ts, func(i, j int) bool { return ts[i].PriceAtomic < ts[j].PriceAtomic })
	// ts[1..3] cost more than half a deposit: two of their vouchers
	// exceed the channel's balance.
	prices := []int64{ts[0].PriceAtomic, 90_000, 80_000, 70_000}
	var priceFlags []string
	for i := 1; i < 4; i++ {
		priceFlags = append(priceFlags, "--price", fmt.Sprintf("%s=0.0%d", ts[i].Key, 10-i))
	}
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveBatch(t, db, nil, priceFlags...)
	c := clusterHTTP(t)
	offer := func(tl *tools.Tool) x402.PaymentRequirements {
		t.Helper()
		a := batchHTTP(t, c, srv.base, tl, tl.ExampleInput, nil)
		if a.status != http.StatusPaymentRequired || a.pr == nil || len(a.pr.Accepts) != 1 || a.pr.Accepts[0].Scheme != batch.Scheme {
			t.Fatalf("the offer of %s: %d %+v", tl.Key, a.status, a.pr)
		}
		return a.pr.Accepts[0]
	}
	reqs := make([]x402.PaymentRequirements, len(ts))
	for i, tl := range ts {
		reqs[i] = offer(tl)
		if reqs[i].Amount != fmt.Sprint(prices[i]) {
			t.Fatalf("%s costs %s, want %d", tl.Key, reqs[i].Amount, prices[i])
		}
	}

	// Our client opens the channel (a deposit of the minimum, $0.1) and
	// pays ts[1]: charged = prices[0] + prices[1].
	dir := t.TempDir()
	scheme, err := batchclient.New(batchclient.Config{Key: w.payerKey, Dir: dir, Deposit: big.NewInt(100_000)})
	if err != nil {
		t.Fatal(err)
	}
	ours := client.New(nil, client.WithSchemes(scheme))
	pay := func(hc *http.Client, tl *tools.Tool) *x402.SettleResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, _ := http.NewRequestWithContext(ctx, tl.Method, srv.base+tl.Path, bytes.NewReader(tl.ExampleInput))
		r.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusOK {
			pr, _ := client.PaymentRequiredOf(resp)
			t.Fatalf("%s: %d %s (%s)", tl.Key, resp.StatusCode, buf.Bytes(), pr.Error)
		}
		sr, err := client.PaymentResponse(resp)
		if err != nil {
			t.Fatal(err)
		}
		return sr
	}
	if sr := pay(ours, ts[0]); sr.Transaction == "" {
		t.Fatalf("the first payment is not a deposit: %+v", sr)
	}
	pay(ours, ts[1])
	charged := prices[0] + prices[1]
	st, err := scheme.State(reqs[0])
	if err != nil || st.Charged != fmt.Sprint(charged) {
		t.Fatalf("our client's state: %+v %v", st, err)
	}
	ch, err := batch.ParseChannelConfig(st.ChannelConfig)
	if err != nil {
		t.Fatal(err)
	}
	id := common.HexToHash(st.ChannelID)
	d := batch.NewDomain(8453)
	voucherOf := func(key *ecdsa.PrivateKey, ch batch.Channel, max int64) batch.Payload {
		t.Helper()
		p, err := batch.NewVoucherPayload(key, d, ch, big.NewInt(max))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	stranger, _ := anviltest.NewKey(t)
	otherReceiver, otherToken := ch, ch
	otherReceiver.Receiver = common.HexToAddress("0x00000000000000000000000000000000000000ee")
	otherToken.Token = common.HexToAddress("0x00000000000000000000000000000000000000ef")

	ledgerRows := func() int { return len(clusterSQLiteLedger(t, db).rows) }
	rowsBefore := ledgerRows()
	type transport struct {
		name string
		call func(t *testing.T, c *http.Client, base string, tl *tools.Tool, input []byte, pp *x402.PaymentPayload) batchAnswer
	}
	transports := []transport{{"http", batchHTTP}, {"mcp", batchMCP}, {"a2a", batchA2A}}
	for i, tr := range transports {
		over := ts[1+i] // a voucher of its price exceeds the balance
		cases := []struct {
			name   string
			tl     *tools.Tool
			req    x402.PaymentRequirements
			p      batch.Payload
			reason string
		}{
			{"stale", ts[0], reqs[0], voucherOf(w.payerKey, ch, prices[0]), batch.ReasonCumulativeAmountMismatch},
			{"decreasing", ts[0], reqs[0], voucherOf(w.payerKey, ch, charged-1), batch.ReasonCumulativeAmountMismatch},
			{"replayed for another call", ts[0], reqs[0], voucherOf(w.payerKey, ch, charged), "payment_already_used"},
			{"over the balance", over, reqs[1+i], voucherOf(w.payerKey, ch, charged+prices[1+i]), batch.ReasonCumulativeExceedsBalance},
			{"another receiver", ts[0], reqs[0], voucherOf(w.payerKey, otherReceiver, charged+prices[0]), batch.ReasonReceiverMismatch},
			{"another token", ts[0], reqs[0], voucherOf(w.payerKey, otherToken, charged+prices[0]), batch.ReasonTokenMismatch},
			{"forged", ts[0], reqs[0], voucherOf(stranger, ch, charged+prices[0]), batch.ReasonVoucherSignature},
		}
		for _, tc := range cases {
			a := tr.call(t, c, srv.base, tc.tl, tc.tl.ExampleInput, batchPayload(t, tc.req, tc.p))
			if a.paid || a.reason != tc.reason {
				t.Fatalf("%s, %s voucher: paid %v, reason %q, want %q\n%s", tr.name, tc.name, a.paid, a.reason, tc.reason, a.body)
			}
			if tr.name == "http" && tc.reason == batch.ReasonCumulativeAmountMismatch {
				// The corrective 402 carries the channel's state and the
				// latest voucher, which the payer signed.
				e, err := batch.ParseExtra(a.pr.Accepts[0].Extra)
				if err != nil || e.ChannelState == nil || e.ChannelState.ChargedCumulativeAmount != fmt.Sprint(charged) || e.VoucherState == nil ||
					e.VoucherState.SignedMaxClaimable != fmt.Sprint(charged) || e.VoucherState.Signature != voucherOf(w.payerKey, ch, charged).Voucher.Signature {
					t.Fatalf("the corrective 402 of a %s voucher: %+v %v", tc.name, a.pr.Accepts[0].Extra, err)
				}
			}
		}
	}
	if h, _ := batchChannel(t, db, id); h.Charged.Int64() != charged || h.Holder != "" {
		t.Fatalf("after the refused vouchers: charged %v, holder %q, want %d and none", h.Charged, h.Holder, charged)
	}
	if n := ledgerRows(); n != rowsBefore {
		t.Fatalf("refused vouchers added %d ledger rows", n-rowsBefore)
	}

	// Our client, its state file from before its last payment, is
	// resynchronised by the corrective 402 and pays.
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("state files: %v", files)
	}
	path := filepath.Join(dir, files[0].Name())
	raw, _ := os.ReadFile(path)
	old := fmt.Sprint(prices[0] + prices[1])
	stale := bytes.Replace(raw, []byte(`"chargedCumulativeAmount": "`+old+`"`), []byte(`"chargedCumulativeAmount": "`+fmt.Sprint(prices[0])+`"`), 1)
	if bytes.Equal(stale, raw) {
		t.Fatalf("could not roll the state file back:\n%s", raw)
	}
	if err := os.WriteFile(path, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	pay(ours, ts[0])
	charged += prices[0]
	if st, _ = scheme.State(reqs[0]); st.Charged != fmt.Sprint(charged) {
		t.Fatalf("our client after the corrective 402: charged %s, want %d", st.Charged, charged)
	}

	// Invalid input and a terminal down ask no payment, and leave the
	// voucher unused.
	next := batchPayload(t, reqs[0], voucherOf(w.payerKey, ch, charged+prices[0]))
	if a := batchHTTP(t, c, srv.base, ts[0], []byte(`{"no_such_member":1}`), next); a.status != http.StatusBadRequest || a.sr != nil {
		t.Fatalf("invalid input with a voucher: %d %s", a.status, a.body)
	}
	gold := terminalTool(t)
	if a := clusterMust(t, c, gold.Method, srv.base+gold.Path, "", mustHeader(t, next)); a.status != http.StatusServiceUnavailable ||
		a.header.Get(x402.HeaderPaymentRequired) != "" || a.header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("a gold tool with the terminal down: %s", a)
	}
	// The voucher pays its call, and its retry gets the recorded answer.
	first := batchHTTP(t, c, srv.base, ts[0], ts[0].ExampleInput, next)
	if !first.paid || first.sr == nil || first.sr.Transaction != "" {
		t.Fatalf("the voucher after the refusals: %d %s", first.status, first.body)
	}
	charged += prices[0]
	again := batchHTTP(t, c, srv.base, ts[0], ts[0].ExampleInput, next)
	if !again.paid || !bytes.Equal(again.body, first.body) || again.sr == nil || !sameSettle(*again.sr, *first.sr) {
		t.Fatalf("the retry of an answered voucher: %d %s %+v", again.status, again.body, again.sr)
	}
	if h, _ := batchChannel(t, db, id); h.Charged.Int64() != charged {
		t.Fatalf("after the retry: charged %v, want %d", h.Charged, charged)
	}

	// A cooperative refund: no tool runs, the rest goes back to the payer
	// and the charges are claimed; the channel's record is closed.
	// A partial refund over MCP, then the rest over A2A, then a refund
	// over HTTP of a channel with nothing left.
	left := 100_000 - charged
	const part = 1000
	rowsBefore = ledgerRows()
	for i, step := range []struct {
		tr     transport
		amount *big.Int
		back   int64
	}{
		{transports[1], big.NewInt(part), part},
		{transports[2], nil, left - part},
	} {
		payerBefore := w.chain.TokenBalance(t, w.payer)
		refund, err := batch.NewRefundPayload(w.payerKey, d, ch, big.NewInt(charged), step.amount)
		if err != nil {
			t.Fatal(err)
		}
		ra := step.tr.call(t, c, srv.base, ts[0], ts[0].ExampleInput, batchPayload(t, reqs[0], refund))
		if !ra.paid || ra.sr == nil || !ra.sr.Success || ra.sr.Transaction == "" || ra.sr.Amount != fmt.Sprint(step.back) {
			t.Fatalf("refund %d over %s: paid %v %s (%s) %+v", i, step.tr.name, ra.paid, ra.body, ra.reason, ra.sr)
		}
		if got := new(big.Int).Sub(w.chain.TokenBalance(t, w.payer), payerBefore); got.Int64() != step.back {
			t.Fatalf("refund %d over %s gave the payer %s, want %d", i, step.tr.name, got, step.back)
		}
		var ack struct{ Message, ChannelID string }
		if json.Unmarshal(ra.body, &ack) != nil || ack.Message != "Refund acknowledged" || !strings.EqualFold(ack.ChannelID, id.Hex()) {
			t.Fatalf("refund %d over %s: the answer is not the acknowledgement (did the tool run?): %s", i, step.tr.name, ra.body)
		}
		if re, err := batch.ParseResponseExtra(ra.sr.Extra); err != nil || re.ChargedAmount != "" || re.ChannelState == nil {
			t.Fatalf("refund %d: the response's extra %+v %v", i, ra.sr.Extra, err)
		}
		if h, found := batchChannel(t, db, id); found != (i == 0) || (found && (h.Charged.Int64() != charged || h.Holder != "")) {
			t.Fatalf("after refund %d: the record %+v (found %v)", i, h, found)
		}
	}
	refund, _ := batch.NewRefundPayload(w.payerKey, d, ch, big.NewInt(charged), nil)
	if a := batchHTTP(t, c, srv.base, ts[0], ts[0].ExampleInput, batchPayload(t, reqs[0], refund)); a.paid || a.reason != batch.ReasonMissingChannel {
		t.Fatalf("a refund of a closed channel: %d %s (%s)", a.status, a.body, a.reason)
	}
	if oc := anviltest.EscrowChannel(t, w.chain.Client, id); oc.TotalClaimed.Int64() != charged || oc.Balance.Int64() != charged {
		t.Fatalf("the escrow after the refunds: %+v, want %d claimed of %d", oc, charged, charged)
	}
	if n := ledgerRows(); n != rowsBefore {
		t.Fatalf("the refunds added %d ledger rows, want none (a refund is no sale)", n-rowsBefore)
	}
	l := clusterSQLiteLedger(t, db)
	var sum int64
	for _, r := range l.rows {
		var v int64
		fmt.Sscan(r.Amount, &v)
		sum += v
	}
	if sum != charged {
		t.Fatalf("the ledger sums %d, want %d", sum, charged)
	}
}

// sameSettle reports whether a and b encode alike.
func sameSettle(a, b x402.SettleResponse) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// terminalTool is a paid tool backed by the gold terminal.
func terminalTool(t *testing.T) *tools.Tool {
	t.Helper()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range cat.All() {
		if tl.Terminal {
			return tl
		}
	}
	t.Fatal("no terminal tool")
	return nil
}

func mustHeader(t *testing.T, pp *x402.PaymentPayload) string {
	t.Helper()
	h, err := x402.EncodeHeader(*pp)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestChainBatchKillAfterAnswer: `svc serve --schemes batch-settlement` is
// killed (SIGKILL) while a voucher's call stands at a payment step: once
// its answer is journaled and before the charge is committed
// (settling-committed), and once the charge is committed and before the
// journal records it (settle-returned). After each restart, recovery
// resolves the payment from the channel's record: the channel's charged
// amount includes the voucher exactly once, the ledger has it once, and
// the client's retry of the same voucher gets the recorded answer.
func TestChainBatchKillAfterAnswer(t *testing.T) {
	w := newBatchWorld(t)
	tl := batchTools(t, 1)[0]
	price := tl.PriceAtomic
	db := filepath.Join(t.TempDir(), "svc.db")
	fast := []string{"--settle-timeout", "3s"}
	srv := w.serveBatch(t, db, nil, fast...)
	c := clusterHTTP(t)
	a := batchHTTP(t, c, srv.base, tl, tl.ExampleInput, nil)
	if a.pr == nil || len(a.pr.Accepts) != 1 {
		t.Fatalf("the offer: %d %s", a.status, a.body)
	}
	req := a.pr.Accepts[0]
	scheme, err := batchclient.New(batchclient.Config{Key: w.payerKey, Dir: t.TempDir(), Deposit: big.NewInt(100_000)})
	if err != nil {
		t.Fatal(err)
	}
	ours := client.New(nil, client.WithSchemes(scheme))
	r, _ := http.NewRequest(tl.Method, srv.base+tl.Path, bytes.NewReader(tl.ExampleInput))
	r.Header.Set("Content-Type", "application/json")
	resp, err := ours.Do(r)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the deposit: %v %v", resp, err)
	}
	resp.Body.Close()
	st, _ := scheme.State(req)
	ch, err := batch.ParseChannelConfig(st.ChannelConfig)
	if err != nil {
		t.Fatal(err)
	}
	id := common.HexToHash(st.ChannelID)
	d := batch.NewDomain(8453)
	charged := price
	srv.kill(t)

	for _, point := range []string{"settling-committed", "settle-returned"} {
		t.Run(point, func(t *testing.T) {
			stalled := w.serveBatch(t, db, []string{"SVC_TEST_STALL_AT=" + point}, fast...)
			p, err := batch.NewVoucherPayload(w.payerKey, d, ch, big.NewInt(charged+price))
			if err != nil {
				t.Fatal(err)
			}
			pp := batchPayload(t, req, p)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, _ = clusterDo(ctx, clusterHTTP(t), tl.Method, stalled.base+tl.Path, string(tl.ExampleInput), mustHeader(t, pp))
			}()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(stalled.out.String(), "stalled for a crash test") {
				if time.Now().After(deadline) {
					t.Fatalf("the call did not reach %s:\n%s", point, stalled.out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			stalled.kill(t)

			again := w.serveBatch(t, db, nil, fast...)
			var ans batchAnswer
			deadline = time.Now().Add(90 * time.Second)
			for {
				ans = batchHTTP(t, c, again.base, tl, tl.ExampleInput, pp)
				if ans.paid || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Second)
			}
			charged += price
			if !ans.paid || ans.sr == nil || ans.sr.Transaction != "" {
				t.Fatalf("the retry after the restart: %d %s (%s)", ans.status, ans.body, ans.reason)
			}
			re, err := batch.ParseResponseExtra(ans.sr.Extra)
			if err != nil || re.ChannelState == nil || re.ChannelState.ChargedCumulativeAmount != fmt.Sprint(charged) {
				t.Fatalf("the recorded answer's snapshot: %+v %v, want charged %d", ans.sr.Extra, err, charged)
			}
			for deadline = time.Now().Add(10 * time.Second); !strings.Contains(again.out.String(), "recovery: settlement recorded"); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the retry was not answered from recovery's record:\n%s", again.out.String())
				}
			}
			// A second retry: the same answer, nothing charged again.
			if twice := batchHTTP(t, c, again.base, tl, tl.ExampleInput, pp); !twice.paid || !bytes.Equal(twice.body, ans.body) {
				t.Fatalf("the second retry: %d %s", twice.status, twice.body)
			}
			again.kill(t)
			if h, _ := batchChannel(t, db, id); h.Charged.Int64() != charged || h.Holder != "" {
				t.Fatalf("the channel after the restart: charged %v holder %q, want %d", h.Charged, h.Holder, charged)
			}
			l := clusterSQLiteLedger(t, db)
			var sum int64
			for _, r := range l.rows {
				var v int64
				fmt.Sscan(r.Amount, &v)
				sum += v
			}
			if sum != charged {
				t.Fatalf("the ledger sums %d, want %d (each voucher once)", sum, charged)
			}
		})
	}
}

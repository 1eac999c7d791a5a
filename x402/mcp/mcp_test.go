package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
	"github.com/seed1284c1d2/svc/x402/seller"
)

const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

type echoIn struct {
	Word string `json:"word"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// TestAddPaidTool sells a typed tool of a program's own MCP server to the
// go-sdk's client, in both eras: invalid arguments ask for no payment, an
// unpaid call gets the PaymentRequired (tool-result binding), a paid one
// the answer with its settlement, the same payment again the same answer
// settled once, and the same payment for other arguments a refusal; the
// handler runs once per paid call.
func TestAddPaidTool(t *testing.T) {
	ts, signer, runs := newServer(t, x402mcp.Config{})

	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version "+version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1.0.0"}, nil).
				Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, &sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			list, err := cs.ListTools(ctx, nil)
			if err != nil || len(list.Tools) != 1 || list.Tools[0].Meta[x402mcp.MetaAgentsPaymentRequired] != true || list.Tools[0].Meta[x402mcp.MetaAgentsPriceUSD] != 0.002 {
				t.Fatalf("tools/list: %+v %v", list, err)
			}
			call := func(args any, meta sdk.Meta) *sdk.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args, Meta: meta})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			required := func(res *sdk.CallToolResult) x402.PaymentRequired {
				t.Helper()
				var pr x402.PaymentRequired
				b, _ := json.Marshal(res.StructuredContent)
				if !res.IsError || res.Meta[x402mcp.MetaPaymentError] == nil || json.Unmarshal(b, &pr) != nil || len(pr.Accepts) != 1 {
					t.Fatalf("not a payment requirement: %+v", res)
				}
				return pr
			}
			before := runs.Load()
			if res := call(map[string]any{"word": 7}, nil); !res.IsError || res.Meta[x402mcp.MetaPaymentError] != nil {
				t.Fatalf("invalid arguments: %+v", res)
			}
			pr := required(call(map[string]any{"word": "hi"}, nil))
			if pr.Error != engine.ReasonPaymentRequired || pr.Accepts[0].Amount != "2000" {
				t.Fatalf("offer %+v", pr)
			}
			ep, err := signer.NewPayload(pr.Accepts[0], time.Now(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(ep)
			payment := x402.PaymentPayload{X402Version: x402.Version, Accepted: pr.Accepts[0], Payload: raw}
			var txs []string
			for range 2 {
				res := call(map[string]any{"word": "hi"}, sdk.Meta{x402mcp.MetaPayment: payment})
				out, _ := json.Marshal(res.StructuredContent)
				sr, _ := json.Marshal(res.Meta[x402mcp.MetaPaymentResponse])
				var settle x402.SettleResponse
				if res.IsError || string(out) != `{"echo":"hi"}` || json.Unmarshal(sr, &settle) != nil || !settle.Success {
					t.Fatalf("paid call: %+v", res)
				}
				txs = append(txs, settle.Transaction)
			}
			if txs[0] != txs[1] || runs.Load() != before+1 {
				t.Fatalf("settlements %v, %d runs", txs, runs.Load()-before)
			}
			if pr := required(call(map[string]any{"word": "other"}, sdk.Meta{x402mcp.MetaPayment: payment})); pr.Error != exact.ReasonNonceAlreadyUsed {
				t.Fatalf("the payment of another call: %q", pr.Error)
			}
			if runs.Load() != before+1 {
				t.Fatal("a refused payment ran the handler")
			}
		})
	}
}

// newServer serves the paid tool echo ($0.002) with cfg (its Seller set
// here) on a test server; runs counts its paid runs.
func newServer(t *testing.T, cfg x402mcp.Config) (*httptest.Server, *client.Signer, *atomic.Int64) {
	t.Helper()
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: payTo})
	if err != nil {
		t.Fatal(err)
	}
	exact, err := exactserver.New(exactserver.Config{Facilitator: local, SkipFacilitatorVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{exact}, Journal: engine.NewMemoryJournal()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	if cfg.Seller, err = seller.New(seller.Config{Engine: eng}); err != nil {
		t.Fatal(err)
	}
	sell, err := x402mcp.NewSeller(cfg)
	if err != nil {
		t.Fatal(err)
	}
	offer, err := eng.NewOffer("tools/call echo", "echo", x402.Route{Price: "0.002", PayTo: payTo, Resource: x402.ResourceInfo{URL: x402mcp.ResourceURL("", "echo")}})
	if err != nil {
		t.Fatal(err)
	}
	runs := new(atomic.Int64)
	info := &sdk.Implementation{Name: "echo", Version: "1.0.0"}
	srv := sdk.NewServer(info, nil)
	err = x402mcp.AddPaidTool(sell, srv, &sdk.Tool{Name: "echo", Description: "echoes a word"}, offer,
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (echoOut, error) {
			runs.Add(1)
			return echoOut{Echo: in.Word}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(sell.Handler(h, info))
	t.Cleanup(ts.Close)
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := client.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return ts, signer, runs
}

// TestLimits: the limits of unpaid calls and refused payments answer a
// tool error before the engine is asked, and each refused payment is
// told.
func TestLimits(t *testing.T) {
	var refused atomic.Int64
	var unpaidOK atomic.Bool
	unpaidOK.Store(true)
	ts, signer, runs := newServer(t, x402mcp.Config{
		AdmitUnpaid:    func(*http.Request) (bool, time.Duration) { return unpaidOK.Load(), 5 * time.Second },
		AdmitPayment:   func(*http.Request) (bool, time.Duration) { return refused.Load() == 0, 7 * time.Second },
		PaymentRefused: func(*http.Request) { refused.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1.0.0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(meta sdk.Meta) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"word": "hi"}, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(res *sdk.CallToolResult) string {
		b, _ := json.Marshal(res.Content)
		return string(b)
	}
	unpaid := call(nil)
	var pr x402.PaymentRequired
	b, _ := json.Marshal(unpaid.StructuredContent)
	if err := json.Unmarshal(b, &pr); err != nil || len(pr.Accepts) != 1 {
		t.Fatalf("unpaid: %+v", unpaid)
	}
	tampered := pr.Accepts[0]
	tampered.Amount = "1"
	ep, err := signer.NewPayload(tampered, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ep)
	if res := call(sdk.Meta{x402mcp.MetaPayment: x402.PaymentPayload{X402Version: 2, Accepted: tampered, Payload: raw}}); res.Meta[x402mcp.MetaPaymentError] == nil || refused.Load() != 1 {
		t.Fatalf("a tampered payment: %+v, %d refusals told", res, refused.Load())
	}
	ep, err = signer.NewPayload(pr.Accepts[0], time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(ep)
	res := call(sdk.Meta{x402mcp.MetaPayment: x402.PaymentPayload{X402Version: 2, Accepted: pr.Accepts[0], Payload: raw}})
	if !res.IsError || res.Meta[x402mcp.MetaPaymentError] != nil || !strings.Contains(text(res), "rate limited") || !strings.Contains(text(res), "7s") || runs.Load() != 0 {
		t.Fatalf("a payment after a refusal: %+v", res)
	}
	unpaidOK.Store(false)
	if res := call(nil); !res.IsError || res.Meta[x402mcp.MetaPaymentError] != nil || !strings.Contains(text(res), "rate limited") {
		t.Fatalf("an unpaid call over the limit: %+v", res)
	}
}

// TestNewSeller: a seller needs the transport-neutral seller.
func TestNewSeller(t *testing.T) {
	if _, err := x402mcp.NewSeller(x402mcp.Config{}); err == nil || errors.Is(err, nil) {
		t.Fatal("a seller without seller.Seller")
	}
}

package documents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// Every paid tool is sold on the same x402 terms over three transports, all
// through one payment engine: HTTP (its REST route), MCP (POST /mcp,
// tools/call) and A2A (POST /a2a, the a2a-x402 extension). This file
// derives, from the tool descriptors alone, the description of the three
// ways to buy each tool that the catalog, the router, /openapi.json,
// /skill.md, the manifests and the agent card publish.

// Transport names, in the order the documents list them.
const (
	TransportHTTP = "http"
	TransportMCP  = "mcp"
	TransportA2A  = "a2a"
)

// MCPCallMethod is the JSON-RPC method that calls an MCP tool.
const MCPCallMethod = "tools/call"

// PaymentTerms are the x402 terms of one paid tool: the same whichever
// transport buys it.
type PaymentTerms struct {
	Protocol    string      `json:"protocol"`
	X402Version int         `json:"x402Version"`
	Scheme      string      `json:"scheme"`
	Network     string      `json:"network"`
	Asset       string      `json:"asset"`
	Currency    string      `json:"currency"`
	PriceUSD    json.Number `json:"priceUsd"`
	// Price has six decimals ("0.005000"); Amount is in USDC atomic units.
	Price             string `json:"price"`
	Amount            string `json:"amount"`
	PayTo             string `json:"payTo"`
	MaxTimeoutSeconds int    `json:"maxTimeoutSeconds"`
}

// HTTPPurchase is how a tool is bought over HTTP: its REST route answers
// 402 with PAYMENT-REQUIRED, the retry carries PAYMENT-SIGNATURE and the
// 200 PAYMENT-RESPONSE.
type HTTPPurchase struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	URL    string `json:"url"`
	// InputLocation is "query" (GET tools) or "body".
	InputLocation         tools.InputLocation `json:"inputLocation"`
	PaymentRequiredHeader string              `json:"paymentRequiredHeader"`
	PaymentHeader         string              `json:"paymentHeader"`
	SettlementHeader      string              `json:"settlementHeader"`
	How                   string              `json:"how"`
}

// MCPPurchase is how a tool is bought over MCP: tools/call with the tool's
// name at URL, the payment in params._meta[PaymentMeta], the settlement in
// result._meta[SettlementMeta].
type MCPPurchase struct {
	URL    string `json:"url"`
	Method string `json:"method"`
	// Tool is the MCP tool name: the operation id ("risk_levels").
	Tool           string `json:"tool"`
	PaymentMeta    string `json:"paymentMeta"`
	SettlementMeta string `json:"settlementMeta"`
	// Extension is the capability of the extension binding.
	Extension string `json:"extension"`
	How       string `json:"how"`
}

// A2APurchase is how a tool is bought over A2A with the x402 extension: a
// message with DataPart at URL, then the payment on the input-required
// task.
type A2APurchase struct {
	URL  string `json:"url"`
	Card string `json:"card"`
	// Skill is the agent card skill of the tool: its key ("risk-levels"),
	// also the tool member of the data part.
	Skill     string `json:"skill"`
	Extension string `json:"extension"`
	// DataPart is the data part that asks for the tool, with the tool's
	// example input.
	DataPart            json.RawMessage `json:"dataPart"`
	PaymentRequiredMeta string          `json:"paymentRequiredMeta"`
	PaymentMeta         string          `json:"paymentMeta"`
	ReceiptsMeta        string          `json:"receiptsMeta"`
	How                 string          `json:"how"`
}

// Transports are the three ways to buy one paid tool, on the same Terms.
type Transports struct {
	Terms PaymentTerms `json:"terms"`
	HTTP  HTTPPurchase `json:"http"`
	MCP   MCPPurchase  `json:"mcp"`
	A2A   A2APurchase  `json:"a2a"`
}

// Clone returns a copy sharing no memory with t.
func (t Transports) Clone() Transports {
	t.A2A.DataPart = bytes.Clone(t.A2A.DataPart)
	return t
}

// NewTransports derives the three ways to buy t on the terms req, at the
// service whose public base URL is base, from its descriptor.
func NewTransports(base string, t *tools.Tool, req x402.PaymentRequirements) (Transports, error) {
	s := &Set{base: strings.TrimRight(base, "/")}
	in := json.RawMessage(`{}`)
	if len(t.ExampleInput) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, t.ExampleInput); err != nil {
			return Transports{}, fmt.Errorf("discovery: tool %s: example input: %w", t.Key, err)
		}
		in = c.Bytes()
	}
	part, err := json.Marshal(struct {
		Tool  string          `json:"tool"`
		Input json.RawMessage `json:"input"`
	}{t.Key, in})
	if err != nil {
		return Transports{}, fmt.Errorf("discovery: tool %s: A2A data part: %w", t.Key, err)
	}
	where := "the input as the JSON body"
	if t.InputLocation == tools.InputQuery {
		where = "the input as query parameters"
	}
	return Transports{
		Terms: PaymentTerms{
			Protocol: "x402", X402Version: x402.Version, Scheme: x402.SchemeExact,
			Network: req.Network, Asset: req.Asset, Currency: "USDC",
			PriceUSD: json.Number(t.Price), Price: t.PriceFixed6(), Amount: req.Amount,
			PayTo: req.PayTo, MaxTimeoutSeconds: req.MaxTimeoutSeconds,
		},
		HTTP: HTTPPurchase{
			Method: t.Method, Path: t.Path, URL: s.absURL(t.Path), InputLocation: t.InputLocation,
			PaymentRequiredHeader: x402.HeaderPaymentRequired, PaymentHeader: x402.HeaderPaymentSignature,
			SettlementHeader: x402.HeaderPaymentResponse,
			How: fmt.Sprintf("%s %s with %s: answered 402 with the %s header; retry the identical request with %s; the 200 carries %s.",
				t.Method, t.Path, where, x402.HeaderPaymentRequired, x402.HeaderPaymentSignature, x402.HeaderPaymentResponse),
		},
		MCP: MCPPurchase{
			URL: s.absURL(wire.PathMCP), Method: MCPCallMethod, Tool: t.OperationID,
			PaymentMeta: x402mcp.MetaPayment, SettlementMeta: x402mcp.MetaPaymentResponse, Extension: x402mcp.ExtensionPayment,
			How: fmt.Sprintf(`POST %s, %s with name %q and the input as arguments: the unpaid call answers the x402 PaymentRequired `+
				`(isError with it in structuredContent, or resultType payment_required to a client advertising %s); `+
				`call again with the PaymentPayload in params._meta[%q]; the settlement is in result._meta[%q].`,
				wire.PathMCP, MCPCallMethod, t.OperationID, x402mcp.ExtensionPayment, x402mcp.MetaPayment, x402mcp.MetaPaymentResponse),
		},
		A2A: A2APurchase{
			URL: s.absURL(wire.PathA2A), Card: s.absURL(wire.PathAgentCard), Skill: t.Key, Extension: x402a2a.ExtensionURI,
			DataPart: part, PaymentRequiredMeta: x402a2a.MetaRequired, PaymentMeta: x402a2a.MetaPayload, ReceiptsMeta: x402a2a.MetaReceipts,
			How: fmt.Sprintf(`POST %s, a message with the data part {"tool": %q, "input": {...}}: the task is input-required with %s in its status message metadata; `+
				`send a message on that task with %s in its metadata; the completed task holds the output as the artifact %q and %s.`,
				wire.PathA2A, t.Key, x402a2a.MetaRequired, x402a2a.MetaPayload, t.Key, x402a2a.MetaReceipts),
		},
	}, nil
}

// transportSummary is the part of the manifests that says, once for all
// tools, how each transport takes a payment.
func (s *Set) transportSummary() map[string]any {
	return map[string]any{
		TransportHTTP: map[string]any{
			"url":     s.base,
			"request": "the tool's method and path (transports.http of each resource)",
			"headers": paymentHeaders(),
			"flow": []string{
				"send the request without payment",
				"receive 402 with the " + x402.HeaderPaymentRequired + " header (base64 JSON PaymentRequired)",
				"retry the identical request with the " + x402.HeaderPaymentSignature + " header (base64 JSON PaymentPayload)",
				"read the 200 answer and the " + x402.HeaderPaymentResponse + " header (base64 JSON SettleResponse)",
			},
		},
		TransportMCP: map[string]any{
			"url":            s.absURL(wire.PathMCP),
			"method":         MCPCallMethod,
			"toolName":       "the tool's operation id (transports.mcp.tool of each resource)",
			"spec":           "x402 specs/transports-v2/mcp.md",
			"paymentMeta":    x402mcp.MetaPayment,
			"settlementMeta": x402mcp.MetaPaymentResponse,
			"extension":      x402mcp.ExtensionPayment,
			"flow": []string{
				"call the tool without payment: the result is the x402 PaymentRequired (tool-result binding: isError, structuredContent and content[0].text; extension binding, when the client advertises " + x402mcp.ExtensionPayment + ": resultType payment_required with paymentRequired)",
				"call it again with the PaymentPayload in params._meta[\"" + x402mcp.MetaPayment + "\"]",
				"read the tool's result and the settlement in result._meta[\"" + x402mcp.MetaPaymentResponse + "\"]",
			},
		},
		TransportA2A: map[string]any{
			"url":          s.absURL(wire.PathA2A),
			"card":         s.absURL(wire.PathAgentCard),
			"extension":    x402a2a.ExtensionURI,
			"dataPart":     map[string]any{"tool": "the tool's key (transports.a2a.skill of each resource)", "input": "the tool's input object"},
			"requiredMeta": x402a2a.MetaRequired,
			"paymentMeta":  x402a2a.MetaPayload,
			"receiptsMeta": x402a2a.MetaReceipts,
			"flow": []string{
				`send a message with the data part {"tool": "<key>", "input": {...}}`,
				"the task is input-required; its status message metadata holds " + x402a2a.MetaStatus + " payment-required and " + x402a2a.MetaRequired,
				"send a message on that task whose metadata holds " + x402a2a.MetaPayload + " (the PaymentPayload)",
				"the task is completed with the output as an artifact and " + x402a2a.MetaReceipts,
			},
		},
	}
}

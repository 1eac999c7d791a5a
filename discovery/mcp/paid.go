package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// MetaPrice is the tools/list _meta key of a paid tool's terms:
// {priceUsd, scheme, network, asset, amount, payTo, maxTimeoutSeconds,
// resource}.
const MetaPrice = "svc/payment"

// DefaultSellingInstructions are the instructions of a server that sells
// the paid tools over MCP (Options.Engine set).
const DefaultSellingInstructions = "Every paid svc tool is callable here by its operation id (risk_levels, xau_quote, ...), " +
	"priced in USDC with x402: a call without payment runs nothing and returns the payment requirements " +
	"(isError with the x402 PaymentRequired, or resultType payment_required when you advertise " + x402mcp.ExtensionPayment + "); " +
	"sign one and call again with the payment in _meta[\"" + x402mcp.MetaPayment + "\"]. " +
	"The free find_tool, catalog, route_tool and tool_info tools find the right one and check your input before you pay."

// PaidToolName is the MCP name of a paid tool: its operation id
// ("risk_levels").
func PaidToolName(t *tools.Tool) string { return t.OperationID }

// Fingerprint identifies a paid MCP call for the payment journal:
// seller.Fingerprint of "mcp", the tool name and the canonical JSON of the
// decoded arguments (tools.Call.Input: the request re-encoded, members in
// their declared order, numbers in plain decimal form), the rule of every
// transport. The same payment is replayed only to the same fingerprint, so
// an authorization used over HTTP or A2A never buys an MCP call, nor one
// tool's call another's, while arguments sent again formatted otherwise
// get the recorded answer.
func Fingerprint(tool string, input []byte) string {
	return seller.Fingerprint(x402mcp.Transport, tool, input)
}

// seller sells the paid tools: the catalog's shop (offer, preflight, run)
// through the x402 MCP binding.
type paidSeller struct {
	shop  *sell.Shop
	mcp   *x402mcp.Seller
	tools []*paidTool
}

// paidTool is one paid tool as MCP sells it.
type paidTool struct {
	tool  *tools.Tool
	name  string
	offer *engine.Offer
	def   *sdk.Tool
}

// newSeller builds the offers of every catalog tool; nil when opts sells
// nothing (no Engine).
func newSeller(opts Options, log *slog.Logger) (*paidSeller, error) {
	if opts.Engine == nil {
		return nil, nil
	}
	shop := opts.Shop
	if shop == nil {
		return nil, errors.New("mcp: Options.Shop is required with Options.Engine")
	}
	sl, err := seller.New(seller.Config{Engine: opts.Engine, RunTimeout: opts.ToolTimeout, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	bin, err := x402mcp.NewSeller(x402mcp.Config{Seller: sl, RequestID: opts.RequestID, RefCode: opts.RefCode, Logger: log,
		AdmitUnpaid: opts.AdmitUnpaid, AdmitPayment: opts.AdmitPayment, PaymentRefused: opts.PaymentRefused,
		RunError: func(ctx context.Context, tool string, err error) string {
			if e := toolError(ctx, log, tool, err, nil); e != nil {
				return e.Error()
			}
			return tool + " failed"
		}})
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	s := &paidSeller{shop: shop, mcp: bin}
	base := strings.TrimRight(opts.BaseURL, "/")
	for _, t := range shop.Catalog().All() {
		name := PaidToolName(t)
		ext, err := bazaarExtension(t, name)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s: %w", t.Key, err)
		}
		offer, err := shop.Offer(t, "tools/call "+name, x402mcp.ResourceURL(base, name), map[string]any{x402.BazaarExtensionKey: ext})
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		pt := &paidTool{tool: t, name: name, offer: offer}
		if pt.def, err = paidToolDef(pt); err != nil {
			return nil, fmt.Errorf("mcp: tool %s: %w", t.Key, err)
		}
		s.tools = append(s.tools, pt)
	}
	return s, nil
}

// bazaarExtension is the bazaar discovery extension of an MCP tool:
// info.input {type "mcp", toolName, description, transport, inputSchema,
// example}, info.output {type "json", example}, and the schema info
// validates against. The output example is left out when it has text
// outside Latin-1 (session_state's "Monday–Friday"): a payment echoes the
// offer's extensions, and Cloudflare's client encodes it with btoa, which
// refuses such text.
func bazaarExtension(t *tools.Tool, name string) (map[string]any, error) {
	in := t.InputSchemaMap()
	delete(in, "$schema")
	delete(in, "title")
	input := map[string]any{
		"type": "mcp", "toolName": name, "transport": "streamable-http",
		"description": resourceSentence(t.Description), "inputSchema": in,
	}
	if len(t.ExampleInput) > 0 {
		var ex map[string]any
		if err := json.Unmarshal(t.ExampleInput, &ex); err != nil {
			return nil, fmt.Errorf("example input: %w", err)
		}
		input["example"] = ex
	}
	info := map[string]any{"input": input}
	props := map[string]any{
		"input": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"type":        map[string]any{"type": "string", "const": "mcp"},
				"toolName":    map[string]any{"type": "string"},
				"description": map[string]any{"type": "string"},
				"transport":   map[string]any{"type": "string", "enum": []any{"streamable-http", "sse"}},
				"inputSchema": map[string]any{"type": "object"},
				"example":     map[string]any{"type": "object"},
			},
			"required":             []any{"type", "toolName", "inputSchema"},
			"additionalProperties": false,
		},
	}
	if len(t.OutputExample) > 0 && latin1(string(t.OutputExample)) {
		var ex any
		if err := json.Unmarshal(t.OutputExample, &ex); err != nil {
			return nil, fmt.Errorf("output example: %w", err)
		}
		info["output"] = map[string]any{"type": "json", "example": ex}
		props["output"] = map[string]any{
			"type":       "object",
			"properties": map[string]any{"type": map[string]any{"type": "string"}, "example": map[string]any{}},
			"required":   []any{"type"},
		}
	}
	return map[string]any{
		"info": info,
		"schema": map[string]any{
			"$schema": x402.JSONSchemaDialect, "type": "object", "properties": props, "required": []any{"input"},
		},
	}, nil
}

// latin1 reports whether s holds Latin-1 characters only.
func latin1(s string) bool {
	for _, r := range s {
		if r > 0xFF {
			return false
		}
	}
	return true
}

// resourceSentence is the first sentence of a description, at most 200
// bytes.
func resourceSentence(d string) string {
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	if len(d) > 200 {
		d = d[:200]
	}
	return d
}

// paidToolDef is the tools/list entry of a paid tool, before the x402
// binding adds what every paid tool has (an output schema admitting the
// x402 PaymentRequired too, Cloudflare's _meta keys).
func paidToolDef(pt *paidTool) (*sdk.Tool, error) {
	t := pt.tool
	in := t.InputSchemaMap()
	delete(in, "$schema") // 2020-12 is MCP's default dialect; older validators refuse the URI
	out := t.OutputSchemaMap()
	delete(out, "$schema")
	delete(out, "title")
	if len(in) == 0 || len(out) == 0 {
		return nil, errors.New("the descriptor's schemas are not JSON objects")
	}
	req := pt.offer.PaymentRequired.Accepts[0]
	no, yes := false, true
	ann := &sdk.ToolAnnotations{
		Title:        t.Name,
		ReadOnlyHint: true, // no tool changes anything
		// The terminal-backed tools read a live market: a repeated call
		// may answer differently, and they reach a system outside svc.
		IdempotentHint:  !t.Terminal,
		DestructiveHint: &no,
		OpenWorldHint:   &no,
	}
	if t.Terminal {
		ann.OpenWorldHint = &yes
	}
	return &sdk.Tool{
		Name:  pt.name,
		Title: t.Name,
		Description: t.Description + fmt.Sprintf(" Paid: %s USDC per call (x402, %s). A call without payment runs nothing and "+
			"returns the payment requirements; call again with the signed payment in _meta[%q].", t.Price, req.Network, x402mcp.MetaPayment),
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  ann,
		Meta: sdk.Meta{
			MetaPrice: map[string]any{
				"priceUsd": t.Price, "scheme": req.Scheme, "network": req.Network, "asset": req.Asset,
				"amount": req.Amount, "payTo": req.PayTo, "maxTimeoutSeconds": req.MaxTimeoutSeconds,
				"resource": pt.offer.PaymentRequired.Resource.URL,
			},
		},
	}, nil
}

// register adds the paid tools to srv: each call is prepared by the
// shop (decoded and validated, then the terminal and the symbol checked)
// before any payment is asked.
func (s *paidSeller) register(srv *sdk.Server, log *slog.Logger) error {
	for _, pt := range s.tools {
		err := s.mcp.AddTool(srv, pt.def, pt.offer, func(ctx context.Context, args json.RawMessage) (x402mcp.Prepared, error) {
			call, err := s.shop.Prepare(ctx, pt.tool, args)
			if err != nil {
				if svc.KindOf(err) == svc.KindUnavailable && ctx.Err() == nil {
					log.WarnContext(ctx, "mcp: tool unavailable; no payment requested", "tool", pt.name, "err", err)
				}
				return x402mcp.Prepared{}, toolError(ctx, log, pt.name, err, nil)
			}
			return x402mcp.Prepared{Input: call.Input(), Run: func(ctx context.Context) ([]byte, error) { return s.shop.Run(ctx, call) }}, nil
		})
		if err != nil {
			return fmt.Errorf("mcp: tool %s: %w", pt.tool.Key, err)
		}
	}
	return nil
}

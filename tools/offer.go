package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/x402"
)

// PaymentRoute builds the payment configuration of the tool: its price on
// network to payTo, for the resource at resourceURL (empty: filled in per
// request by the seller), with the bazaar discovery extension (the tool's
// input schema, an input example and an output example). Every transport
// that sells the tool (HTTP, MCP, A2A) offers these terms.
//
// The output schema is left out of the 402: the offer travels in a header
// that clients echo in PAYMENT-SIGNATURE (bounded at x402.MaxHeaderBytes)
// and that proxies buffer (often 4 KiB); with it the largest offer is
// 5.2 KiB encoded, without it 3.5 KiB. The catalog publishes the full
// output schema.
func (t *Tool) PaymentRoute(network, payTo, resourceURL string) (x402.Route, error) {
	// The input schema is nested in the bazaar schema: its own "$schema"
	// (meaningless in a subschema) and "title" stay in the catalog.
	in := t.InputSchemaMap()
	delete(in, "$schema")
	delete(in, "title")
	bz := &x402.BazaarInfo{Method: t.Method, InputSchema: in}
	if len(t.ExampleInput) > 0 {
		if t.InputLocation == InputQuery {
			q, err := QueryOf(t.ExampleInput)
			if err != nil {
				return x402.Route{}, fmt.Errorf("tool %s: example input: %w", t.Key, err)
			}
			params := map[string]any{}
			for k := range q {
				params[k] = q.Get(k)
			}
			bz.InputExample = params
		} else {
			var v any
			if err := json.Unmarshal(t.ExampleInput, &v); err != nil {
				return x402.Route{}, fmt.Errorf("tool %s: example input: %w", t.Key, err)
			}
			bz.InputExample = v
		}
	}
	if len(t.OutputExample) > 0 {
		var v any
		if err := json.Unmarshal(t.OutputExample, &v); err != nil {
			return x402.Route{}, fmt.Errorf("tool %s: output example: %w", t.Key, err)
		}
		bz.OutputExample = v
	}
	route := x402.Route{
		Price:    t.Price,
		Network:  network,
		PayTo:    payTo,
		Resource: x402.ResourceInfo{URL: resourceURL, Description: resourceDescription(t), MimeType: "application/json"},
		Bazaar:   bz,
	}
	if err := route.Validate(); err != nil {
		return x402.Route{}, fmt.Errorf("tool %s: %w", t.Key, err)
	}
	return route, nil
}

// PaymentRequired is the tool's x402 v2 offer for the resource at
// resourceURL: the PaymentRequired (resource, the exact-scheme
// requirements, the bazaar extension) a seller answers a call without
// payment with, as PaymentRoute(...).PaymentRequired() builds it for the
// HTTP server. Discovery documents publish it as it is, so that they state
// the terms of the 402. Its Error is empty.
func (t *Tool) PaymentRequired(network, payTo, resourceURL string) (x402.PaymentRequired, error) {
	route, err := t.PaymentRoute(network, payTo, resourceURL)
	if err != nil {
		return x402.PaymentRequired{}, err
	}
	pr, err := route.PaymentRequired()
	if err != nil {
		return x402.PaymentRequired{}, fmt.Errorf("tool %s: %w", t.Key, err)
	}
	return pr, nil
}

// resourceDescription is the first sentence of the tool's description
// (the 402 travels in a header; the whole text is in the catalog).
func resourceDescription(t *Tool) string {
	d := t.Description
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	if len(d) > 200 {
		d = d[:200]
	}
	if d == "" {
		d = t.Name
	}
	return d
}

package documents

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// OpenAPIVersion is the version of the interface description format.
const OpenAPIVersion = "3.1.0"

// ManifestSchema is the common shape of the manifests, for the route
// documentation of their routes.
func ManifestSchema(desc string) map[string]any {
	return map[string]any{
		"type":        "object",
		"description": desc,
		"properties": map[string]any{
			"manifestVersion": routedoc.String("Version of the manifest format."),
			"version":         routedoc.String("Interface version of the service."),
			"name":            routedoc.String(""),
			"purpose":         routedoc.String("What the document is for."),
			"links":           routedoc.Map(routedoc.String(""), "Absolute URLs by name."),
		},
		"required": []string{"manifestVersion", "version", "name", "purpose", "links"},
	}
}

// buildOpenAPI builds /openapi.json.
func (s *Set) buildOpenAPI() ([]byte, error) {
	paths := map[string]map[string]any{}
	add := func(method, path string, op map[string]any) {
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = op
	}
	schemas := s.oasComponentSchemas()
	tagSet := map[string]bool{}
	for i, t := range s.tools {
		op, err := s.oasPaidOperation(t, s.buy[i], schemas)
		if err != nil {
			return nil, err
		}
		for _, tag := range t.Tags {
			tagSet[tag] = true
		}
		add(t.Method, t.Path, op)
	}
	for _, d := range s.cfg.Routes {
		add(d.Method, d.Path, s.oasFreeOperation(d))
	}
	tags := []map[string]any{
		{"name": routedoc.TagPaid, "description": "Paid tools: HTTP 402 with x402 v2 payment requirements (USDC on " + s.network.CAIP2 + "), then 200 after the retry with PAYMENT-SIGNATURE; each is also sold over MCP (POST /mcp) and A2A (POST /a2a) on the same terms. See x-payment-info and x-transports on each operation."},
		{"name": routedoc.TagDiscovery, "description": "Free finder, router, catalog and preview."},
		{"name": routedoc.TagProtocols, "description": "MCP and A2A: free discovery, and every paid tool sold with x402 (see x-transports), and the agent card."},
		{"name": routedoc.TagManifests, "description": "Free machine-readable documents (cached, with ETag)."},
		{"name": routedoc.TagStats, "description": "Free aggregate counters (no per-client data)."},
		{"name": routedoc.TagClub, "description": "Free membership club surface."},
		{"name": routedoc.TagOperations, "description": "Health and metrics."},
	}
	toolTags := make([]string, 0, len(tagSet))
	for tag := range tagSet {
		toolTags = append(toolTags, tag)
	}
	slices.Sort(toolTags)
	for _, tag := range toolTags {
		tags = append(tags, map[string]any{"name": tag, "description": "Paid tools tagged " + tag + "."})
	}
	limit := s.cfg.BodyLimit
	doc := map[string]any{
		"openapi": OpenAPIVersion,
		"info": map[string]any{
			"title":   s.cfg.Name,
			"version": s.cfg.Version,
			"summary": "Pay-per-call market intelligence and utility tools for autonomous agents (x402 v2, USDC).",
			"description": ServiceDescription + "\n\n" +
				"Payment: every paid operation answers 402 with a PAYMENT-REQUIRED header (base64 JSON, x402 v2); pay with the exact scheme (EIP-3009 USDC authorization) and retry the identical request with PAYMENT-SIGNATURE; the 200 carries PAYMENT-RESPONSE. " +
				"Invalid input is answered 400 (application/problem+json with errors [{field, rule, message}]) before any 402, so nobody pays for a call that cannot succeed; unknown JSON members and unknown query parameters are invalid (ref and src, which carry attribution, excepted), and so is a tool parameter given twice (no value is picked). " +
				fmt.Sprintf("Request bodies are limited to %d bytes (413 past it). Free routes are rate-limited per client address (429 with Retry-After); paid ones are not.", limit) + "\n\n" +
				"Three ways to buy each paid operation, on the same price, network, asset and payTo (x-payment-info), through one payment engine (one authorization buys one call, whatever the transport); x-transports on each operation names them:\n\n" +
				"- HTTP: the operation itself, as above.\n" +
				"- MCP (" + s.absURL(wire.PathMCP) + "): " + MCPCallMethod + " with the operationId as the tool name and the input as arguments; the unpaid call answers the x402 PaymentRequired (tool-result binding: isError, structuredContent; extension binding " + x402mcp.ExtensionPayment + " on protocol 2026-07-28: resultType payment_required); send the PaymentPayload in params._meta[\"" + x402mcp.MetaPayment + "\"]; the settlement is in result._meta[\"" + x402mcp.MetaPaymentResponse + "\"] (x402 specs/transports-v2/mcp.md).\n" +
				"- A2A (" + s.absURL(wire.PathA2A) + ", agent card " + s.absURL(wire.PathAgentCard) + "): the A2A x402 extension v0.2 (" + x402a2a.ExtensionURI + "); a message with the data part {\"tool\": \"<x-catalog-key>\", \"input\": {...}} gets a task in input-required with " + x402a2a.MetaRequired + "; a message on that task with " + x402a2a.MetaPayload + " gets the completed task with the output as an artifact and " + x402a2a.MetaReceipts + ".",
			"x-body-limit-bytes": limit,
			"x-dev-mode":         s.cfg.DevMode,
		},
		"servers":      []map[string]any{{"url": s.base, "description": "Public base URL"}},
		"tags":         tags,
		"externalDocs": map[string]any{"description": "Usage summary for agents", "url": s.absURL("/skill.md")},
		"paths":        paths,
		"components": map[string]any{
			"schemas":   schemas,
			"responses": s.oasResponses(),
			"headers": map[string]any{
				"PaymentRequired": map[string]any{"description": "Base64 (standard, padded) of the JSON x402 v2 PaymentRequired {x402Version, error, resource, accepts, extensions}.", "schema": routedoc.String("")},
				"PaymentResponse": map[string]any{"description": "Base64 of the JSON x402 SettleResponse {success, transaction, network, payer}.", "schema": routedoc.String("")},
				"RetryAfter":      map[string]any{"description": "Seconds to wait.", "schema": routedoc.Int("")},
				"ETag":            map[string]any{"description": "Strong entity tag of the document (send it back in If-None-Match).", "schema": routedoc.String("")},
			},
		},
	}
	b, err := discMarshal(doc)
	if err != nil {
		return nil, fmt.Errorf("discovery: encoding openapi.json: %w", err)
	}
	return b, nil
}

// oasPaidOperation describes the paid operation of t, with the three ways
// to buy it (x-transports), adding its input and output schemas to
// schemas.
func (s *Set) oasPaidOperation(t *tools.Tool, tr Transports, schemas map[string]any) (map[string]any, error) {
	var in, out map[string]any
	if err := json.Unmarshal(t.InputSchema, &in); err != nil {
		return nil, fmt.Errorf("discovery: tool %s: input schema: %w", t.Key, err)
	}
	if err := json.Unmarshal(t.OutputSchema, &out); err != nil {
		return nil, fmt.Errorf("discovery: tool %s: output schema: %w", t.Key, err)
	}
	inName, outName := t.OperationID+"_input", t.OperationID+"_output"
	schemas[inName], schemas[outName] = in, out
	var example, outExample any
	_ = json.Unmarshal(t.ExampleInput, &example)
	_ = json.Unmarshal(t.OutputExample, &outExample)

	tags := append([]string{routedoc.TagPaid}, t.Tags...)
	op := map[string]any{
		"operationId": t.OperationID,
		"summary":     t.Name + fmt.Sprintf(" (%s USDC per call)", t.PriceFixed6()),
		"description": t.Description,
		"tags":        tags,
		"x-payment-info": map[string]any{
			"price":       t.PriceFixed6(),
			"priceUsd":    json.Number(t.Price),
			"currency":    "USDC",
			"network":     tr.Terms.Network,
			"protocol":    "x402",
			"x402Version": x402.Version,
			"scheme":      tr.Terms.Scheme,
			"asset":       tr.Terms.Asset,
			"payTo":       tr.Terms.PayTo,
			"amount":      tr.Terms.Amount,
			"facilitator": s.facil,
		},
		"x-transports":  tr,
		"x-catalog-key": t.Key,
		"x-terminal":    t.Terminal,
	}
	params := []map[string]any{{
		"name": x402.HeaderPaymentSignature, "in": "header", "required": false,
		"description": "The paid retry: base64 of the JSON x402 v2 PaymentPayload (exact scheme, EIP-3009 authorization). Absent on the first request, which is answered 402.",
		"schema":      routedoc.String(""),
	}}
	if t.InputLocation == tools.InputQuery {
		props, _ := in["properties"].(map[string]any)
		required := map[string]bool{}
		if rl, ok := in["required"].([]any); ok {
			for _, r := range rl {
				if n, ok := r.(string); ok {
					required[n] = true
				}
			}
		}
		exMap, _ := example.(map[string]any)
		for _, name := range t.Fields {
			ps, _ := props[name].(map[string]any)
			if ps == nil {
				ps = map[string]any{}
			}
			p := map[string]any{"name": name, "in": "query", "required": required[name], "schema": ps}
			if d, ok := ps["description"].(string); ok {
				p["description"] = d
			}
			if v, ok := exMap[name]; ok {
				p["example"] = v
			}
			params = append(params, p)
		}
	} else {
		op["requestBody"] = map[string]any{
			"required": true,
			"content": map[string]any{jsonContentType: map[string]any{
				"schema":  routedoc.Ref(inName),
				"example": example,
			}},
		}
	}
	op["parameters"] = params
	responses := map[string]any{
		"200": map[string]any{
			"description": "The tool's answer (after payment).",
			"headers":     map[string]any{x402.HeaderPaymentResponse: map[string]any{"$ref": "#/components/headers/PaymentResponse"}},
			"content":     map[string]any{jsonContentType: map[string]any{"schema": routedoc.Ref(outName), "example": outExample}},
		},
		"400": map[string]any{"$ref": "#/components/responses/InvalidInput"},
		"402": map[string]any{"$ref": "#/components/responses/PaymentRequired"},
		"413": map[string]any{"$ref": "#/components/responses/TooLarge"},
		"500": map[string]any{"$ref": "#/components/responses/Internal"},
		"503": map[string]any{"$ref": "#/components/responses/Unavailable"},
		"504": map[string]any{"$ref": "#/components/responses/Timeout"},
	}
	op["responses"] = responses
	return op, nil
}

// oasFreeOperation describes a free route.
func (s *Set) oasFreeOperation(d routedoc.Route) map[string]any {
	op := map[string]any{
		"operationId": d.OperationID,
		"summary":     d.Summary,
		"tags":        []string{d.Tag},
		"x-free":      true,
	}
	if d.Description != "" {
		op["description"] = d.Description
	}
	var params []map[string]any
	for _, p := range d.Params {
		pm := map[string]any{"name": p.Name, "in": p.In, "required": p.Required || p.In == "path", "schema": p.Schema}
		if p.Schema == nil {
			pm["schema"] = routedoc.String("")
		}
		if p.Description != "" {
			pm["description"] = p.Description
		}
		params = append(params, pm)
	}
	if d.Cached {
		params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "required": false,
			"description": "An ETag received earlier: 304 when the document is unchanged.", "schema": routedoc.String("")})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if d.Body != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{jsonContentType: map[string]any{"schema": d.Body}}}
	}
	ctype := d.ResponseType
	if ctype == "" {
		ctype = jsonContentType
	}
	schema := d.Response
	if schema == nil {
		schema = map[string]any{}
	}
	ok := map[string]any{"description": "Success.", "content": map[string]any{ctype: map[string]any{"schema": schema}}}
	if d.Cached {
		ok["headers"] = map[string]any{"ETag": map[string]any{"$ref": "#/components/headers/ETag"}}
	}
	responses := map[string]any{
		"200": ok,
		"429": map[string]any{"$ref": "#/components/responses/RateLimited"},
	}
	if d.Cached {
		responses["304"] = map[string]any{"description": "Not modified (If-None-Match matched the ETag)."}
	}
	if len(d.Params) > 0 || d.Body != nil {
		responses["400"] = map[string]any{"$ref": "#/components/responses/InvalidInput"}
	}
	if d.Body != nil {
		responses["413"] = map[string]any{"$ref": "#/components/responses/TooLarge"}
	}
	for status, desc := range d.Responses {
		r := map[string]any{"description": desc}
		if status != http.StatusAccepted && status != http.StatusNoContent {
			r["content"] = map[string]any{ctype: map[string]any{"schema": schema}}
		}
		responses[fmt.Sprint(status)] = r
	}
	op["responses"] = responses
	return op
}

// oasResponses are the shared error answers.
func (s *Set) oasResponses() map[string]any {
	problem := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{wire.ProblemContentType: map[string]any{"schema": routedoc.Ref("Problem")}}}
	}
	rl := problem("Too many requests from this client address (free routes only).")
	rl["headers"] = map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/RetryAfter"}}
	return map[string]any{
		"InvalidInput": problem("Invalid input (no payment is asked): errors lists each broken rule as {field, rule, message}."),
		"TooLarge":     problem(fmt.Sprintf("The request body is over the limit of %d bytes.", s.cfg.BodyLimit)),
		"RateLimited":  rl,
		"Unavailable":  problem("The upstream market-data terminal is unavailable; the availability check runs before any 402, so nothing is paid."),
		"Timeout":      problem("The tool ran out of time; nothing is settled."),
		"Internal":     problem("Internal error; nothing is settled."),
		"PaymentRequired": map[string]any{
			"description": "Payment required: the PAYMENT-REQUIRED header carries the x402 v2 requirements (also in the body, with the x402 v1 fields). Also answered when a payment is refused (the reason is in error).",
			"headers":     map[string]any{x402.HeaderPaymentRequired: map[string]any{"$ref": "#/components/headers/PaymentRequired"}},
			"content":     map[string]any{jsonContentType: map[string]any{"schema": routedoc.Ref("PaymentRequiredBody")}},
		},
	}
}

// oasComponentSchemas are the shared schemas (the tools' are added by
// oasPaidOperation).
func (s *Set) oasComponentSchemas() map[string]any {
	fieldError := routedoc.Object(map[string]any{
		"field":   routedoc.String("Field path in the input's JSON notation (bars[3].high); empty for the whole body."),
		"rule":    routedoc.String("The broken rule (required, gt, oneof, unknown_field, json, ...)."),
		"message": routedoc.String("Names the field and the rule."),
	}, "field", "rule", "message")
	item := routedoc.Object(map[string]any{
		"key":           routedoc.String("Catalog key (risk-levels, xau-quote)."),
		"name":          routedoc.String(""),
		"method":        map[string]any{"type": "string", "enum": []string{"GET", "POST"}},
		"path":          routedoc.String(""),
		"url":           routedoc.String("Absolute URL."),
		"priceUsd":      routedoc.Number("Price per call in USD (USDC)."),
		"network":       routedoc.String("CAIP-2 payment network."),
		"description":   routedoc.String(""),
		"tags":          routedoc.Array(routedoc.String(""), ""),
		"inputSchema":   routedoc.AnyObject("JSON Schema 2020-12 of the input."),
		"exampleInput":  map[string]any{"description": "A realistic input."},
		"outputExample": map[string]any{"description": "The tool's output for exampleInput."},
		"operationId":   routedoc.String(""),
		"price":         routedoc.String("Price with six decimals (0.005000)."),
		"inputLocation": map[string]any{"type": "string", "enum": []string{"query", "body"}},
		"outputSchema":  routedoc.AnyObject("JSON Schema 2020-12 of the 200 answer."),
		"terminal":      routedoc.Bool("Reads the trading terminal (503 before any 402 when it is down)."),
		"transports":    routedoc.Ref("Transports"),
	}, "transports", "key", "name", "method", "path", "url", "priceUsd", "network", "description", "tags", "inputSchema", "exampleInput", "outputExample")
	link := routedoc.Object(map[string]any{"method": routedoc.String(""), "url": routedoc.String(""), "purpose": routedoc.String("")}, "method", "url", "purpose")
	alt := routedoc.Object(map[string]any{
		"key": routedoc.String(""), "name": routedoc.String(""), "method": routedoc.String(""), "url": routedoc.String(""),
		"priceUsd": routedoc.Number(""), "matchScore": routedoc.Number(""),
	}, "key", "name", "method", "url", "priceUsd", "matchScore")
	counts := routedoc.Array(routedoc.Object(map[string]any{"name": routedoc.String(""), "count": routedoc.Int("")}, "name", "count"), "")
	return map[string]any{
		"Problem": routedoc.Object(map[string]any{
			"type":      routedoc.String("urn:svc:problem:<code>"),
			"title":     routedoc.String(""),
			"status":    routedoc.Int(""),
			"detail":    routedoc.String(""),
			"instance":  routedoc.String("The request path."),
			"code":      routedoc.String("invalid_input, too_large, unavailable, timeout, internal, rate_limited, not_found, method_not_allowed, ..."),
			"errors":    routedoc.Array(routedoc.Ref("FieldError"), "Each broken input rule."),
			"requestId": routedoc.String("Repeats the X-Request-Id header."),
		}, "type", "title", "status"),
		"FieldError": fieldError,
		"PaymentTerms": routedoc.Object(map[string]any{
			"protocol": routedoc.String("x402"), "x402Version": routedoc.Int(""), "scheme": routedoc.String("exact"), "network": routedoc.String("CAIP-2."),
			"asset": routedoc.String("USDC token address."), "currency": routedoc.String(""), "priceUsd": routedoc.Number(""),
			"price": routedoc.String("Six decimals."), "amount": routedoc.String("USDC atomic units."), "payTo": routedoc.String(""), "maxTimeoutSeconds": routedoc.Int(""),
		}, "protocol", "x402Version", "scheme", "network", "asset", "currency", "priceUsd", "price", "amount", "payTo", "maxTimeoutSeconds"),
		"Transports": map[string]any{
			"type":        "object",
			"description": "The three ways to buy the tool, all on terms.",
			"required":    []string{"terms", "http", "mcp", "a2a"},
			"properties": map[string]any{
				"terms": routedoc.Ref("PaymentTerms"),
				"http": routedoc.Object(map[string]any{
					"method": routedoc.String(""), "path": routedoc.String(""), "url": routedoc.String(""),
					"inputLocation":         map[string]any{"type": "string", "enum": []string{"query", "body"}},
					"paymentRequiredHeader": routedoc.String(""), "paymentHeader": routedoc.String(""), "settlementHeader": routedoc.String(""), "how": routedoc.String(""),
				}, "method", "path", "url", "paymentHeader", "how"),
				"mcp": routedoc.Object(map[string]any{
					"url": routedoc.String("The MCP endpoint."), "method": routedoc.String(MCPCallMethod), "tool": routedoc.String("MCP tool name: the operationId."),
					"paymentMeta": routedoc.String("params._meta key of the PaymentPayload."), "settlementMeta": routedoc.String("result._meta key of the settlement."),
					"extension": routedoc.String("Capability of the extension binding."), "how": routedoc.String(""),
				}, "url", "method", "tool", "paymentMeta", "how"),
				"a2a": routedoc.Object(map[string]any{
					"url": routedoc.String("The A2A endpoint."), "card": routedoc.String("The agent card."), "skill": routedoc.String("Agent card skill id: the catalog key."),
					"extension": routedoc.String("URI of the A2A x402 extension."), "dataPart": routedoc.AnyObject("The data part asking for the tool: {tool, input}."),
					"paymentRequiredMeta": routedoc.String(""), "paymentMeta": routedoc.String(""), "receiptsMeta": routedoc.String(""), "how": routedoc.String(""),
				}, "url", "skill", "extension", "dataPart", "how"),
			},
		},
		"CatalogItem": item,
		"Link":        link,
		"Alternative": alt,
		"PaymentRequiredBody": map[string]any{
			"type":        "object",
			"description": "The x402 v1 offer, read by x402Version 1 clients. x402 v2 clients read the PAYMENT-REQUIRED header (base64 JSON PaymentRequired, x402Version 2).",
			"properties": map[string]any{
				"x402Version": routedoc.Int("1"),
				"error":       routedoc.String(""),
				"accepts":     routedoc.Array(routedoc.AnyObject("v1 PaymentRequirements: scheme, network (base), maxAmountRequired, resource, description, mimeType, outputSchema, payTo, maxTimeoutSeconds, asset, extra."), ""),
			},
		},
		"FindResult": routedoc.Object(map[string]any{
			"ok":    routedoc.Bool(""),
			"query": routedoc.String(""),
			"matches": routedoc.Array(map[string]any{"allOf": []any{routedoc.Ref("CatalogItem"), routedoc.Object(map[string]any{
				"matchScore":    routedoc.Number("Relevance in (0, 1), comparable across queries."),
				"matchedTokens": routedoc.Array(routedoc.String(""), "Query tokens that contributed."),
			}, "matchScore", "matchedTokens")}}, "Best first."),
		}, "ok", "query", "matches"),
		"CatalogPage": routedoc.Object(map[string]any{
			"ok": routedoc.Bool(""), "total": routedoc.Int("Tools after filtering."), "offset": routedoc.Int(""), "limit": routedoc.Int(""),
			"items": routedoc.Array(routedoc.Ref("CatalogItem"), ""),
		}, "ok", "total", "offset", "limit", "items"),
		"RoutePlan": routedoc.Object(map[string]any{
			"ok": routedoc.Bool(""), "query": routedoc.String(""), "matched": routedoc.Bool("False when no tool matches."), "message": routedoc.String(""),
			"tool": routedoc.String("Catalog key."), "operationId": routedoc.String(""), "name": routedoc.String(""),
			"matchScore": routedoc.Number(""), "matchedTokens": routedoc.Array(routedoc.String(""), ""),
			"method": routedoc.String(""), "url": routedoc.String("Full URL; for GET tools with the input as query string."), "path": routedoc.String(""),
			"headers": routedoc.Map(routedoc.String(""), "Headers to send."),
			"body":    map[string]any{"description": "JSON body of a POST tool."},
			"price": routedoc.Object(map[string]any{
				"usd": routedoc.Number(""), "fixed6": routedoc.String("Six decimals."), "atomic": routedoc.String("USDC atomic units."), "currency": routedoc.String(""),
			}, "usd", "fixed6", "atomic", "currency"),
			"network": routedoc.String(""), "asset": routedoc.String(""), "payTo": routedoc.String(""), "scheme": routedoc.String(""), "x402Version": routedoc.Int(""),
			"inputSource": map[string]any{"type": "string", "enum": []string{"caller", "example"}},
			"inputValid":  routedoc.Bool("Whether the input passes the tool's own validation."),
			"inputErrors": routedoc.Array(routedoc.Ref("FieldError"), ""),
			"inputSchema": routedoc.AnyObject(""),
			"steps": routedoc.Array(routedoc.Object(map[string]any{
				"step": routedoc.Int(""), "action": routedoc.String(""), "header": routedoc.String(""), "description": routedoc.String(""),
			}, "step", "action", "description"), "The x402 exchange."),
			"curl": routedoc.String("First request (answered 402)."), "curlPaid": routedoc.String("The paid retry."), "devMode": routedoc.Bool(""),
			"transports":   routedoc.Ref("Transports"),
			"alternatives": routedoc.Array(routedoc.Ref("Alternative"), ""),
			"nextRoutes":   routedoc.Array(routedoc.Ref("Link"), ""),
		}, "ok", "query", "matched", "message", "inputValid", "inputErrors", "alternatives", "nextRoutes"),
		"TryResult": routedoc.Object(map[string]any{
			"ok": routedoc.Bool(""), "mode": map[string]any{"type": "string", "enum": []string{"tour", "match", "no_match"}},
			"query": routedoc.String(""), "message": routedoc.String(""),
			"service": routedoc.Object(map[string]any{
				"name": routedoc.String(""), "description": routedoc.String(""), "version": routedoc.String(""), "tools": routedoc.Int(""),
				"network": routedoc.String(""), "currency": routedoc.String(""), "protocol": routedoc.String(""), "devMode": routedoc.Bool(""),
			}, "name", "version", "tools", "network"),
			"match": routedoc.Object(map[string]any{
				"key": routedoc.String(""), "name": routedoc.String(""), "method": routedoc.String(""), "path": routedoc.String(""), "url": routedoc.String(""),
				"priceUsd": routedoc.Number(""), "price": routedoc.String(""), "network": routedoc.String(""), "summary": routedoc.String(""),
				"tags": routedoc.Array(routedoc.String(""), ""), "matchScore": routedoc.Number(""), "matchedTokens": routedoc.Array(routedoc.String(""), ""),
				"exampleInput": map[string]any{}, "outputExample": map[string]any{},
			}, "key", "method", "url", "priceUsd", "exampleInput", "outputExample"),
			"alternatives": routedoc.Array(routedoc.Ref("Alternative"), ""),
			"groups": routedoc.Array(routedoc.Object(map[string]any{
				"group": routedoc.String(""), "title": routedoc.String(""),
				"tools": routedoc.Array(routedoc.Object(map[string]any{
					"key": routedoc.String(""), "name": routedoc.String(""), "method": routedoc.String(""), "url": routedoc.String(""), "priceUsd": routedoc.Number(""),
				}, "key", "method", "url", "priceUsd"), ""),
			}, "group", "tools"), ""),
			"freeRoutes": routedoc.Array(routedoc.Ref("Link"), ""),
			"nextRoutes": routedoc.Array(routedoc.Ref("Link"), ""),
		}, "ok", "mode", "message", "service", "nextRoutes"),
		"StatsSnapshot": routedoc.Object(map[string]any{
			"ok": routedoc.Bool(""), "surface": routedoc.String(""), "purpose": routedoc.String(""), "since": routedoc.String("RFC 3339."),
			"uptimeSeconds": routedoc.Int(""), "requests": routedoc.Int(""), "requestsPerMinute": routedoc.Int("Sliding 60 s window."),
			"paymentRequired": routedoc.Int("402s issued."), "settled": routedoc.Int("Paid calls settled."), "discoveryHits": routedoc.Int(""),
			"status": routedoc.Map(routedoc.Int(""), "By status class."), "clients": routedoc.Map(routedoc.Int(""), "By client kind: mcp, a2a, x402, browser, crawler, other."),
			"routes": counts, "sources": counts,
			"limits":  routedoc.AnyObject(""),
			"privacy": routedoc.String(""),
		}, "ok", "surface", "requests", "requestsPerMinute", "paymentRequired", "settled", "routes", "sources", "clients", "privacy"),
		"X402Manifest": routedoc.Object(map[string]any{
			"x402Version": routedoc.Int(""), "manifestVersion": routedoc.String(""), "version": routedoc.String(""), "name": routedoc.String(""), "purpose": routedoc.String(""),
			"rails":         routedoc.Array(routedoc.AnyObject(""), "Payment rails: network, asset, payTo, facilitator."),
			"resources":     routedoc.Array(routedoc.AnyObject(""), "Paid resources."),
			"freeResources": routedoc.Array(routedoc.AnyObject(""), "Free resources."),
			"transports":    routedoc.AnyObject("How HTTP, MCP and A2A take a payment."),
			"links":         routedoc.Map(routedoc.String(""), ""),
		}, "x402Version", "rails", "transports", "resources", "freeResources", "links"),
		"AgentCard": routedoc.Object(map[string]any{
			"name": routedoc.String(""), "description": routedoc.String(""), "version": routedoc.String(""),
			"supportedInterfaces": routedoc.Array(routedoc.AnyObject(""), ""), "url": routedoc.String(""), "preferredTransport": routedoc.String(""),
			"protocolVersion": routedoc.String(""), "capabilities": routedoc.AnyObject(""),
			"defaultInputModes": routedoc.Array(routedoc.String(""), ""), "defaultOutputModes": routedoc.Array(routedoc.String(""), ""),
			"skills": routedoc.Array(routedoc.AnyObject(""), ""),
		}, "name", "description", "version", "supportedInterfaces", "url", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"),
	}
}

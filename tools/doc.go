// Package tools is the catalog of svc's paid tools: the single source of
// truth from which every surface (HTTP routes, the x402 payment terms, the
// catalog, OpenAPI, MCP, A2A, the finder and router) presents them.
//
// # Descriptors
//
// Each tool has one descriptor in descriptors.go: its catalog key
// ("risk-levels"), operation id ("risk_levels"), human name, HTTP method
// and path, price in USD, tags (categories), a description for agents
// (formulas, limits, what it never does), where its input travels (query
// string or JSON body), whether it reads the trading terminal, field
// descriptions and a realistic example input. The input rules are not in
// the descriptor: they are the validate tags of the root package's request
// type, which the tool enforces and the schemas publish. Adding a tool is one file in the root package
// plus one descriptor; nothing else changes anywhere.
//
// From a descriptor and the tool's Go request and response types the
// package derives, once per process:
//
//   - the JSON Schemas (2020-12) of the input and the output, inferred with
//     github.com/google/jsonschema-go and enriched from the validate tags of
//     the request type (required, enum, minimum, exclusiveMinimum,
//     maxLength, minItems, ...), so that the schema shows what validation
//     enforces; rules across fields are described in words. svc.Number is {"type": "number"}; a string
//     holding a decimal is accepted too, as the schema's description says.
//     Input objects allow no additional members; output objects do (a
//     response may carry fields beyond those listed). Rules no schema
//     keyword can express (a stop that must stay above zero, OHLC
//     consistency, JWT structure) are stated in the description. Decimal
//     strings aside, the schema never rejects an input the tool accepts.
//   - the output example, by running the tool on the example input with a
//     fixed clock (2025-06-04 13:45 UTC) and, for the gold tools, a
//     simulated terminal with a fixed seed, so examples never drift and
//     say "source": "simulated".
//
// # The adapter
//
// Tool.Decode reads a call from an *http.Request (the query string of a GET
// tool, the JSON body of a POST tool); Tool.DecodeJSON reads it from a JSON
// object (the input of /api/route, MCP tools/call arguments, A2A data).
// Both validate completely and return a *Call without running anything
// that costs: a server validates before issuing any 402, then calls
// Call.Run with the operator's Env after the payment is verified.
//
// Decoding is strict: unknown members are invalid (rule "unknown_field",
// listing the allowed ones), as are members given twice, missing required
// members, values of the wrong JSON type (the rule names the expected
// type: "integer", "number", "string", ...; null for a required member
// too, while null for an optional one counts as not given, as the schemas
// say with "type": ["null", ...]), malformed JSON (rule "json",
// with line, column and byte offset) and data after the object; a body over
// the catalog's limit is KindTooLarge. Query strings are as strict:
// an unknown parameter is invalid (rule "unknown_field") except ref and
// src, which carry attribution, a tool's parameter given twice is invalid
// (rule "repeated"), an empty value counts as absent,
// values are typed ("count=abc": field count, rule "integer"). Any
// Content-Type is read as JSON, since curl -d sends a form type. One pass
// over the tokens of github.com/go-json-experiment/json's jsontext checks
// a document and fills the request; malformed JSON is described in
// encoding/json's words.
//
// Validation then applies the tool's own rules, so messages and rules are
// exactly the root package's. The root package has no separate validator
// per tool, so:
//
//   - the pure tools (risk_levels, strategy_grade, tick_pnl, ohlcv_state,
//     csv_profile, json_shape, evm_address_syntax) are validated by running
//     them, which is cheap; their output depends on the input alone, so
//     Call.Run hands out that output instead of computing it twice;
//   - session_state and jwt_decode are validated by a dry run too, and run
//     again by Call.Run with the Env's clock;
//   - regex_test is validated by its Validate method (sizes, flags, the
//     pattern's syntax): the potentially slow matching runs only in
//     Call.Run, under the Env's time limit;
//   - the gold tools are run against a probe terminal that answers nothing:
//     they check their request before touching a terminal, so reaching the
//     probe means the request is valid, and no real terminal is called
//     before payment. Their availability preflight is the server's
//     (Tool.Terminal marks them).
//
// Every error is an *svc.Error: KindInvalid (HTTP 400), KindTooLarge (413),
// KindUnavailable (503), KindTimeout (504) or KindInternal (500).
//
// # The catalog
//
// New builds a Catalog with the operator's options: price overrides (exact
// decimals, not finer than one USDC atomic unit), the public base URL, the
// payment network and the body limit. Catalog.All lists the tools in the
// order of the descriptor table (descriptors.go); ByKey, ByOperationID
// and ByPath find one; Tool.Item is the JSON view of /api/catalog's
// items (key, name, method, path, url, priceUsd as a number, network,
// description, tags, inputSchema, exampleInput, outputExample) plus
// operationId, price with six decimals, inputLocation, outputSchema and
// terminal. Tool.PriceAtomic is the price in USDC atomic units for the
// x402 layer (0.0034 → 3400).
package tools

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// Tool names, stable identifiers of the MCP surface.
const (
	ToolFind     = "find_tool"
	ToolRoute    = "route_tool"
	ToolCatalog  = "catalog"
	ToolToolInfo = "tool_info"
)

// FindToolInput are the arguments of find_tool.
type FindToolInput struct {
	// Query is the need in plain language (1–500 characters).
	Query string `json:"query" jsonschema:"what you want to do, in plain language (for example: stop loss and take profit for a long gold trade)"`
	// Limit is the number of matches (1–20; absent means 5).
	Limit int `json:"limit,omitempty" jsonschema:"how many ranked matches to return"`
}

// RouteToolInput are the arguments of route_tool.
type RouteToolInput struct {
	// Query is the need in plain language (1–500 characters).
	Query string `json:"query" jsonschema:"what you want to do, in plain language"`
	// Input is the request you intend to send to the paid tool, checked
	// with the tool's own rules; absent means the tool's example input.
	Input json.RawMessage `json:"input,omitempty" jsonschema:"the input you intend to send to the chosen paid tool (its inputSchema); it is checked with the tool's own rules so you learn about a mistake before paying; absent means the plan uses the tool's example input"`
}

// CatalogInput are the arguments of catalog.
type CatalogInput struct {
	// Q filters by free text; empty means no filter.
	Q string `json:"q,omitempty" jsonschema:"optional free-text filter on key, name, description and tags"`
	// Category filters by tag ("gold", "risk"); empty means none.
	Category string `json:"category,omitempty" jsonschema:"optional tag to filter on (for example gold, trading, risk, data, utility)"`
	// Offset is the index of the first item (≥ 0).
	Offset int `json:"offset,omitempty" jsonschema:"index of the first item of the page"`
	// Limit is the page size (1–100; absent means 50).
	Limit int `json:"limit,omitempty" jsonschema:"page size"`
}

// ToolInfoInput are the arguments of tool_info.
type ToolInfoInput struct {
	// PathOrKey names a tool by key ("risk-levels"), operation id
	// ("risk_levels") or path ("/api/risk-levels").
	PathOrKey string `json:"pathOrKey" jsonschema:"the tool's catalog key (risk-levels), operation id (risk_levels) or path (/api/risk-levels)"`
}

// annotations are the hints of every tool here: they read the catalog
// held in memory, change nothing and reach nothing outside.
func annotations(title string) *sdk.ToolAnnotations {
	no := false
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no, DestructiveHint: &no}
}

// newServer builds the SDK server with the four tools and, when sell is
// set, the paid tools.
func newServer(s discovery.Surfaces, version, instructions string, ttl time.Duration, log *slog.Logger, sell *paidSeller) (*sdk.Server, error) {
	ttlMs := int(ttl / time.Millisecond)
	// Tools only: no logging, prompts, resources or completions, and no
	// list-change notifications (the list is fixed at start-up). A seller
	// also declares the x402 extension binding.
	caps := &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}
	if sell != nil {
		caps.AddExtension(x402mcp.ExtensionPayment, nil)
	}
	srv := sdk.NewServer(&sdk.Implementation{
		Name:    ServerName,
		Title:   serverTitle,
		Version: version,
	}, &sdk.ServerOptions{
		Instructions: instructions,
		Capabilities: caps,
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) {
			c.TTLMs, c.CacheScope = ttlMs, "public"
		},
		Logger: log,
	})

	sdk.AddTool(srv, &sdk.Tool{
		Name:  ToolFind,
		Title: "Find a paid tool",
		Description: "Ranks svc's paid HTTP tools (for example trading risk levels, gold quotes and bars, " +
			"CSV, JSON, JWT and regex utilities) for a need described in plain language. " +
			"Returns the best matches with key, URL, price in USDC, description, input schema, example input and output, " +
			"and a match score. Free; it does not call or pay for any tool.",
		Annotations:  annotations("Find a paid tool"),
		InputSchema:  findInputSchema(),
		OutputSchema: outputSchema[discovery.FindResult](),
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in FindToolInput) (*sdk.CallToolResult, discovery.FindResult, error) {
		out, err := s.Find(ctx, in.Query, in.Limit)
		return nil, out, toolError(ctx, log, ToolFind, err, map[string]string{"q": "query"})
	})

	sdk.AddTool(srv, &sdk.Tool{
		Name:  ToolRoute,
		Title: "Plan a paid call",
		Description: "Picks the paid tool that best matches a need and returns a machine-ready call plan: " +
			"HTTP method, full URL, headers and JSON body, price, payment terms (USDC network, asset, payTo), " +
			"the x402 steps (402, sign, retry with PAYMENT-SIGNATURE), curl lines and alternatives. " +
			"Pass input to have it validated with the tool's own rules (inputValid, inputErrors) before paying. " +
			"Free; it does not call or pay for the tool.",
		Annotations:  annotations("Plan a paid call"),
		InputSchema:  routeInputSchema(),
		OutputSchema: outputSchema[discovery.RoutePlan](),
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in RouteToolInput) (*sdk.CallToolResult, discovery.RoutePlan, error) {
		out, err := s.Route(ctx, in.Query, in.Input)
		return nil, out, toolError(ctx, log, ToolRoute, err, nil)
	})

	sdk.AddTool(srv, &sdk.Tool{
		Name:  ToolCatalog,
		Title: "Browse the catalog",
		Description: "Lists svc's paid HTTP tools a page at a time, optionally filtered by free text (q) or a tag (category): " +
			"key, name, method, URL, price in USDC, network, description, tags, input and output schemas, example input and output. " +
			"Returns {ok, total, offset, limit, items}. Free.",
		Annotations:  annotations("Browse the catalog"),
		InputSchema:  catalogInputSchema(),
		OutputSchema: outputSchema[discovery.CatalogPage](),
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in CatalogInput) (*sdk.CallToolResult, discovery.CatalogPage, error) {
		out, err := s.Catalog(ctx, in.Q, in.Category, in.Offset, in.Limit)
		return nil, out, toolError(ctx, log, ToolCatalog, err, nil)
	})

	sdk.AddTool(srv, &sdk.Tool{
		Name:  ToolToolInfo,
		Title: "Describe a paid tool",
		Description: "Returns the catalog entry of one paid tool named by key (risk-levels), operation id (risk_levels) " +
			"or path (/api/risk-levels): method, URL, price, input location, input and output JSON schemas, " +
			"example input and output, and how to buy it over HTTP, MCP and A2A (transports). Free.",
		Annotations:  annotations("Describe a paid tool"),
		InputSchema:  toolInfoInputSchema(),
		OutputSchema: outputSchema[discovery.CatalogItem](),
	}, func(ctx context.Context, _ *sdk.CallToolRequest, in ToolInfoInput) (*sdk.CallToolResult, discovery.CatalogItem, error) {
		out, err := s.ToolInfo(ctx, in.PathOrKey)
		return nil, out, toolError(ctx, log, ToolToolInfo, err, nil)
	})
	if sell != nil {
		if err := sell.register(srv, log); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// toolError turns an error of the discovery core into the error of a tool
// result (isError true). An *svc.Error is shown as is (its message and
// field errors name the field and the rule and never leak internals), with
// the core's field names renamed to the tool's argument names (rename maps
// core → argument); anything else is logged and reported without details.
func toolError(ctx context.Context, log *slog.Logger, tool string, err error, rename map[string]string) error {
	if err == nil {
		return nil
	}
	var e *svc.Error
	switch {
	case errors.As(err, &e):
		if e.Kind == svc.KindInternal {
			log.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
		}
		renamed := *e
		renamed.Fields = make([]svc.FieldError, len(e.Fields))
		for i, f := range e.Fields {
			if arg, ok := rename[f.Field]; ok {
				if rest, ok := strings.CutPrefix(f.Message, f.Field); ok {
					f.Message = arg + rest
				}
				f.Field = arg
			}
			renamed.Fields[i] = f
		}
		return errors.New(renamed.Error())
	case ctx.Err() != nil:
		return fmt.Errorf("%s: request cancelled: %w", tool, ctx.Err())
	default:
		log.ErrorContext(ctx, "mcp tool failed", "tool", tool, "err", err)
		return errors.New(tool + " failed on the server (internal error); try again later")
	}
}

// schemaTypes map the types whose JSON form differs from their Go kind:
// raw JSON is any value, json.Number a number. The any-value schema has a
// description because an empty one is written as the boolean schema true,
// which some clients (@modelcontextprotocol/sdk 1.x) refuse in a property.
func schemaTypes() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
		reflect.TypeFor[json.Number]():     {Type: "number"},
	}
}

// outputSchema is the JSON Schema of a result type. The types are ours, so
// a failure is a programming error caught by every test.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes()})
	if err != nil {
		panic(fmt.Sprintf("mcp: output schema of %s: %v", reflect.TypeFor[T](), err))
	}
	return s
}

// inputSchema is the JSON Schema of an argument type, adjusted by edit.
func inputSchema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s := outputSchema[T]()
	edit(s.Properties)
	return s
}

func intPtr(n int) *int           { return &n }
func floatPtr(f float64) *float64 { return &f }

func findInputSchema() *jsonschema.Schema {
	return inputSchema[FindToolInput](func(p map[string]*jsonschema.Schema) {
		p["query"].MinLength, p["query"].MaxLength = intPtr(1), intPtr(discovery.MaxQueryLen)
		p["limit"].Minimum, p["limit"].Maximum = floatPtr(1), floatPtr(discovery.MaxFindLimit)
		p["limit"].Default = json.RawMessage(fmt.Sprint(discovery.DefaultFindLimit))
	})
}

func routeInputSchema() *jsonschema.Schema {
	return inputSchema[RouteToolInput](func(p map[string]*jsonschema.Schema) {
		p["query"].MinLength, p["query"].MaxLength = intPtr(1), intPtr(discovery.MaxQueryLen)
		p["input"].Type = "object"
	})
}

func catalogInputSchema() *jsonschema.Schema {
	return inputSchema[CatalogInput](func(p map[string]*jsonschema.Schema) {
		p["q"].MaxLength = intPtr(discovery.MaxQueryLen)
		p["category"].MaxLength = intPtr(discovery.MaxCategoryLen)
		p["offset"].Minimum = floatPtr(0)
		p["offset"].Default = json.RawMessage("0")
		p["limit"].Minimum, p["limit"].Maximum = floatPtr(1), floatPtr(discovery.MaxCatalogLimit)
		p["limit"].Default = json.RawMessage(fmt.Sprint(discovery.DefaultCatalogLimit))
	})
}

func toolInfoInputSchema() *jsonschema.Schema {
	return inputSchema[ToolInfoInput](func(p map[string]*jsonschema.Schema) {
		p["pathOrKey"].MinLength, p["pathOrKey"].MaxLength = intPtr(1), intPtr(200)
	})
}

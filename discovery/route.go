package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/finder"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// RoutePlan is the answer of POST /api/route (and of the route_tool MCP
// tool and the A2A router): a machine-ready plan for calling the paid tool
// that best matches a need, with everything a client needs to pay for it.
//
// When no tool matches, Matched is false, Message says so and the plan
// fields are empty; Alternatives and NextRoutes still point the way.
type RoutePlan struct {
	OK      bool   `json:"ok"`
	Query   string `json:"query"`
	Matched bool   `json:"matched"`
	// Message is a one-line human summary of the plan.
	Message string `json:"message"`

	// Tool is the catalog key of the chosen tool ("risk-levels").
	Tool          string   `json:"tool,omitempty"`
	OperationID   string   `json:"operationId,omitempty"`
	Name          string   `json:"name,omitempty"`
	MatchScore    float64  `json:"matchScore,omitempty"`
	MatchedTokens []string `json:"matchedTokens,omitempty"`

	// Method and URL are the request to send; for a GET tool the URL
	// carries the input as its query string.
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
	Path   string `json:"path,omitempty"`
	// Headers are the request headers to send (Content-Type for a body).
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the JSON body of a POST tool (absent for GET tools).
	Body json.RawMessage `json:"body,omitempty"`

	// Price is what one call costs.
	Price *RoutePrice `json:"price,omitempty"`
	// Network, Asset and PayTo are the payment terms (also in the 402).
	Network     string `json:"network,omitempty"`
	Asset       string `json:"asset,omitempty"`
	PayTo       string `json:"payTo,omitempty"`
	Scheme      string `json:"scheme,omitempty"`
	X402Version int    `json:"x402Version,omitempty"`

	// InputSource is "caller" when the request carried an input, and
	// "example" when the plan was built from the tool's example input.
	InputSource string `json:"inputSource,omitempty"`
	// InputValid says whether the input passes the tool's own validation;
	// InputErrors lists every broken rule. An invalid input is answered
	// 400 before any 402, so nobody pays for it.
	InputValid  bool             `json:"inputValid"`
	InputErrors []svc.FieldError `json:"inputErrors"`
	// InputSchema is the JSON Schema of the tool's input.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`

	// Steps are the x402 exchange, in order.
	Steps []RouteStep `json:"steps,omitempty"`
	// Curl is the first request as a curl command line (it receives the
	// 402); CurlPaid is the retry with the PAYMENT-SIGNATURE header. A
	// body longer than documents.PlanInlineBody is not repeated in them: they read
	// it from the file body.json (Body saved as is).
	Curl     string `json:"curl,omitempty"`
	CurlPaid string `json:"curlPaid,omitempty"`
	// DevMode is true when the server settles nothing on chain.
	DevMode bool `json:"devMode,omitempty"`

	// Transports are the three ways to buy the chosen tool on the same
	// terms: this HTTP request, or the same call over MCP (tools/call) or
	// A2A (the x402 extension); the A2A data part carries the plan's input.
	Transports *documents.Transports `json:"transports,omitempty"`

	// Alternatives are the next best matches, best first.
	Alternatives []RouteAlternative `json:"alternatives"`
	// NextRoutes are free routes worth calling next.
	NextRoutes []documents.Link `json:"nextRoutes"`
}

// RoutePrice is the price of one call in three forms.
type RoutePrice struct {
	// USD is the price in US dollars as a JSON number (0.005).
	USD json.Number `json:"usd"`
	// Fixed6 is the price with six decimals ("0.005000").
	Fixed6 string `json:"fixed6"`
	// Atomic is the amount in USDC atomic units (6 decimals): "5000".
	Atomic   string `json:"atomic"`
	Currency string `json:"currency"`
}

// RouteStep is one step of the x402 exchange.
type RouteStep struct {
	Step   int    `json:"step"`
	Action string `json:"action"`
	// Header names the HTTP header the step reads or writes, if any.
	Header      string `json:"header,omitempty"`
	Description string `json:"description"`
}

// RouteAlternative is a runner-up match in short form.
type RouteAlternative struct {
	Key        string      `json:"key"`
	Name       string      `json:"name"`
	Method     string      `json:"method"`
	URL        string      `json:"url"`
	PriceUSD   json.Number `json:"priceUsd"`
	MatchScore float64     `json:"matchScore"`
}

// Route returns a machine-ready call plan for the paid tool that best
// matches query (1–500 characters). A query naming a tool exactly (its key,
// operation id, path or URL) selects it; otherwise the finder ranks the
// tools and the best match is planned, the next ones (up to
// MaxAlternatives) listed as alternatives.
//
// input, when given, must be a JSON object: it is validated with the tool's
// own rules (tools.Tool.DecodeJSON), so a caller learns about a bad input
// before paying: InputValid is false and InputErrors names each field and
// rule. Without input the plan is built from the tool's example input
// (InputSource "example"). For a GET tool the input becomes the URL's query
// string; for a POST tool it is the body (canonical JSON when valid).
//
// Errors: a query that is blank or too long, or an input that is not an
// object, is a KindInvalid *svc.Error (HTTP 400). An input breaking the
// tool's rules is not an error: the plan reports it.
func (s *Service) Route(ctx context.Context, query string, input json.RawMessage) (RoutePlan, error) {
	if err := ctx.Err(); err != nil {
		return RoutePlan{}, err
	}
	var errs []svc.FieldError
	if err := discCheckQuery("query", query); err != nil {
		errs = append(errs, discFieldsOf(err)...)
	}
	input = bytes.TrimSpace(input)
	hasInput := len(input) > 0 && !bytes.Equal(input, []byte("null"))
	if hasInput && input[0] != '{' {
		errs = append(errs, svc.FieldError{Field: "input", Rule: "object", Message: "input: must be a JSON object holding the tool's input members"})
	}
	if len(errs) > 0 {
		return RoutePlan{}, &svc.Error{Kind: svc.KindInvalid, Message: "invalid input", Fields: errs}
	}

	chosen, score, tokens, rest := s.resolve(query, 1+MaxAlternatives)
	plan := RoutePlan{
		OK: true, Query: query, InputErrors: []svc.FieldError{},
		Alternatives: s.alternatives(rest, MaxAlternatives),
		NextRoutes: []documents.Link{
			{Method: "GET", URL: s.absURL("/api/catalog"), Purpose: "browse every paid tool with its schemas and examples"},
			{Method: "GET", URL: s.absURL("/api/find") + "?q=" + url.QueryEscape(query), Purpose: "see the ranked matches for this query"},
			{Method: "GET", URL: s.absURL("/openapi.json"), Purpose: "machine-readable interface description (OpenAPI 3.1)"},
		},
	}
	if chosen < 0 {
		plan.Message = "no paid tool matches this query well enough; rephrase it, pick one of the alternatives or browse GET /api/catalog"
		return plan, nil
	}
	t := s.tools[chosen]
	it := s.items[chosen]
	plan.Matched = true
	plan.Tool, plan.OperationID, plan.Name = t.Key, t.OperationID, t.Name
	plan.MatchScore, plan.MatchedTokens = score, discNonNil(tokens)
	plan.Method, plan.Path = t.Method, t.Path
	terms := s.terms(chosen)
	plan.Price = &RoutePrice{USD: it.PriceUSD, Fixed6: t.PriceFixed6(), Atomic: terms.Amount, Currency: "USDC"}
	plan.Network, plan.Asset, plan.PayTo = terms.Network, terms.Asset, terms.PayTo
	plan.Scheme, plan.X402Version = terms.Scheme, s.offers[chosen].X402Version
	plan.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
	plan.DevMode = s.cfg.DevMode

	plan.InputSource = "caller"
	if !hasInput {
		plan.InputSource = "example"
		input = t.ExampleInput
	}
	call, err := t.DecodeJSON(ctx, input)
	if err != nil {
		var se *svc.Error
		if !errors.As(err, &se) || (se.Kind != svc.KindInvalid && se.Kind != svc.KindTooLarge) {
			return RoutePlan{}, fmt.Errorf("discovery: validating the input of %s: %w", t.Key, err)
		}
		plan.InputErrors = append(plan.InputErrors, se.Fields...)
		if len(plan.InputErrors) == 0 {
			plan.InputErrors = append(plan.InputErrors, svc.FieldError{Field: "input", Rule: string(se.Kind), Message: "input: " + se.Message})
		}
	} else {
		plan.InputValid = true
	}

	plan.URL = it.URL
	if t.Method == http.MethodGet {
		var q url.Values
		if call != nil {
			q = call.Query()
		} else if qv, err := tools.QueryOf(input); err == nil {
			q = qv
		}
		if len(q) > 0 {
			plan.URL += "?" + q.Encode()
		}
	} else {
		plan.Headers = map[string]string{"Content-Type": "application/json"}
		if call != nil {
			plan.Body = call.Input()
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, input) == nil {
				plan.Body = buf.Bytes()
			}
		}
	}
	tr := s.buy[chosen].Clone()
	if call != nil && len(call.Input()) <= documents.PlanInlineBody {
		if part, err := json.Marshal(struct {
			Tool  string          `json:"tool"`
			Input json.RawMessage `json:"input"`
		}{t.Key, call.Input()}); err == nil {
			tr.A2A.DataPart = part
		}
	}
	plan.Transports = &tr
	plan.Steps = s.steps(t, terms, plan.Method, plan.URL)
	plan.Curl = documents.Curl(plan.Method, plan.URL, plan.Body, "")
	plan.CurlPaid = documents.Curl(plan.Method, plan.URL, plan.Body, "<base64 PaymentPayload>")
	if len(plan.Body) > documents.PlanInlineBody {
		plan.Message = "save body as body.json for the curl lines (it is too long for a command line); "
	}
	if plan.InputValid {
		plan.Message += fmt.Sprintf(`%s %s costs %s USDC on %s: send it, answer the 402 with an x402 exact payment, retry with PAYMENT-SIGNATURE; `+
			`or buy the same call on the same terms over MCP (%s %q at %s) or A2A (data part {"tool": %q, "input": {...}} at %s, x402 extension)`,
			t.Method, plan.URL, t.Price, s.network.CAIP2, documents.MCPCallMethod, t.OperationID, s.absURL(wire.PathMCP), t.Key, s.absURL(wire.PathA2A))
	} else {
		plan.Message += fmt.Sprintf("the input breaks %d rule(s) of %s: fix them first (invalid input is answered 400, before any 402, so nothing is paid)", len(plan.InputErrors), t.Key)
	}
	plan.NextRoutes = append([]documents.Link{{Method: "GET", URL: s.absURL("/api/try") + "?q=" + url.QueryEscape(t.Key), Purpose: "free preview of " + t.Key + " with its example output"}}, plan.NextRoutes...)
	return plan, nil
}

// resolve picks the tool for a query: an exact name (key, operation id,
// path, URL) first, else the finder's best match when it scores at least
// MinMatchScore (MinCorrectedScore for a match through typo corrections
// alone). It returns the index of the chosen tool (-1: none), its
// score and matched tokens, and the finder's other matches in rank order
// (all of them when none was chosen).
func (s *Service) resolve(query string, n int) (int, float64, []string, []finder.Match) {
	matches := s.finder.Find(query, n)
	if i, ok := s.lookup(query); ok {
		rest := make([]finder.Match, 0, len(matches))
		for _, m := range matches {
			if m.Key != s.tools[i].Key {
				rest = append(rest, m)
			}
		}
		return i, 1, []string{strings.ToLower(strings.TrimSpace(query))}, rest
	}
	for len(matches) > 0 {
		if i, ok := s.index[matches[0].Key]; ok {
			if !routeAccepts(matches[0], MinMatchScore) {
				return -1, 0, nil, matches
			}
			return i, matches[0].Score, matches[0].MatchedTokens, matches[1:]
		}
		matches = matches[1:]
	}
	return -1, 0, nil, nil
}

// routeAccepts reports whether the finder's best match m is good enough
// to plan a paid call: a score of at least minScore, and of at least
// MinCorrectedScore when every matched token was a typo correction.
func routeAccepts(m finder.Match, minScore float64) bool {
	return m.Score >= minScore && (!m.Corrected || m.Score >= MinCorrectedScore)
}

// alternatives converts finder matches to the short form, at most n.
func (s *Service) alternatives(ms []finder.Match, n int) []RouteAlternative {
	out := []RouteAlternative{}
	for _, m := range ms {
		if len(out) == n {
			break
		}
		i, ok := s.index[m.Key]
		if !ok {
			continue
		}
		it := s.items[i]
		out = append(out, RouteAlternative{Key: it.Key, Name: it.Name, Method: it.Method, URL: it.URL, PriceUSD: it.PriceUSD, MatchScore: m.Score})
	}
	return out
}

// steps is the x402 v2 exchange for one call of t.
func (s *Service) steps(t *tools.Tool, terms x402.PaymentRequirements, method, u string) []RouteStep {
	send := fmt.Sprintf("Send %s %s without any payment header", method, u)
	if method != http.MethodGet {
		send += ", with the JSON body and Content-Type: application/json"
	}
	send += ". An invalid input is answered 400 (problem+json) before any payment is asked"
	if t.Terminal {
		send += "; if the market-data terminal is down the answer is 503, again before any payment"
	}
	send += "."
	settle := "Read the 200 JSON response and the PAYMENT-RESPONSE header: base64 of a JSON SettleResponse {success, transaction, network, payer}."
	if s.cfg.DevMode {
		settle += " Dev mode: the local facilitator verifies signatures for real but settles nothing on chain (transaction starts with \"" + facilitator.LocalTransactionPrefix + "\")."
	}
	return []RouteStep{
		{Step: 1, Action: "send", Description: send},
		{Step: 2, Action: "receive_402", Header: x402.HeaderPaymentRequired, Description: fmt.Sprintf(
			"Receive 402 Payment Required. The PAYMENT-REQUIRED header is base64 of a JSON PaymentRequired {x402Version: 2, resource, accepts}; pick the accepts entry with scheme %q, network %q, asset %s, amount %q (%s USDC in atomic units), payTo %s.",
			terms.Scheme, terms.Network, terms.Asset, terms.Amount, t.PriceFixed6(), terms.PayTo)},
		{Step: 3, Action: "sign", Description: fmt.Sprintf(
			"Sign an EIP-3009 TransferWithAuthorization (x402 exact scheme) from your wallet to payTo for exactly the amount, with a random 32-byte nonce and validBefore within maxTimeoutSeconds, under the token's EIP-712 domain {name %q, version %q, chainId %d, verifyingContract %s}.",
			s.network.EIP712Name, s.network.EIP712Version, s.network.ChainID, terms.Asset)},
		{Step: 4, Action: "retry", Header: x402.HeaderPaymentSignature, Description: "Retry the identical request with the header PAYMENT-SIGNATURE: base64 of a JSON PaymentPayload {x402Version: 2, accepted: the chosen accepts entry verbatim, payload: {signature, authorization}}."},
		{Step: 5, Action: "read_response", Header: x402.HeaderPaymentResponse, Description: settle},
	}
}

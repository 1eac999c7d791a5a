package documents

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// buildSkill renders /skill.md: what the service is, how to discover the
// tools, the x402 flow with its headers over HTTP, MCP and A2A, the tools
// with price, path and the three ways to buy each, an example and, in dev
// mode, what dev mode means.
func (s *Set) buildSkill() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# %s — pay-per-call tools for agents\n\n", s.cfg.Name)
	p("%s\n\n", ServiceDescription)
	p("- Base URL: %s\n- Interface version: %s (OpenAPI %s at %s)\n", s.base, s.cfg.Version, OpenAPIVersion, s.absURL(PathOpenAPI))
	p("- Payment: x402 v%d, scheme `exact`, USDC on `%s` (asset `%s`), paid to `%s`\n", x402.Version, s.network.CAIP2, s.asset, s.payTo)
	p("- Facilitator: %s\n\n", s.facil)
	if s.cfg.DevMode {
		p("> **Dev mode.** This server runs with a local facilitator: payment signatures are verified for real, but nothing is settled on chain (PAYMENT-RESPONSE transactions start with `%s`). Use it to integrate, not to buy.\n\n", facilitator.LocalTransactionPrefix)
	}

	p("## 1. Discover (free)\n\n")
	p("| Need | Call |\n|---|---|\n")
	p("| Rank tools for a need in words | `GET %s?q=stop+loss+for+a+long&limit=5` |\n", s.absURL("/api/find"))
	p("| Get a ready call plan, with your input validated for free | `POST %s` with `{\"query\": \"...\", \"input\": {...}}` |\n", s.absURL("/api/route"))
	p("| Browse every tool (schemas, examples, prices) | `GET %s?offset=0&limit=50&category=gold` |\n", s.absURL("/api/catalog"))
	p("| Preview a tool's output, or take the tour | `GET %s?q=csv` / `GET %s` |\n", s.absURL("/api/try"), s.absURL("/api/try"))
	p("| MCP (free tools find_tool, route_tool, catalog, tool_info; the paid tools too, see \"3. Or buy the same call over MCP or A2A\") | `POST %s` |\n", s.absURL(wire.PathMCP))
	p("| A2A (send a message describing the need; the paid tools too, see \"3. Or buy the same call over MCP or A2A\"; card at %s) | `POST %s` |\n", s.absURL(wire.PathAgentCard), s.absURL(wire.PathA2A))
	p("| Payment manifest / router feed | `GET %s` / `GET %s` |\n\n", s.absURL(PathX402Manifest), s.absURL(PathRouterFeed))

	p("## 2. Pay per call over HTTP (x402 v2)\n\n")
	p("1. Send the request without payment. Invalid input is answered **400** (`application/problem+json`, `errors: [{field, rule, message}]`) before any payment is asked; a gold tool whose terminal is down answers **503**, also before payment.\n")
	p("2. Receive **402 Payment Required**. The `%s` header is base64 of a JSON `PaymentRequired` `{x402Version: 2, resource, accepts: [...]}`.\n", x402.HeaderPaymentRequired)
	p("3. Sign an EIP-3009 `TransferWithAuthorization` for the `accepts` entry (scheme `exact`): `value` = `amount`, `to` = `payTo`, a random 32-byte nonce, `validBefore` within `maxTimeoutSeconds`, EIP-712 domain `{name: %q, version: %q, chainId: %d, verifyingContract: %s}`.\n", s.network.EIP712Name, s.network.EIP712Version, s.network.ChainID, s.asset)
	p("4. Retry the identical request with `%s: <base64 JSON PaymentPayload {x402Version: 2, accepted, payload: {signature, authorization}}>`.\n", x402.HeaderPaymentSignature)
	p("5. Read the **200** JSON answer and the `%s` header (base64 JSON `SettleResponse` `{success, transaction, network, payer}`). If settlement fails you get 402 and the answer is withheld; a tool failure settles nothing.\n\n", x402.HeaderPaymentResponse)

	p("## 3. Or buy the same call over MCP or A2A\n\n")
	p("Every tool is sold on the same terms (price, network, asset, payTo) over HTTP, MCP and A2A, through one payment engine: an authorization buys one call, whatever the transport. The table under \"4. Tools\" names each tool on each transport.\n\n")
	p("- **MCP** (`POST %s`, x402 MCP transport): `%s` with the tool's MCP name (its operation id) and the input as `arguments`. Without payment the result is the x402 `PaymentRequired` (`isError: true`, in `structuredContent` and `content[0].text`; a client advertising the `%s` extension on protocol 2026-07-28 gets `resultType: \"payment_required\"` with `paymentRequired`). Call again with the `PaymentPayload` in `params._meta[\"%s\"]`; the settlement is in `result._meta[\"%s\"]`.\n",
		s.absURL(wire.PathMCP), MCPCallMethod, x402mcp.ExtensionPayment, x402mcp.MetaPayment, x402mcp.MetaPaymentResponse)
	p("- **A2A** (`POST %s`, x402 extension `%s`, declared in %s): send a message with the data part `{\"tool\": \"<key>\", \"input\": {...}}`; the task is `input-required` with `%s` in its status message metadata. Send a message on that task with `%s` (the `PaymentPayload`) in its metadata; the completed task holds the output as an artifact and `%s`.\n\n",
		s.absURL(wire.PathA2A), x402a2a.ExtensionURI, s.absURL(wire.PathAgentCard), x402a2a.MetaRequired, x402a2a.MetaPayload, x402a2a.MetaReceipts)
	p("Invalid input and a terminal that is down are answered before any payment is asked, on every transport.\n\n")

	p("## 4. Tools\n\n")
	p("| Tool | Key | Method and path | Price (USDC) | Input |\n|---|---|---|---|---|\n")
	for _, t := range s.tools {
		where := "JSON body"
		if t.InputLocation == tools.InputQuery {
			where = "query: " + strings.Join(t.Fields, ", ")
		}
		p("| %s | `%s` | `%s %s` | %s | %s |\n", t.Name, t.Key, t.Method, t.Path, t.PriceFixed6(), where)
	}
	p("\nThe three ways to buy each tool (`transports` in the catalog, `x-transports` in the OpenAPI document):\n\n")
	p("| Key | HTTP | MCP tool (`%s` at `%s`) | A2A data part (at `%s`) |\n|---|---|---|---|\n", MCPCallMethod, wire.PathMCP, wire.PathA2A)
	for i, t := range s.tools {
		tr := s.buy[i]
		p("| `%s` | `%s %s` | `%s` | `{\"tool\": \"%s\", \"input\": {...}}` |\n", t.Key, tr.HTTP.Method, tr.HTTP.Path, tr.MCP.Tool, tr.A2A.Skill)
	}
	p("\nEvery tool's schemas and a real example input and output are in `GET %s` and `%s`.\n\n", s.absURL("/api/catalog"), s.absURL(PathOpenAPI))

	p("## 5. Example\n\n")
	ex := s.skillExampleTool()
	first, paid := s.skillCurl(ex)
	p("```sh\n# free: the plan, with the input validated\ncurl -sS -X POST %s -H 'Content-Type: application/json' --data-binary '{\"query\":\"%s\"}'\n", s.absURL("/api/route"), ex.Key)
	p("# 1st request: answered 402 with PAYMENT-REQUIRED\n%s\n# paid retry\n%s\n```\n\n", first, paid)

	p("## 6. Rules\n\n")
	p("- Unknown JSON members and unknown query parameters are invalid (a typo is never paid for; `ref` and `src`, which carry attribution, are accepted everywhere); a tool parameter given twice is invalid (no value is picked).\n")
	p("- Request bodies are limited to %d bytes (413). Free routes are rate-limited per client address (429 with Retry-After); paid routes are not.\n", s.cfg.BodyLimit)
	p("- Numbers are exact decimals; outputs are JSON numbers. Errors are RFC 9457 problem+json.\n")
	p("- Stats (`%s`) are aggregate counters only: no address, wallet, token or body is kept.\n", s.absURL(PathAmplifierStats))
	return b.String()
}

// skillExampleTool is the tool of the example: the first POST tool.
func (s *Set) skillExampleTool() *tools.Tool {
	for _, t := range s.tools {
		if t.Method == http.MethodPost {
			return t
		}
	}
	return s.tools[0]
}

// skillCurl renders the first request of t on its example input and the
// paid retry.
func (s *Set) skillCurl(t *tools.Tool) (string, string) {
	u := s.absURL(t.Path)
	var body []byte
	if t.InputLocation == tools.InputQuery {
		if q, err := tools.QueryOf(t.ExampleInput); err == nil && len(q) > 0 {
			u += "?" + url.Values(q).Encode()
		}
	} else {
		body = t.ExampleInput
	}
	return Curl(t.Method, u, body, ""), Curl(t.Method, u, body, "<base64 PaymentPayload>")
}

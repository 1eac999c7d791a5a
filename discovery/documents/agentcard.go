package documents

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
)

// A2A protocol facts of the agent card (ref/a2a.md): the endpoint speaks
// JSON-RPC in versions 1.0 and 0.3.
const (
	// A2ABinding is the protocol binding of the /a2a endpoint.
	A2ABinding = "JSONRPC"
)

// AgentCard is the hybrid A2A agent card: the 1.0 fields plus the 0.3
// top-level fields (url, preferredTransport, protocolVersion), with the
// endpoint listed once per version in supportedInterfaces (1.0 first), as
// the official SDKs emit for compatibility. It carries no security
// schemes: the discovery skills are free, and each paid tool's skill is paid
// per call through the A2A x402 extension it declares.
type AgentCard struct {
	Name                string            `json:"name"`
	Description         string            `json:"description"`
	Version             string            `json:"version"`
	SupportedInterfaces []AgentInterface  `json:"supportedInterfaces"`
	URL                 string            `json:"url"`
	PreferredTransport  string            `json:"preferredTransport"`
	ProtocolVersion     string            `json:"protocolVersion"`
	Provider            AgentProvider     `json:"provider"`
	DocumentationURL    string            `json:"documentationUrl"`
	Capabilities        AgentCapabilities `json:"capabilities"`
	DefaultInputModes   []string          `json:"defaultInputModes"`
	DefaultOutputModes  []string          `json:"defaultOutputModes"`
	Skills              []AgentSkill      `json:"skills"`
}

// AgentInterface is an entry of supportedInterfaces (A2A 1.0).
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider names who runs the agent.
type AgentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// AgentCapabilities are the optional A2A features: no streaming, push
// notification or extended card; the extensions the agent supports (the
// A2A x402 extension).
type AgentCapabilities struct {
	Streaming         bool             `json:"streaming"`
	PushNotifications bool             `json:"pushNotifications"`
	ExtendedAgentCard bool             `json:"extendedAgentCard"`
	Extensions        []AgentExtension `json:"extensions,omitempty"`
}

// AgentExtension declares an extension the agent supports.
type AgentExtension struct {
	URI         string `json:"uri"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// AgentSkill is one skill of the card.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples"`
	InputModes  []string `json:"inputModes"`
	OutputModes []string `json:"outputModes"`
}

// AgentCard returns the bytes of the agent card served at
// /.well-known/agent-card.json and /.well-known/agent.json (a copy).
func (s *Set) AgentCard() []byte { return bytes.Clone(s.card.body) }

// AgentCardETag returns the strong ETag of the agent card.
func (s *Set) AgentCardETag() string { return s.card.etag }

// AgentCardHandler serves the agent card with Cache-Control, ETag and
// If-None-Match (the handler of both well-known paths).
func (s *Set) AgentCardHandler() http.Handler { return s.card }

// agentCardSentence ends the card's description: how the paid tools are
// bought over A2A.
const agentCardSentence = ` Every paid tool is also sold here over A2A with the x402 extension (a2a-x402 v0.2): ` +
	`send a data part {"tool": "<key>", "input": {...}}, pay the input-required task, get the answer with the settlement receipt.`

// agentCard builds the card: the free discovery skills, then one skill per
// paid tool (its id is the tool key) and the A2A x402 extension.
func (s *Set) agentCard() AgentCard {
	a2a := s.absURL(wire.PathA2A)
	in := []string{"text/plain", "application/json"}
	out := []string{"application/json", "text/plain"}
	skill := func(id, name, desc string, tags, examples []string) AgentSkill {
		return AgentSkill{ID: id, Name: name, Description: desc, Tags: tags, Examples: examples, InputModes: in, OutputModes: out}
	}
	skills := []AgentSkill{
		skill("find-tool", "Find a tool",
			"Ranks the paid tools for a need written in plain words and answers with the best matches, their prices and URLs. Free.",
			[]string{"discovery", "router", "search"},
			[]string{"Find a tool to profile CSV data", "Which tool computes a stop loss for a long at 3500?", "is the london session open"}),
		skill("route-call", "Plan a paid call",
			`Turns a need (text, or a data part {"query": "...", "input": {...}}) into a machine-ready call plan: method, URL, body, price, payment terms, the x402 402 → sign → retry steps and the same call over MCP and A2A; the input is validated with the tool's own rules before anything is paid. Free.`,
			[]string{"discovery", "router", "x402", "payments"},
			[]string{`{"query": "risk levels", "input": {"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04}}`, "Plan a call to decode a JWT"}),
		skill("catalog", "Browse the catalog",
			fmt.Sprintf("Lists the %d paid tools with schemas, example inputs and outputs, prices in USDC (x402 v2 on %s) and how to buy each over HTTP, MCP and A2A. Free.", len(s.tools), s.network.CAIP2),
			[]string{"discovery", "catalog"},
			[]string{"List the catalog", "Show the gold tools"}),
	}
	for i, t := range s.tools {
		skills = append(skills, s.paidSkill(t, s.buy[i]))
	}
	return AgentCard{
		Name: s.cfg.Name,
		Description: ServiceDescription + " This agent finds the right tool for a need and answers with a call plan." +
			agentCardSentence,
		Version: s.cfg.Version,
		SupportedInterfaces: []AgentInterface{
			{URL: a2a, ProtocolBinding: A2ABinding, ProtocolVersion: wire.A2AVersion},
			{URL: a2a, ProtocolBinding: A2ABinding, ProtocolVersion: wire.A2ALegacyVersion},
		},
		URL:                a2a,
		PreferredTransport: A2ABinding,
		ProtocolVersion:    wire.A2ALegacyVersion,
		Provider:           AgentProvider{Organization: s.cfg.Name, URL: s.base},
		DocumentationURL:   s.absURL(PathSkill),
		Capabilities: AgentCapabilities{Extensions: []AgentExtension{{
			URI:      x402a2a.ExtensionURI,
			Required: false,
			Description: "Sells every paid tool with x402 v2 payments (exact, USDC) in the standalone flow: " +
				`a message with a data part {"tool", "input"} gets a task in input-required carrying ` + x402a2a.MetaRequired + "; " +
				"the message carrying " + x402a2a.MetaPayload + " on that task gets the answer as an artifact and " + x402a2a.MetaReceipts + ".",
		}}},
		DefaultInputModes:  in,
		DefaultOutputModes: out,
		Skills:             skills,
	}
}

// paidSkill is the card skill of a paid tool: its id is the tool key, its
// example the data part that buys it.
func (s *Set) paidSkill(t *tools.Tool, tr Transports) AgentSkill {
	first := t.Description
	if i := strings.Index(first, ". "); i > 0 {
		first = first[:i+1]
	}
	return AgentSkill{
		ID:   t.Key,
		Name: t.Name,
		Description: fmt.Sprintf("%s Paid: %s USDC per call (x402 v2, exact, on %s) through the x402 extension: "+
			`send a data part {"tool": %q, "input": {...}} (the input as the catalog's input schema says); `+
			"the task asks for the payment (input-required), and the message carrying it gets the output as the artifact %q. "+
			"The same call is sold over HTTP (%s %s) and MCP (%s %q at %s).",
			first, t.Price, s.network.CAIP2, t.Key, t.Key, t.Method, tr.HTTP.URL, MCPCallMethod, t.OperationID, tr.MCP.URL),
		Tags:        append(slices.Clone(t.Tags), "paid", "x402"),
		Examples:    []string{string(tr.A2A.DataPart)},
		InputModes:  []string{jsonContentType},
		OutputModes: []string{jsonContentType, "text/plain"},
	}
}

package discovery

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

// A2A protocol facts of the agent card (ref/a2a.md): the endpoint speaks
// JSON-RPC in versions 1.0 and 0.3.
const (
	// A2ABinding is the protocol binding of the /a2a endpoint.
	A2ABinding = "JSONRPC"
	// A2AVersion and A2ALegacyVersion are the A2A versions served.
	A2AVersion       = "1.0"
	A2ALegacyVersion = "0.3"
)

// AgentCard is the hybrid A2A agent card: the 1.0 fields plus the 0.3
// top-level fields (url, preferredTransport, protocolVersion), with the
// endpoint listed once per version in supportedInterfaces (1.0 first), as
// the official SDKs emit for compatibility. It carries no security
// schemes: every skill is free.
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

// AgentCapabilities are the optional A2A features: none is offered.
type AgentCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
	ExtendedAgentCard bool `json:"extendedAgentCard"`
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
// /.well-known/agent-card.json and /.well-known/agent.json (a copy), for the
// A2A surface to reuse.
func (s *Service) AgentCard() []byte { return bytes.Clone(s.card.body) }

// AgentCardETag returns the strong ETag of the agent card.
func (s *Service) AgentCardETag() string { return s.card.etag }

// AgentCardHandler serves the agent card with Cache-Control, ETag and
// If-None-Match (the handler of both well-known paths).
func (s *Service) AgentCardHandler() http.Handler { return s.card }

// agentCard builds the card.
func (s *Service) agentCard() AgentCard {
	a2a := s.absURL(PathA2A)
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
			`Turns a need (text, or a data part {"query": "...", "input": {...}}) into a machine-ready call plan: method, URL, body, price, payment terms and the x402 402 → sign → retry steps; the input is validated with the tool's own rules before anything is paid. Free.`,
			[]string{"discovery", "router", "x402", "payments"},
			[]string{`{"query": "risk levels", "input": {"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04}}`, "Plan a call to decode a JWT"}),
		skill("catalog", "Browse the catalog",
			fmt.Sprintf("Lists the %d paid tools with schemas, example inputs and outputs, and prices in USDC (x402 v2 on %s). Free.", len(s.tools), s.network.CAIP2),
			[]string{"discovery", "catalog"},
			[]string{"List the catalog", "Show the gold tools"}),
	}
	for _, g := range s.groups() {
		var names, prices []string
		for _, i := range g.Tools {
			t := s.tools[i]
			names = append(names, t.Name)
			prices = append(prices, fmt.Sprintf("%s %s USDC", t.Key, t.Price))
		}
		var examples []string
		for _, i := range g.Tools {
			examples = append(examples, "Plan a call to "+strings.ToLower(s.tools[i].Name))
			if len(examples) == 2 {
				break
			}
		}
		skills = append(skills, skill("tools-"+g.Tag, g.Title,
			fmt.Sprintf("%s: %s. This agent plans the paid calls (%s, paid per call over HTTP with x402); it never runs a paid tool itself.",
				g.Title, strings.Join(names, ", "), strings.Join(prices, ", ")),
			[]string{g.Tag, "paid-tools", "x402"}, examples))
	}
	return AgentCard{
		Name:        s.cfg.Name,
		Description: serviceDescription + " This agent finds the right tool for a need and answers with a call plan; the tools themselves are paid per call over HTTP.",
		Version:     s.cfg.Version,
		SupportedInterfaces: []AgentInterface{
			{URL: a2a, ProtocolBinding: A2ABinding, ProtocolVersion: A2AVersion},
			{URL: a2a, ProtocolBinding: A2ABinding, ProtocolVersion: A2ALegacyVersion},
		},
		URL:                a2a,
		PreferredTransport: A2ABinding,
		ProtocolVersion:    A2ALegacyVersion,
		Provider:           AgentProvider{Organization: s.cfg.Name, URL: s.base},
		DocumentationURL:   s.absURL(PathSkill),
		Capabilities:       AgentCapabilities{},
		DefaultInputModes:  in,
		DefaultOutputModes: out,
		Skills:             skills,
	}
}

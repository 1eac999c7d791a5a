// Package wire holds the names svc's own packages share on the wire:
// the paths of the protocol endpoints and of the agent card, the problem
// documents' media type and type prefix, the request id header, and the
// MCP and A2A protocol versions the server speaks. It imports nothing, so
// every package (discovery and its subpackages, httpserver, club, cmd) can
// use it without pulling in another.
//
// Each name is defined once, next to its owner:
//
//   - the x402 protocol's names (the PAYMENT-* headers in package x402,
//     the MCP _meta keys, the MCP payment extension and the
//     MCP-Protocol-Version header in x402/mcp, the A2A x402 extension URI,
//     its metadata keys and the A2A-Extensions headers in x402/a2a) stay
//     in the x402 packages that implement them, because x402 imports
//     nothing of svc outside x402 (it is a library of its own). svc's
//     packages read them from there; this package does not repeat them;
//   - the names of svc's interface that several of svc's packages write
//     or read are here;
//   - a name only one package uses stays in that package.
package wire

// Paths of the endpoints several packages name: the MCP and A2A endpoints
// (served by discovery/mcp and discovery/a2a, described by discovery's
// documents, counted by client kind in the stats) and the A2A agent card
// (served by discovery, linked from discovery/a2a's answers).
const (
	// PathMCP is the MCP endpoint (streamable HTTP, POST).
	PathMCP = "/mcp"
	// PathA2A is the A2A endpoint (JSON-RPC, POST).
	PathA2A = "/a2a"
	// PathAgentCard is the standard path of the A2A agent card.
	PathAgentCard = "/.well-known/agent-card.json"
	// PathAgentCardLegacy is the path of the agent card before A2A 0.3,
	// serving the same bytes.
	PathAgentCardLegacy = "/.well-known/agent.json"
)

// Protocol versions the server speaks.
const (
	// MCPProtocolVersion is the MCP revision of the stateless protocol
	// (per-request _meta, server/discover, the x402 extension binding);
	// the legacy initialize exchange is accepted too.
	MCPProtocolVersion = "2026-07-28"
	// A2AVersion and A2ALegacyVersion are the A2A versions the agent
	// answers (A2A-Version header): 1.0, and 0.3 when a client names no
	// version.
	A2AVersion       = "1.0"
	A2ALegacyVersion = "0.3"
)

// Error answers and request correlation, the same on every HTTP path
// (httpserver's problem writer, discovery's and the club's handlers).
const (
	// ProblemContentType is the media type of error answers (RFC 9457).
	ProblemContentType = "application/problem+json"
	// ProblemTypePrefix starts the type URI of every problem, followed by
	// its code ("urn:svc:problem:invalid_input").
	ProblemTypePrefix = "urn:svc:problem:"
	// HeaderRequestID carries the request id: the client's when it sent
	// a valid one, else one the server generated; answers repeat it.
	HeaderRequestID = "X-Request-Id"
)

package mcp

import (
	"net/http"

	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/wire"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// RouteDoc describes the MCP endpoint (POST /mcp, NewHandler) for
// discovery's documents (discovery.Config.FreeRoutes).
func RouteDoc() routedoc.Route {
	return routedoc.Route{Method: "POST", Path: wire.PathMCP, OperationID: "mcp", Tag: routedoc.TagProtocols,
		Summary: "MCP server: free discovery tools and every paid tool (JSON-RPC)",
		Description: "Model Context Protocol, " + wire.MCPProtocolVersion + " stateless revision, also accepting the legacy initialize exchange. Free, read-only tools: find_tool, route_tool, catalog, tool_info. " +
			"Every paid operation is also an MCP tool named by its operationId, sold with the x402 MCP transport on the same terms as over HTTP (x-transports.mcp of each paid operation): " +
			"tools/call without payment answers the x402 PaymentRequired (isError with it in structuredContent, or resultType payment_required to a client advertising the " + x402mcp.ExtensionPayment + " extension); " +
			"the paid call carries the PaymentPayload in params._meta[\"" + x402mcp.MetaPayment + "\"] and the result the settlement in result._meta[\"" + x402mcp.MetaPaymentResponse + "\"].",
		Body: routedoc.JSONRPCRequest(), Response: routedoc.JSONRPCResponse(),
		Responses: map[int]string{http.StatusAccepted: "A notification was accepted (no body)."}}
}

package a2a

import (
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/wire"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
)

// RouteDoc describes the A2A endpoint (POST /a2a, NewHandler) for
// discovery's documents (discovery.Config.FreeRoutes).
func RouteDoc() routedoc.Route {
	return routedoc.Route{Method: "POST", Path: wire.PathA2A, OperationID: "a2a", Tag: routedoc.TagProtocols,
		Summary: "A2A agent: discovery, router and every paid tool (JSON-RPC, A2A " + wire.A2AVersion + " and " + wire.A2ALegacyVersion + ")",
		Description: "A message describing a need yields a completed task whose artifact is a call plan. The agent card is at " + wire.PathAgentCard + ". " +
			"Every paid operation is also sold here with the A2A x402 extension (" + x402a2a.ExtensionURI + ") on the same terms as over HTTP (x-transports.a2a of each paid operation): " +
			"a message with the data part {\"tool\": \"<x-catalog-key>\", \"input\": {...}} gets a task in input-required carrying " + x402a2a.MetaRequired +
			"; a message on that task carrying " + x402a2a.MetaPayload + " gets the completed task with the output as an artifact and " + x402a2a.MetaReceipts + ".",
		Body: routedoc.JSONRPCRequest(), Response: routedoc.JSONRPCResponse()}
}

// Package routedoc is how a component describes its free HTTP routes to
// discovery's documents (/openapi.json, the payment manifest's free
// resources, the tour of /api/try, llms.txt): each component that serves
// routes (httpserver's probes and metrics, the MCP and A2A endpoints, the
// club) publishes a Route per route it mounts, and the server passes them
// all to discovery.Config.FreeRoutes. The documents are built from them;
// discovery itself names no other component's route.
//
// The package imports nothing, so that a component can describe its
// routes without depending on discovery. Schemas are JSON Schema 2020-12
// as maps, built with the helpers below.
package routedoc

// Tags group the operations of /openapi.json.
const (
	TagDiscovery  = "discovery"
	TagProtocols  = "protocols"
	TagManifests  = "manifests"
	TagStats      = "stats"
	TagClub       = "club"
	TagOperations = "operations"
	// TagPaid marks every paid operation (next to the tool's own tags).
	TagPaid = "paid"
)

// Route describes one free HTTP route.
type Route struct {
	// Method ("GET", "POST") and Path (an http.ServeMux path, "{name}"
	// marking a path parameter) identify the route.
	Method string
	Path   string
	// OperationID is unique in the document ("findTools").
	OperationID string
	// Summary is one line; Description may be longer.
	Summary     string
	Description string
	// Tag groups the route (TagDiscovery, TagClub, ...).
	Tag string
	// Params are the query and path parameters.
	Params []Param
	// Body is the JSON Schema of a JSON request body (nil: no body).
	Body map[string]any
	// Response is the JSON Schema of the 200 answer (nil: any JSON).
	Response map[string]any
	// ResponseType is the media type of the 200 answer; "" means
	// application/json.
	ResponseType string
	// Cached marks documents served with an ETag (If-None-Match → 304).
	Cached bool
	// Responses adds statuses beyond 200 and the standard errors
	// (status → description), for instance 503 for /health.
	Responses map[int]string
}

// Param is a query or path parameter.
type Param struct {
	Name string
	// In is "query" or "path".
	In          string
	Required    bool
	Description string
	Schema      map[string]any
}

// Object is an object schema with the given properties, the required ones
// named.
func Object(props map[string]any, required ...string) map[string]any {
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

// String is a string schema; desc may be "".
func String(desc string) map[string]any { return typed("string", desc) }

// Int is an integer schema; desc may be "".
func Int(desc string) map[string]any { return typed("integer", desc) }

// Number is a number schema; desc may be "".
func Number(desc string) map[string]any { return typed("number", desc) }

// Bool is a boolean schema; desc may be "".
func Bool(desc string) map[string]any { return typed("boolean", desc) }

// AnyObject is an object schema with any members; desc may be "".
func AnyObject(desc string) map[string]any { return typed("object", desc) }

// Array is an array schema of items; desc may be "".
func Array(items map[string]any, desc string) map[string]any {
	m := typed("array", desc)
	m["items"] = items
	return m
}

// Map is an object schema whose members all follow values; desc may be "".
func Map(values map[string]any, desc string) map[string]any {
	m := typed("object", desc)
	m["additionalProperties"] = values
	return m
}

// Ref refers to a schema of the document's components by name.
func Ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func typed(typ, desc string) map[string]any {
	m := map[string]any{"type": typ}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

// JSONRPCRequest is the schema of a JSON-RPC 2.0 request.
func JSONRPCRequest() map[string]any {
	return Object(map[string]any{
		"jsonrpc": map[string]any{"type": "string", "const": "2.0"},
		"method":  String(""),
		"params":  AnyObject(""),
		"id":      map[string]any{"type": []string{"string", "integer", "null"}},
	}, "jsonrpc", "method")
}

// JSONRPCResponse is the schema of a JSON-RPC 2.0 answer.
func JSONRPCResponse() map[string]any {
	return Object(map[string]any{
		"jsonrpc": map[string]any{"type": "string", "const": "2.0"},
		"id":      map[string]any{"type": []string{"string", "integer", "null"}},
		"result":  map[string]any{},
		"error": Object(map[string]any{
			"code":    Int(""),
			"message": String(""),
			"data":    map[string]any{},
		}, "code", "message"),
	}, "jsonrpc")
}

package x402

import (
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// BazaarExtensionKey is the key of the bazaar discovery extension in
// PaymentRequired.Extensions.
const BazaarExtensionKey = "bazaar"

// JSONSchemaDialect is the $schema of the bazaar extension's schema.
const JSONSchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// BazaarInfo describes a paid HTTP resource for discovery services
// (facilitators catalog it from the bazaar extension of the 402).
//
// The extension built from it is {info, schema}: info.input is
// {type:"http", method, queryParams?} for GET/HEAD/DELETE and {type:"http",
// method, bodyType:"json", body} for POST/PUT/PATCH; info.output is
// {type:"json", example} when OutputExample is set; schema is a JSON Schema
// (2020-12) that info validates against, requiring input, pinning
// input.type to "http" and input.method to Method.
type BazaarInfo struct {
	// Method is the HTTP method, upper case.
	Method string
	// InputExample is an example of the query parameters (GET, HEAD,
	// DELETE; a map of names to values) or of the JSON body (POST, PUT,
	// PATCH). Nil means none for queries and {} for bodies.
	InputExample any
	// InputSchema is the JSON Schema of the query parameters or body; nil
	// means {"type":"object"}. It is embedded, not copied: do not modify it
	// afterwards.
	InputSchema map[string]any
	// OutputExample is an example of the JSON response; nil omits info.output.
	OutputExample any
	// OutputSchema is the JSON Schema of the response; nil means {}.
	OutputSchema map[string]any
}

// bazaarBodyMethods are the methods whose input is a body.
func bazaarBodyMethod(m string) (body, known bool) {
	switch m {
	case "GET", "HEAD", "DELETE":
		return false, true
	case "POST", "PUT", "PATCH":
		return true, true
	}
	return false, false
}

func (b *BazaarInfo) validate() error {
	body, known := bazaarBodyMethod(b.Method)
	if !known {
		return &ConfigError{"Bazaar.Method", fmt.Sprintf("%q is not one of GET, HEAD, DELETE, POST, PUT, PATCH", clip.Bytes(b.Method, 10))}
	}
	if !body && b.InputExample != nil {
		if _, ok := b.InputExample.(map[string]any); !ok {
			if _, ok := b.InputExample.(map[string]string); !ok {
				return &ConfigError{"Bazaar.InputExample", "query parameters must be a map of names to values"}
			}
		}
	}
	return nil
}

// Extension returns the bazaar extension value {info, schema}. Call it on a
// BazaarInfo that passed Route.Validate; an unknown method is put as is.
func (b BazaarInfo) Extension() map[string]any {
	method := strings.ToUpper(b.Method)
	body, _ := bazaarBodyMethod(method)
	inSchema := b.InputSchema
	if inSchema == nil {
		inSchema = map[string]any{"type": "object"}
	}
	input := map[string]any{"type": "http", "method": method}
	inputProps := map[string]any{
		"type":   map[string]any{"type": "string", "const": "http"},
		"method": map[string]any{"type": "string", "enum": []any{method}},
	}
	required := []any{"type", "method"}
	if body {
		example := b.InputExample
		if example == nil {
			example = map[string]any{}
		}
		input["bodyType"] = "json"
		input["body"] = example
		inputProps["bodyType"] = map[string]any{"type": "string", "enum": []any{"json"}}
		inputProps["body"] = inSchema
		required = append(required, "bodyType", "body")
	} else {
		if b.InputExample != nil {
			input["queryParams"] = b.InputExample
		}
		inputProps["queryParams"] = inSchema
	}
	info := map[string]any{"input": input}
	props := map[string]any{
		"input": map[string]any{"type": "object", "properties": inputProps, "required": required},
	}
	if b.OutputExample != nil {
		info["output"] = map[string]any{"type": "json", "example": b.OutputExample}
		outSchema := b.OutputSchema
		if outSchema == nil {
			outSchema = map[string]any{}
		}
		props["output"] = map[string]any{
			"type": "object",
			"properties": map[string]any{
				"type":    map[string]any{"type": "string"},
				"example": outSchema,
			},
			"required": []any{"type"},
		}
	}
	return map[string]any{
		"info": info,
		"schema": map[string]any{
			"$schema":    JSONSchemaDialect,
			"type":       "object",
			"properties": props,
			"required":   []any{"input"},
		},
	}
}

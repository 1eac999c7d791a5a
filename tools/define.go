package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/seed1284c1d2/svc"
)

// meta is the type-independent part of a descriptor.
type meta struct {
	key, operationID, name string
	method, path           string
	// price is section 4's price in USD, a plain decimal.
	price       string
	tags        []string
	description string
	location    InputLocation
	terminal    bool
	// fields and outFields describe input and output members by
	// descriptor path ("entry", "bars[].open", "columns[].numeric.mean").
	fields, outFields map[string]string
	// rules are the input rules that live in the tool's code rather than
	// in validator tags, in validator-tag syntax by descriptor path
	// ("entry": "required,dgt=0"); see applyTags. They make the schema
	// show what validation enforces; a rule no schema keyword can express
	// (a cross-field rule) belongs in the description instead.
	rules map[string]string
	// defaults are the JSON defaults of optional input members by path.
	defaults map[string]string
	// example is a realistic input object (JSON).
	example string
}

// def is one tool's descriptor: adding a tool means adding one def to the
// table in descriptors.go, nothing else.
type def[Req, Resp any] struct {
	meta
	// run calls the root package's tool with the operator's Env.
	run func(ctx context.Context, env Env, req Req) (Resp, error)
	// pure says the output depends on the request alone (not on the Env,
	// a clock or a terminal): validating by a dry run then computes the
	// output, which Call.Run hands out instead of computing it again.
	pure bool
	// check validates a request without running the tool. nil means a dry
	// run of run with a zero Env: the only way to apply all of a tool's
	// rules, acceptable for the pure, cheap tools only. Tools that read a
	// terminal or may run long (the gold tools, regex_test) set check.
	check func(ctx context.Context, req Req) error
}

// define turns a descriptor into an entry: it derives the decoder's shape
// from Req and builds the adapter. Schemas and examples are built later by
// build, which needs the whole entry.
func define[Req, Resp any](d def[Req, Resp]) func() (*entry, error) {
	return func() (*entry, error) {
		reqType, respType := reflect.TypeFor[Req](), reflect.TypeFor[Resp]()
		sh, err := shapeOf(reqType)
		if err != nil {
			return nil, fmt.Errorf("tools: %s: request type: %w", d.operationID, err)
		}
		if sh.kind != kindObject {
			return nil, fmt.Errorf("tools: %s: request type %s is not a struct", d.operationID, reqType)
		}
		e := &entry{meta: d.meta, reqType: reqType, respType: respType, shape: sh}
		e.prepare = func(ctx context.Context, doc []byte) (*Call, error) {
			var req Req
			if err := json.Unmarshal(doc, &req); err != nil {
				// The walker has checked every member's type, so this is
				// a value the request type itself refuses.
				return nil, invalid(fieldErr("", RuleJSON, "the input does not decode: %s", cut(err.Error(), 120)))
			}
			var cached *Resp
			if d.check != nil {
				if err := d.check(ctx, req); err != nil {
					return nil, err
				}
			} else {
				resp, err := d.run(ctx, Env{}, req)
				if err != nil {
					return nil, err
				}
				if d.pure {
					cached = &resp
				}
			}
			return &Call{
				req:   req,
				input: sync.OnceValues(func() (json.RawMessage, error) { return encodeJSON(req) }),
				run: func(ctx context.Context, env Env) (any, error) {
					if cached != nil {
						if err := ctx.Err(); err != nil {
							return nil, &svc.Error{Kind: svc.KindTimeout, Message: fmt.Sprintf("%s: %v", d.operationID, err), Cause: err}
						}
						return *cached, nil
					}
					resp, err := d.run(ctx, env, req)
					if err != nil {
						return nil, err
					}
					return resp, nil
				},
			}, nil
		}
		return e, nil
	}
}

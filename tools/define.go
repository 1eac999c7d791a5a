package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/clip"
)

// meta is the type-independent part of a descriptor.
type meta struct {
	key, operationID, name string
	method, path           string
	// price is the tool's default price in USD, a plain decimal.
	price       string
	tags        []string
	description string
	location    InputLocation
	terminal    bool
	// fields and outFields describe input and output members by
	// descriptor path ("entry", "bars[].open", "columns[].numeric.mean").
	fields, outFields map[string]string
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
	// (A request validated by its Validate method is computed by Run.)
	pure bool
	// check validates a request without running the tool. nil means the
	// request's own Validate method when Req has one (the calculators),
	// else a dry run of run with a zero Env: the only way to apply all of
	// a tool's rules, acceptable for the pure, cheap tools only (the
	// profilers, whose validation is the parse). Tools that read a
	// terminal or may run long (the gold tools, regex_test) set check.
	check func(ctx context.Context, req Req) error
	// symbol returns the terminal symbol a request of a terminal-backed
	// tool names ("" when it names none and the operator's default
	// applies); nil for tools that take no symbol. Servers check it
	// against the terminal before asking for payment (Call.CheckSymbol).
	symbol func(req Req) string
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
		walkers := &walkerPool{}
		e.decode = func(ctx context.Context, doc []byte, pre []svc.FieldError, hint string) (*Call, error) {
			pc := &prepared[Req, Resp]{d: &d}
			errs, undecodable, err := decodeDocument(walkers, doc, sh, reflect.ValueOf(&pc.req).Elem(), hint)
			if err != nil {
				return nil, err
			}
			if len(pre) > 0 {
				errs = append(pre, errs...)
			}
			// Missing members alone do not stop decoding: the tool's
			// validation then reports every other broken rule at once.
			var missing []svc.FieldError
			for _, e := range errs {
				if e.Rule != RuleRequired {
					return nil, invalid(errs...)
				}
				missing = append(missing, e)
			}
			if undecodable != nil {
				// A value its own type refuses (UnmarshalText).
				return nil, mergeMissing(invalid(fieldErr("", RuleJSON, "the input does not decode: %s", clip.Runes(undecodable.Error(), 120))), missing)
			}
			c, err := pc.validate(ctx)
			if err != nil {
				return nil, mergeMissing(err, missing)
			}
			if len(missing) > 0 {
				return nil, invalid(missing...)
			}
			return c, nil
		}
		return e, nil
	}
}

// validate applies the tool's own rules to the decoded request and returns
// the Call.
func (pc *prepared[Req, Resp]) validate(ctx context.Context) (*Call, error) {
	d := pc.d
	switch v, ok := any(&pc.req).(validating); {
	case ok && d.check == nil:
		// The tool's own check, without computing: a 402 costs no more
		// than the rules (Run computes on a paid call).
		if err := v.Validate(); err != nil {
			return nil, err
		}
	case d.check != nil:
		if err := d.check(ctx, pc.req); err != nil {
			return nil, err
		}
	default:
		resp, err := d.run(ctx, Env{}, pc.req)
		if err != nil {
			return nil, err
		}
		if d.pure {
			pc.resp = &resp
		}
	}
	pc.call.p = pc
	return &pc.call, nil
}

// validating is a request of the root package that checks itself without
// running its tool (the calculators: (*svc.RiskLevelsRequest).Validate,
// ...). It returns the error the tool would return for invalid input.
type validating interface{ Validate() error }

// prepared is the state of one decoded call: the request, the output of
// the validating run when it is the answer (pure tools), and the input
// encoded on first use. One allocation holds it all, the Call included.
type prepared[Req, Resp any] struct {
	call Call
	d    *def[Req, Resp]
	req  Req
	resp *Resp // the dry run's output, when it is the answer

	once  sync.Once
	in    json.RawMessage
	inErr error
}

// request returns the decoded request.
func (p *prepared[Req, Resp]) request() any { return p.req }

// symbol returns the terminal symbol the request names, "" for none.
func (p *prepared[Req, Resp]) symbol() string {
	if p.d.symbol == nil {
		return ""
	}
	return p.d.symbol(p.req)
}

// input returns the request encoded as JSON, encoding it once.
func (p *prepared[Req, Resp]) input() (json.RawMessage, error) {
	p.once.Do(func() { p.in, p.inErr = encodeJSON(p.req) })
	return p.in, p.inErr
}

// run returns the cached output of a pure tool, or runs the tool.
func (p *prepared[Req, Resp]) run(ctx context.Context, env Env) (any, error) {
	if p.resp != nil {
		if err := ctx.Err(); err != nil {
			return nil, &svc.Error{Kind: svc.KindTimeout, Message: fmt.Sprintf("%s: %v", p.d.operationID, err), Cause: err}
		}
		return *p.resp, nil
	}
	resp, err := p.d.run(ctx, env, p.req)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

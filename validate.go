package svc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"
)

// Direction is a trade direction: "long" or "short".
type Direction string

// The two trade directions.
const (
	Long  Direction = "long"
	Short Direction = "short"
)

// sign returns +1 for long and -1 for short.
func (d Direction) sign() int64 {
	if d == Short {
		return -1
	}
	return 1
}

// structValidator is built once, on first use, and is safe for concurrent
// use; it is a cache of struct metadata, not configuration. Nothing outside
// this file touches it.
var structValidator = sync.OnceValue(newStructValidator)

func newStructValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	// A Number validates as its float64 value, and as nil when unset so
	// that "required" reports a missing field. Range tags (gt, gte, lte) on
	// a Number compare that float; exact bounds checks live in code.
	v.RegisterCustomTypeFunc(func(f reflect.Value) any {
		n := f.Interface().(Number)
		if !n.IsSet() {
			return nil
		}
		return n.Float64()
	}, Number{})
	return v
}

// validateStruct runs the validator tags of req and appends every failure
// to fe with the field's JSON path and a message naming the rule.
func validateStruct(fe *fieldErrors, req any) {
	err := structValidator().Struct(req)
	if err == nil {
		return
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		fe.add("", "invalid", "request is not valid: %v", err)
		return
	}
	for _, ve := range verrs {
		field := jsonPath(ve.Namespace())
		fe.add(field, ve.Tag(), "%s", ruleMessage(ve))
	}
}

// jsonPath turns a validator namespace ("RiskLevelsRequest.entry",
// "OHLCVStateRequest.bars[3].high") into the JSON path of the field.
func jsonPath(ns string) string {
	if _, rest, ok := strings.Cut(ns, "."); ok {
		return rest
	}
	return ns
}

// ruleMessage explains one validator failure in words.
func ruleMessage(ve validator.FieldError) string {
	p := ve.Param()
	switch ve.Tag() {
	case "required":
		return "is required"
	case "oneof":
		return "must be one of: " + strings.Join(strings.Fields(p), ", ")
	case "gt":
		return "must be greater than " + p
	case "gte":
		return "must be at least " + p
	case "lt":
		return "must be less than " + p
	case "lte":
		return "must be at most " + p
	case "min":
		if ve.Kind() == reflect.String || ve.Kind() == reflect.Slice {
			return "must have at least " + p + " " + unit(ve.Kind())
		}
		return "must be at least " + p
	case "max":
		if ve.Kind() == reflect.String || ve.Kind() == reflect.Slice {
			return "must have at most " + p + " " + unit(ve.Kind())
		}
		return "must be at most " + p
	default:
		if p != "" {
			return fmt.Sprintf("breaks rule %s=%s", ve.Tag(), p)
		}
		return "breaks rule " + ve.Tag()
	}
}

func unit(k reflect.Kind) string {
	if k == reflect.String {
		return "characters"
	}
	return "items"
}

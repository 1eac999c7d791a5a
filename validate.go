package svc

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/shopspring/decimal"

	"github.com/go-playground/validator/v10"
)

// Number fields carry exact rules as validator tags: dgt, dgte, dlt, dlte
// (decimal bounds) and whole; see numberRules.

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
	// Number fields use exact decimal rules: "required" (with required-struct
	// checking, an unset Number is missing while an explicit 0 is present),
	// and dgt, dgte, dlt, dlte (bounds compared in decimal) and whole.
	for tag, ok := range numberRules() {
		rule := ok
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool {
			n, isNum := fl.Field().Interface().(Number)
			if !isNum {
				return false
			}
			if !n.IsSet() {
				return true // absence is the business of "required"
			}
			return rule(n.Decimal(), fl.Param())
		}); err != nil {
			panic(fmt.Sprintf("svc: registering rule %s: %v", tag, err)) // programming error
		}
	}
	return v
}

// numberRules are the exact-decimal rules a Number field can carry as
// validator tags. Each receives the value and the tag's parameter.
func numberRules() map[string]func(d decimal.Decimal, param string) bool {
	bound := func(cmp func(c int) bool) func(decimal.Decimal, string) bool {
		return func(d decimal.Decimal, param string) bool {
			p, err := decimal.NewFromString(param)
			if err != nil {
				return false
			}
			return cmp(d.Cmp(p))
		}
	}
	return map[string]func(decimal.Decimal, string) bool{
		"dgt":   bound(func(c int) bool { return c > 0 }),
		"dgte":  bound(func(c int) bool { return c >= 0 }),
		"dlt":   bound(func(c int) bool { return c < 0 }),
		"dlte":  bound(func(c int) bool { return c <= 0 }),
		"whole": func(d decimal.Decimal, _ string) bool { return d.Equal(d.Truncate(0)) },
	}
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

// validateDirection is validateStruct for a request whose only validator
// tag is "required,oneof=long short" on its direction (RiskLevelsRequest,
// TickPnLRequest; a test holds them to it): long and short pass without the
// validator's reflective walk, which was the largest cost of validating
// such a request; anything else goes to the validator for its errors.
func validateDirection(fe *fieldErrors, d Direction, req any) {
	if d == Long || d == Short {
		return
	}
	validateStruct(fe, req)
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
	case "gt", "dgt":
		return "must be greater than " + p
	case "dgte":
		return "must be at least " + p
	case "dlt":
		return "must be less than " + p
	case "dlte":
		return "must be at most " + p
	case "whole":
		return "must be a whole number"
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

package svc

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
	"github.com/shopspring/decimal"
)

// The input rules of a request are the validate tags of its fields: the one
// place where a rule is written. The tools enforce them (tagRules, on
// github.com/go-playground/validator/v10) and the tools package publishes
// them in every JSON Schema (ParseRules). A tag is a comma-separated list of
// rules, each checked in order until one fails (one error per field); a
// rule's name is the code a violation reports (FieldError.Rule):
//
//	required      the field is given: a set Number, a non-empty string, a
//	              non-nil slice or pointer
//	omitempty     the rules that follow apply only when the field is given
//	gt=, gte=, lt=, lte=
//	              bounds of a Number (compared exactly in decimal) or an
//	              integer
//	integer       a Number is a whole number
//	oneof=a b c   a string is one of the words
//	min=, max=    bounds of an integer, of the characters of a string or of
//	              the items of a slice
//	max_bytes=    the bytes of a string
//
// The validator's own numeric rules compare float64; here gt, gte, lt and
// lte are registered with it as rules of our own that compare a Number's
// exact decimal with the bound parsed once, and a Number reaches them as
// its decimal (RegisterCustomTypeFunc). required, omitempty, oneof, min and
// max are the validator's.
//
// A set Number is also held to its own range (checkRange) before its rules.
// Rules that involve several fields (a risk level above zero, OHLC
// consistency) are checked in code after the tags and described in words.

// A Rule is one rule of a validate tag: Name is the code a violation
// reports (FieldError.Rule), Param its parameter ("0" in gt=0, "long short"
// in oneof=long short, "" in required).
type Rule struct {
	Name, Param string
}

// ParseRules returns the rules of a validate tag, in order.
func ParseRules(tag string) []Rule {
	var out []Rule
	for part := range strings.SplitSeq(tag, ",") {
		name, param, _ := strings.Cut(strings.TrimSpace(part), "=")
		out = append(out, Rule{Name: name, Param: param})
	}
	return out
}

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

// fieldKind is how the rules read a field.
type fieldKind uint8

const (
	kindNumber fieldKind = iota
	kindString
	kindInt
	kindIntPtr
	kindSlice
)

// fieldRules describe one field with a validate tag.
type fieldRules struct {
	name  string // JSON name
	index []int
	kind  fieldKind
	pos   int // position among the fields with a tag
}

// tagRules are the compiled validate tags of request type T: a validator
// instance of its own, with the exact-decimal rules registered and the tags
// of T read, and what the error messages need. Each request type has one,
// compiled when the package is initialised (like a regexp compiled at
// package level) and only read after: a malformed tag is a programming
// error that stops the program at start and is caught by the tests of
// every request type.
type tagRules[T any] struct {
	*compiled
}

// compiled is the validator of one request type and its fields by Go name.
type compiled struct {
	v      *validator.Validate
	fields []fieldRules
	byGo   map[string]*fieldRules // by Go field name
}

// compileTags compiles the validate tags of T; it panics on a malformed tag.
func compileTags[T any]() tagRules[T] {
	t := reflect.TypeFor[T]()
	c, err := compileRules(t)
	if err != nil {
		panic(fmt.Sprintf("svc: validate tags of %s: %v", t, err)) // programming error
	}
	return tagRules[T]{c}
}

var numberType = reflect.TypeFor[Number]()

// bounds are the parameters of the bound rules of one request type, parsed
// once: decimals for Numbers, integers for integers, lengths and sizes.
type bounds struct {
	dec map[string]decimal.Decimal
	n   map[string]int64
}

// compileRules checks the validate tags of the fields of struct type t and
// builds its validator.
func compileRules(t reflect.Type) (*compiled, error) {
	c := &compiled{byGo: map[string]*fieldRules{}}
	b := bounds{dec: map[string]decimal.Decimal{}, n: map[string]int64{}}
	for _, sf := range reflect.VisibleFields(t) {
		tag := sf.Tag.Get("validate")
		if tag == "" || !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" {
			name = sf.Name
		}
		fr := fieldRules{name: name, index: sf.Index, pos: len(c.fields)}
		switch ft := sf.Type; {
		case ft == numberType:
			fr.kind = kindNumber
		case ft.Kind() == reflect.String:
			fr.kind = kindString
		case ft.Kind() == reflect.Int:
			fr.kind = kindInt
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Int:
			fr.kind = kindIntPtr
		case ft.Kind() == reflect.Slice:
			fr.kind = kindSlice
		default:
			return nil, fmt.Errorf("field %s: type %s takes no rules", sf.Name, ft)
		}
		for _, r := range ParseRules(tag) {
			var err error
			switch code := r.Name; {
			case code == "required" || code == "omitempty":
			case code == "integer" && fr.kind == kindNumber:
			case code == "oneof" && fr.kind == kindString:
			case (code == "gt" || code == "gte" || code == "lt" || code == "lte") && fr.kind == kindNumber:
				b.dec[r.Param], err = decimal.NewFromString(r.Param)
			case (code == "gt" || code == "gte" || code == "lt" || code == "lte") && (fr.kind == kindInt || fr.kind == kindIntPtr),
				(code == "min" || code == "max") && fr.kind != kindNumber,
				code == "max_bytes" && fr.kind == kindString:
				b.n[r.Param], err = strconv.ParseInt(r.Param, 10, 64)
			default:
				return nil, fmt.Errorf("field %s: rule %q does not apply to %s", sf.Name, r.Name+"="+r.Param, sf.Type)
			}
			if err != nil {
				return nil, fmt.Errorf("field %s: rule %q: %w", sf.Name, r.Name+"="+r.Param, err)
			}
		}
		c.fields = append(c.fields, fr)
	}
	if len(c.fields) > 64 {
		return nil, fmt.Errorf("%d fields with rules, at most 64", len(c.fields))
	}
	for i := range c.fields {
		fr := &c.fields[i]
		c.byGo[t.FieldByIndex(fr.index).Name] = fr
	}
	v, err := b.validator(t)
	if err != nil {
		return nil, err
	}
	c.v = v
	return c, nil
}

// validator returns a validator with the rules of b, the tags of t read.
func (b bounds) validator(t reflect.Type) (v *validator.Validate, err error) {
	v = validator.New(validator.WithRequiredStructEnabled())
	// A set Number is validated as its decimal, an unset one as nothing.
	v.RegisterCustomTypeFunc(func(f reflect.Value) any {
		n := f.Interface().(Number)
		switch {
		case !n.set:
			return nil
		case n.d == (decimal.Decimal{}):
			return exactDecimal{decimal.Zero} // the zero value of a decimal is a set 0, which required must see as given
		}
		return exactDecimal{n.d}
	}, Number{})
	for code, keep := range map[string]func(c int) bool{
		"gt":  func(c int) bool { return c > 0 },
		"gte": func(c int) bool { return c >= 0 },
		"lt":  func(c int) bool { return c < 0 },
		"lte": func(c int) bool { return c <= 0 },
	} {
		if err := v.RegisterValidation(code, func(fl validator.FieldLevel) bool {
			return keep(b.compare(fl.Field(), fl.Param()))
		}); err != nil {
			return nil, err
		}
	}
	if err := v.RegisterValidation("integer", func(fl validator.FieldLevel) bool {
		d, ok := fl.Field().Interface().(exactDecimal)
		return ok && d[0].IsInteger()
	}); err != nil {
		return nil, err
	}
	if err := v.RegisterValidation("max_bytes", func(fl validator.FieldLevel) bool {
		f := fl.Field()
		return f.Kind() == reflect.String && int64(f.Len()) <= b.n[fl.Param()]
	}); err != nil {
		return nil, err
	}
	// Read the tags of t now, so that the validator is complete before
	// any use and only read after.
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("%v", p)
		}
	}()
	if err := v.Struct(reflect.New(t).Interface()); err != nil && !errors.As(err, new(validator.ValidationErrors)) {
		return nil, err
	}
	return v, nil
}

// exactDecimal is a set Number as the validator sees it: an array, which
// it neither walks into as it does a struct nor converts to float64.
type exactDecimal [1]decimal.Decimal

// compare compares the value of a field (a Number's decimal or an integer)
// with the bound param: -1, 0 or +1.
func (b bounds) compare(f reflect.Value, param string) int {
	if d, ok := f.Interface().(exactDecimal); ok {
		return d[0].Cmp(b.dec[param])
	}
	return cmp.Compare(f.Int(), b.n[param])
}

// check checks the validate tags of *req and records every failure in fe,
// field names prefixed by prefix ("bars[3]"; "" for the request itself).
func (tr tagRules[T]) check(fe *fieldErrors, prefix string, req *T) {
	// By value: the validator then reads the fields of a copy that it
	// does not copy again field by field.
	tr.compiled.check(fe, prefix, reflect.ValueOf(req).Elem(), *req)
}

// fieldError is a failure and the position of its field.
type fieldError struct {
	pos int
	FieldError
}

func (c *compiled) check(fe *fieldErrors, prefix string, v reflect.Value, req any) {
	var out []fieldError
	var outOfRange uint64 // bit pos: a Number held to its range failed
	for i := range c.fields {
		fr := &c.fields[i]
		if fr.kind != kindNumber {
			continue
		}
		n := v.FieldByIndex(fr.index).Addr().Interface().(*Number)
		if k := len(*fe); !n.checkRange(fe, fr.path(prefix)) {
			out = append(out, fieldError{fr.pos, (*fe)[k]})
			*fe = (*fe)[:k]
			outOfRange |= 1 << fr.pos
		}
	}
	err := c.v.Struct(req)
	var ves validator.ValidationErrors
	if err != nil && !errors.As(err, &ves) {
		panic(fmt.Sprintf("svc: validate %T: %v", req, err)) // programming error: compiled types validate
	}
	for _, e := range ves {
		fr := c.byGo[e.StructField()]
		if fr == nil || outOfRange&(1<<fr.pos) != 0 {
			continue
		}
		field := fr.path(prefix)
		out = append(out, fieldError{fr.pos, newFieldError(field, e.Tag(), fr.message(e.Tag(), e.Param(), v.FieldByIndex(fr.index)))})
	}
	slices.SortStableFunc(out, func(a, b fieldError) int { return cmp.Compare(a.pos, b.pos) })
	for _, e := range out {
		*fe = append(*fe, e.FieldError)
	}
}

// path returns the field's name under prefix.
func (fr *fieldRules) path(prefix string) string {
	if prefix == "" {
		return fr.name
	}
	return prefix + "." + fr.name
}

// message says why the value f of the field breaks the rule code with
// parameter param.
func (fr *fieldRules) message(code, param string, f reflect.Value) string {
	if code == "required" {
		return "is required"
	}
	switch fr.kind {
	case kindNumber:
		switch code {
		case "gt":
			return "must be greater than " + param
		case "gte":
			return "must be at least " + param
		case "lt":
			return "must be less than " + param
		case "lte":
			return "must be at most " + param
		case "integer":
			return "must be a whole number, got " + f.Interface().(Number).String()
		}
	case kindString:
		switch code {
		case "oneof":
			return "must be one of: " + strings.Join(strings.Fields(param), ", ")
		case "min":
			return "must have at least " + param + " characters"
		case "max":
			return "must have at most " + param + " characters"
		case "max_bytes":
			return fmt.Sprintf("must be at most %s bytes, got %d", param, f.Len())
		}
	case kindSlice:
		switch code {
		case "min":
			return "must have at least " + param + " items"
		case "max":
			return "must have at most " + param + " items"
		}
	case kindInt, kindIntPtr:
		switch code {
		case "min", "gte":
			return "must be at least " + param
		case "max", "lte":
			return "must be at most " + param
		case "gt":
			return "must be greater than " + param
		case "lt":
			return "must be less than " + param
		}
	}
	return "breaks rule " + code
}

// tooLarge turns the failures of fe into a KindTooLarge error with message
// msg when one of them is a max_bytes rule (an input too large to look at),
// else into fe.err().
func (fe fieldErrors) tooLarge(msg string) error {
	for _, f := range fe {
		if f.Rule == "max_bytes" {
			return &Error{Kind: KindTooLarge, Message: msg, Fields: fe}
		}
	}
	return fe.err()
}

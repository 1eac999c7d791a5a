package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/seed1284c1d2/svc"
)

// SchemaDialect is the JSON Schema dialect of every published schema.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// numberNote ends the description of every input schema that holds a
// number: svc.Number also decodes from a string holding a decimal.
const numberNote = "Numbers are JSON numbers; a string holding a decimal (\"3500.25\") is accepted too and read exactly."

// typeSchemas maps the Go types that jsonschema.For cannot infer to their
// schemas: svc.Number is a JSON number (decimal strings are also accepted
// on input, as numberNote says), json.RawMessage is any JSON value and
// time.Time an RFC 3339 string.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		numberType:                   {Type: "number"},
		rawMessageType:               {},
		reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
	}
}

// inputSchema builds the JSON Schema of a request type: jsonschema.For,
// then the structure of the decoder's shape (required members, arrays that
// may not be null), the validate tags of the Go fields, field descriptions
// and defaults.
func inputSchema(t reflect.Type, sh *shape, m *meta) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, fmt.Errorf("inferring the input schema: %w", err)
	}
	if err := alignInput(s, sh, ""); err != nil {
		return nil, err
	}
	nullOptional(s, sh)
	if err := annotate(s, m.fields, m.defaults); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	s.Schema = SchemaDialect
	s.Title = m.operationID + " input"
	where := "the JSON request body"
	if m.location == InputQuery {
		where = "the query parameters"
	}
	s.Description = fmt.Sprintf("Input of %s, sent as %s.", m.operationID, where)
	if m.location == InputQuery {
		s.Description += " Unknown query parameters are invalid (ref and src, which carry attribution, excepted), as are unknown members of a JSON input object (MCP, A2A, /api/route); a parameter of the tool given twice is invalid (no value is picked)."
	} else {
		s.Description += " Unknown members are invalid."
	}
	if slices.ContainsFunc(sh.fields, func(f *shapeField) bool { return !f.required }) {
		s.Description += " An optional member given as null counts as not given."
	}
	if hasNumber(sh) {
		s.Description += " " + numberNote
	}
	return s, nil
}

// hasNumber reports whether a shape holds a svc.Number anywhere.
func hasNumber(sh *shape) bool {
	switch sh.kind {
	case kindNumber:
		return true
	case kindArray:
		return hasNumber(sh.elem)
	case kindObject:
		return slices.ContainsFunc(sh.fields, func(f *shapeField) bool { return hasNumber(f.shape) })
	}
	return false
}

// outputSchema builds the JSON Schema of a response type. Objects allow
// additional members: every paid response may carry fields beyond those
// listed.
func outputSchema(t reflect.Type, m *meta) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		return nil, fmt.Errorf("inferring the output schema: %w", err)
	}
	openObjects(s)
	if err := annotate(s, m.outFields, nil); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	s.Schema = SchemaDialect
	s.Title = m.operationID + " output"
	s.Description = fmt.Sprintf("Output of %s (HTTP 200, application/json). Responses may carry members beyond those listed.", m.operationID)
	return s, nil
}

// openObjects removes "additionalProperties": false from every object
// schema in s (map value schemas are kept).
func openObjects(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if isFalse(s.AdditionalProperties) {
		s.AdditionalProperties = nil
	} else {
		openObjects(s.AdditionalProperties)
	}
	for _, p := range s.Properties {
		openObjects(p)
	}
	openObjects(s.Items)
}

// isFalse reports whether s is the schema false ({"not": {}}).
func isFalse(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	b, err := json.Marshal(s)
	return err == nil && string(b) == "false"
}

// alignInput makes the inferred schema s agree with the decoder's shape:
// the required members, arrays that are not pointers cannot be null (the
// decoder rejects null there), and the validate tags of the Go fields.
func alignInput(s *jsonschema.Schema, sh *shape, path string) error {
	switch sh.kind {
	case kindArray:
		if !sh.nullable {
			s.Types, s.Type = nil, "array"
		}
		if s.Items == nil {
			return fmt.Errorf("schema of %s has no items", path)
		}
		return alignInput(s.Items, sh.elem, path+"[]")
	case kindObject:
		for _, f := range sh.fields {
			p, ok := s.Properties[f.name]
			if !ok {
				return fmt.Errorf("schema has no property %s", joinPath(path, f.name))
			}
			if err := alignInput(p, f.shape, joinPath(path, f.name)); err != nil {
				return err
			}
			if f.validate != "" {
				req, err := applyTags(p, f.shape, f.validate)
				if err != nil {
					return fmt.Errorf("validate tag of %s: %w", joinPath(path, f.name), err)
				}
				f.required = f.required || req
			}
		}
		s.Required = nil
		for _, f := range sh.fields {
			if f.required {
				s.Required = append(s.Required, f.name)
			}
		}
	}
	return nil
}

// nullOptional lets every optional member of the objects in s be null, as
// the decoder does (null means "not given"): "null" joins the member's
// type and, when it has one, its enum. Required members stay non-null.
func nullOptional(s *jsonschema.Schema, sh *shape) {
	switch sh.kind {
	case kindArray:
		if s.Items != nil {
			nullOptional(s.Items, sh.elem)
		}
	case kindObject:
		for _, f := range sh.fields {
			p, ok := s.Properties[f.name]
			if !ok {
				continue
			}
			nullOptional(p, f.shape)
			if !f.required {
				allowNull(p)
			}
		}
	}
}

// allowNull adds null to the values s allows.
func allowNull(s *jsonschema.Schema) {
	switch {
	case s.Type != "" && s.Type != "null":
		s.Types, s.Type = []string{"null", s.Type}, ""
	case len(s.Types) > 0 && !slices.Contains(s.Types, "null"):
		s.Types = append([]string{"null"}, s.Types...)
	}
	if s.Enum != nil && !slices.Contains(s.Enum, any(nil)) {
		s.Enum = append(s.Enum, nil)
	}
}

// schemaAt returns the schema at a descriptor path ("bars[].open").
func schemaAt(s *jsonschema.Schema, path string) (*jsonschema.Schema, error) {
	cur := s
	for _, seg := range splitPath(path) {
		if seg == "[]" {
			if cur.Items == nil {
				return nil, fmt.Errorf("path %q: not an array", path)
			}
			cur = cur.Items
			continue
		}
		p, ok := cur.Properties[seg]
		if !ok {
			return nil, fmt.Errorf("path %q: no property %q", path, seg)
		}
		cur = p
	}
	return cur, nil
}

// applyTags turns the validate tags of the root package's request types
// (the one source of their rules, enforced by the tools themselves) into
// JSON Schema keywords on s, the schema of a value of shape sh:
//
//	required          the member is required (reported to the caller); a
//	                  string must also be non-empty (minLength 1)
//	omitempty         nothing (the rules apply when the value is given)
//	oneof=a b c       enum
//	min=, max=        minimum/maximum (numbers), minLength/maxLength
//	                  (strings, in characters), minItems/maxItems (arrays)
//	gt=, gte=, lt=, lte=
//	                  exclusiveMinimum, minimum, exclusiveMaximum, maximum
//	integer           multipleOf 1
//	max_bytes=n       maxLength n (a byte limit: a string of n characters
//	                  can still be too long in bytes)
//
// Any other tag is an error: a rule the schema cannot show (a rule across
// fields) is checked in code and described in words in the descriptor.
func applyTags(s *jsonschema.Schema, sh *shape, tags string) (required bool, err error) {
	for _, r := range svc.ParseRules(tags) {
		name, param := r.Name, r.Param
		tag := name
		if param != "" {
			tag += "=" + param
		}
		numeric := sh.kind == kindInteger || sh.kind == kindNumber
		num := func() (*float64, error) {
			f, err := strconv.ParseFloat(param, 64)
			if err != nil {
				return nil, fmt.Errorf("tag %q: %q is not a number", tag, param)
			}
			return &f, nil
		}
		count := func() (*int, error) {
			n, err := strconv.Atoi(param)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("tag %q: %q is not a count", tag, param)
			}
			return &n, nil
		}
		switch name {
		case "":
		case "omitempty":
		case "required":
			required = true
			if sh.kind == kindString && (s.MinLength == nil || *s.MinLength < 1) {
				s.MinLength = jsonschema.Ptr(1)
			}
		case "oneof":
			var enum []any
			for v := range strings.FieldsSeq(param) {
				switch sh.kind {
				case kindString:
					enum = append(enum, v)
				case kindInteger, kindNumber:
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						return false, fmt.Errorf("tag %q: %q is not a number", tag, v)
					}
					enum = append(enum, f)
				default:
					return false, fmt.Errorf("tag %q on a %s", tag, sh.kind)
				}
			}
			if sh.nullable {
				enum = append(enum, nil)
			}
			s.Enum = enum
		case "min", "max":
			switch {
			case numeric:
				f, err := num()
				if err != nil {
					return false, err
				}
				if name != "max" {
					s.Minimum = f
				}
				if name != "min" {
					s.Maximum = f
				}
			case sh.kind == kindString || sh.kind == kindArray:
				n, err := count()
				if err != nil {
					return false, err
				}
				lo, hi := &s.MinLength, &s.MaxLength
				if sh.kind == kindArray {
					lo, hi = &s.MinItems, &s.MaxItems
				}
				if name != "max" {
					*lo = n
				}
				if name != "min" {
					*hi = n
				}
			default:
				return false, fmt.Errorf("tag %q on a %s", tag, sh.kind)
			}
		case "gt", "gte", "lt", "lte":
			if !numeric {
				return false, fmt.Errorf("tag %q on a %s", tag, sh.kind)
			}
			f, err := num()
			if err != nil {
				return false, err
			}
			switch name {
			case "gt":
				s.ExclusiveMinimum = f
			case "gte":
				s.Minimum = f
			case "lt":
				s.ExclusiveMaximum = f
			case "lte":
				s.Maximum = f
			}
		case "integer":
			if !numeric {
				return false, fmt.Errorf("tag %q on a %s", tag, sh.kind)
			}
			s.MultipleOf = jsonschema.Ptr(1.0)
		case "max_bytes":
			if sh.kind != kindString {
				return false, fmt.Errorf("tag %q on a %s", tag, sh.kind)
			}
			n, err := count()
			if err != nil {
				return false, err
			}
			s.MaxLength = n
		default:
			return false, fmt.Errorf("tag %q cannot be shown in a JSON Schema; describe the rule in words", tag)
		}
	}
	if s.Enum != nil && s.MinLength != nil && *s.MinLength == 1 {
		s.MinLength = nil // the enum says it all
	}
	return required, nil
}

// annotate sets the descriptions and defaults of the members at the given
// descriptor paths. An unknown path is an error.
func annotate(s *jsonschema.Schema, docs map[string]string, defaults map[string]string) error {
	for _, path := range sortedKeys(docs) {
		node, err := schemaAt(s, path)
		if err != nil {
			return fmt.Errorf("description of %s: %w", path, err)
		}
		node.Description = docs[path]
	}
	for _, path := range sortedKeys(defaults) {
		node, err := schemaAt(s, path)
		if err != nil {
			return fmt.Errorf("default of %s: %w", path, err)
		}
		if !json.Valid([]byte(defaults[path])) {
			return fmt.Errorf("default of %s is not JSON: %s", path, defaults[path])
		}
		node.Default = json.RawMessage(defaults[path])
	}
	return nil
}

// sortedKeys returns the keys of m in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

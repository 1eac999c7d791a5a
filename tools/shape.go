package tools

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/seed1284c1d2/svc"
)

// kind is the JSON type an input field takes.
type kind uint8

// The kinds of input values. kindNumber is svc.Number: a JSON number or a
// string holding a decimal. kindAny is json.RawMessage: any JSON value.
const (
	kindObject kind = iota + 1
	kindArray
	kindString
	kindBoolean
	kindInteger
	kindNumber
	kindAny
)

// String returns the JSON Schema type name of k, which is also the rule
// name of a value of the wrong type ("count must be an integer": rule
// "integer").
func (k kind) String() string {
	switch k {
	case kindObject:
		return "object"
	case kindArray:
		return "array"
	case kindString:
		return "string"
	case kindBoolean:
		return "boolean"
	case kindInteger:
		return "integer"
	case kindNumber:
		return "number"
	case kindAny:
		return "any"
	}
	return "unknown"
}

// article returns "a" or "an" for the kind's name.
func (k kind) article() string {
	switch k {
	case kindObject, kindArray, kindInteger, kindAny:
		return "an"
	}
	return "a"
}

// shape is the structure of a request type as the strict decoder sees it:
// which JSON type each field takes, which members an object has and which
// are required. It is derived once from the request's Go type by
// reflection, with the same rules jsonschema.For uses (json tag names,
// omitempty/omitzero make a member optional), so that the published schema
// and the decoder agree by construction.
type shape struct {
	kind     kind
	nullable bool // a pointer: JSON null means "not given"
	typ      reflect.Type
	fields   []*shapeField // objects, in declaration order
	byName   map[string]*shapeField
	elem     *shape // arrays
	// words are the values a string member may take by its validate tag's
	// oneof rule: the decoder hands them out instead of copying the
	// bytes (no allocation for "long", "M5", ...).
	words []string
	// text: a string whose Go type decodes itself with UnmarshalText.
	text bool
}

// shapeField is one member of an object shape.
type shapeField struct {
	name     string
	required bool
	shape    *shape
	// index is the field's index path in the Go struct.
	index []int
	// validate is the field's `validate` tag.
	validate string
	// pos is the field's position in its object's fields (its bit in the
	// walker's set of members seen).
	pos int
}

// oneofWords returns the words of the oneof rule of a validate tag
// ("required,oneof=long short" → long, short), or nil.
func oneofWords(tag string) []string {
	for _, r := range svc.ParseRules(tag) {
		if r.Name == "oneof" {
			return strings.Fields(r.Param)
		}
	}
	return nil
}

// word returns the string of raw, without copying it when it is one of
// the shape's words.
func (s *shape) word(raw []byte) string {
	for _, w := range s.words {
		if w == string(raw) {
			return w
		}
	}
	return string(raw)
}

// field returns the member of an object shape named key (nil for none): a
// scan of the fields for the small objects of requests, which is cheaper
// than hashing the key, and the map for larger ones.
func (s *shape) field(key []byte) *shapeField {
	if len(s.fields) > 8 {
		return s.byName[string(key)]
	}
	for _, f := range s.fields {
		if f.name == string(key) {
			return f
		}
	}
	return nil
}

// names returns the member names of an object shape, in order.
func (s *shape) names() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.name
	}
	return out
}

var (
	numberType     = reflect.TypeFor[svc.Number]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// shapeOf derives the shape of t. Request types may hold structs, slices,
// pointers, strings, bools, integers, svc.Number and json.RawMessage;
// anything else (floats, maps, interfaces, other JSON marshalers) is a
// programming error reported here, so that a new tool cannot publish a
// schema the decoder does not enforce.
func shapeOf(t reflect.Type) (*shape, error) {
	return shapeOfType(t, map[reflect.Type]bool{})
}

func shapeOfType(t reflect.Type, seen map[reflect.Type]bool) (*shape, error) {
	nullable := false
	for t.Kind() == reflect.Pointer {
		nullable = true
		t = t.Elem()
	}
	s := &shape{typ: t, nullable: nullable}
	switch {
	case t == numberType:
		s.kind = kindNumber
		return s, nil
	case t == rawMessageType:
		s.kind = kindAny
		s.nullable = true
		return s, nil
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil, fmt.Errorf("type %s has its own JSON decoding, which the strict decoder cannot follow", t)
	}
	if pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		if t.Kind() != reflect.String {
			return nil, fmt.Errorf("type %s decodes itself from text but is not a string", t)
		}
		s.text = true
	}
	switch t.Kind() {
	case reflect.String:
		s.kind = kindString
	case reflect.Bool:
		s.kind = kindBoolean
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s.kind = kindInteger
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, fmt.Errorf("type %s is a byte slice (base64 in JSON), which the strict decoder does not take", t)
		}
		s.kind = kindArray
		elem, err := shapeOfType(t.Elem(), seen)
		if err != nil {
			return nil, fmt.Errorf("elements of %s: %w", t, err)
		}
		s.elem = elem
	case reflect.Struct:
		if seen[t] {
			return nil, fmt.Errorf("recursive type %s", t)
		}
		seen[t] = true
		defer delete(seen, t)
		s.kind = kindObject
		s.byName = map[string]*shapeField{}
		for _, sf := range reflect.VisibleFields(t) {
			if sf.Anonymous || !sf.IsExported() {
				continue
			}
			name, opts, hasOpts := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" && !hasOpts {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			fs, err := shapeOfType(sf.Type, seen)
			if err != nil {
				return nil, fmt.Errorf("field %s.%s: %w", t, sf.Name, err)
			}
			optional := false
			for o := range strings.SplitSeq(opts, ",") {
				switch o {
				case "omitempty", "omitzero":
					optional = true
				case "string":
					return nil, fmt.Errorf("field %s.%s: the json option \",string\" is not supported in a request", t, sf.Name)
				}
			}
			f := &shapeField{name: name, required: !optional, shape: fs, index: sf.Index, validate: sf.Tag.Get("validate"),
				pos: len(s.fields)}
			if fs.kind == kindString {
				fs.words = oneofWords(f.validate)
			}
			if _, dup := s.byName[name]; dup {
				return nil, fmt.Errorf("type %s: two fields named %q", t, name)
			}
			s.fields = append(s.fields, f)
			s.byName[name] = f
		}
	default:
		return nil, fmt.Errorf("type %s (%s) is not supported in a request", t, t.Kind())
	}
	return s, nil
}

// lookup returns the shape at a descriptor path such as "bars[].open",
// with the field holding it (nil for array elements).
func (s *shape) lookup(path string) (*shape, *shapeField, error) {
	cur := s
	var field *shapeField
	for _, seg := range splitPath(path) {
		if seg == "[]" {
			if cur.kind != kindArray {
				return nil, nil, fmt.Errorf("path %q: %q is not an array", path, seg)
			}
			cur, field = cur.elem, nil
			continue
		}
		if cur.kind != kindObject {
			return nil, nil, fmt.Errorf("path %q: no object holds %q", path, seg)
		}
		f := cur.byName[seg]
		if f == nil {
			return nil, nil, fmt.Errorf("path %q: no field %q", path, seg)
		}
		cur, field = f.shape, f
	}
	return cur, field, nil
}

// splitPath splits a descriptor path ("bars[].open") into its segments
// ("bars", "[]", "open").
func splitPath(path string) []string {
	var out []string
	for part := range strings.SplitSeq(path, ".") {
		n := 0
		for strings.HasSuffix(part, "[]") {
			part = strings.TrimSuffix(part, "[]")
			n++
		}
		if part != "" {
			out = append(out, part)
		}
		for range n {
			out = append(out, "[]")
		}
	}
	return out
}

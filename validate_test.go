package svc

import (
	"reflect"
	"testing"
)

// TestValidateTagsCompile compiles the validate tags of every request type
// (a malformed tag would panic on first use) and checks that the engine
// refuses tags it cannot enforce.
func TestValidateTagsCompile(t *testing.T) {
	for _, req := range []any{
		SessionStateRequest{}, RiskLevelsRequest{}, StrategyGradeRequest{}, XAUQuoteRequest{}, XAUBarsRequest{},
		XAUMarketStateRequest{}, CSVProfileRequest{}, JSONShapeRequest{}, JWTDecodeRequest{}, TickPnLRequest{},
		EVMAddressSyntaxRequest{}, OHLCVStateRequest{}, OHLCVBar{}, RegexTestRequest{},
	} {
		if _, err := compileRules(reflect.TypeOf(req)); err != nil {
			t.Errorf("%T: %v", req, err)
		}
	}
	type bad struct {
		A Number `validate:"gt=x"`
		B string `validate:"gt=0"`
		C []int  `validate:"oneof=a b"`
		D Number `validate:"max_bytes=3"`
		E bool   `validate:"required"`
		F Number `validate:"email"`
	}
	bt := reflect.TypeFor[bad]()
	for i := range bt.NumField() {
		f := bt.Field(i)
		one := reflect.StructOf([]reflect.StructField{{Name: f.Name, Type: f.Type, Tag: f.Tag}})
		if _, err := compileRules(one); err == nil {
			t.Errorf("%s %s `%s` compiles", f.Name, f.Type, f.Tag)
		}
	}
}

// TestValidateStructRules runs each kind of rule on a value that keeps it
// and one that breaks it.
func TestValidateStructRules(t *testing.T) {
	type req struct {
		N Number   `json:"n" validate:"required,gte=0,lte=100,integer"`
		P Number   `json:"p,omitzero" validate:"omitempty,gt=0"`
		S string   `json:"s" validate:"required,oneof=a b"`
		T string   `json:"t" validate:"max=3"`
		B string   `json:"b" validate:"max_bytes=3"`
		I *int     `json:"i" validate:"omitempty,min=2,max=4"`
		L []string `json:"l" validate:"required,min=1,max=2"`
	}
	tags := compileTags[req]()
	five := 5
	for _, c := range []struct {
		r    req
		want map[string]string
	}{
		{req{N: N(7), S: "a", T: "äöü", B: "abc", L: []string{"x"}}, map[string]string{}},
		{req{}, map[string]string{"n": "required", "s": "required", "l": "required"}},
		{req{N: N(-1), P: N(0), S: "c", T: "abcd", B: "ä ö", I: &five, L: []string{}},
			map[string]string{"n": "gte", "p": "gt", "s": "oneof", "t": "max", "b": "max_bytes", "i": "max", "l": "min"}},
		{req{N: MustNumber("100.5"), S: "b", L: []string{"x", "y", "z"}}, map[string]string{"n": "lte", "l": "max"}},
		{req{N: MustNumber("2.5"), S: "b", L: []string{"x"}}, map[string]string{"n": "integer"}},
		{req{N: MustNumber("1e30"), S: "b", L: []string{"x"}}, map[string]string{"n": "max_magnitude"}},
	} {
		var fe fieldErrors
		tags.check(&fe, "", &c.r)
		got := map[string]string{}
		for _, e := range fe {
			if _, dup := got[e.Field]; dup || e.Message == "" {
				t.Errorf("%+v: field %s reported twice or without a message: %+v", c.r, e.Field, fe)
			}
			got[e.Field] = e.Rule
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.r, got, c.want)
		}
	}
}

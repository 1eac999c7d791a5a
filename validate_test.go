package svc

import (
	"reflect"
	"sync"
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

// TestValidateExactBounds: bounds compare exact decimals, where float64
// would round the value onto the bound.
func TestValidateExactBounds(t *testing.T) {
	type req struct {
		G Number `json:"g" validate:"required,gt=0.1"`
		L Number `json:"l" validate:"required,lte=100"`
	}
	tags := compileTags[req]()
	for _, c := range []struct {
		g, l string
		want map[string]string
	}{
		{"0.10000000000000000001", "100", map[string]string{}},
		{"0.1", "100.00000000000000001", map[string]string{"g": "gt", "l": "lte"}},
		{"0.09999999999999999999", "99.99999999999999999", map[string]string{"g": "gt"}},
	} {
		r := req{G: MustNumber(c.g), L: MustNumber(c.l)}
		var fe fieldErrors
		tags.check(&fe, "", &r)
		got := map[string]string{}
		for _, e := range fe {
			got[e.Field] = e.Rule
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("g=%s l=%s: %v, want %v", c.g, c.l, got, c.want)
		}
	}
}

// TestValidateConcurrent checks one compiled request type from many
// goroutines (run with -race: the compiled rules are only read).
func TestValidateConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				r := RiskLevelsRequest{Entry: N(int64(i*j - 100)), Direction: Long, SlPct: N(1), TpPct: N(2)}
				var fe fieldErrors
				riskLevelsTags.check(&fe, "", &r)
				if (len(fe) == 0) != (i*j > 100) {
					t.Errorf("entry %d: %v", i*j-100, fe)
					return
				}
			}
		}()
	}
	wg.Wait()
}

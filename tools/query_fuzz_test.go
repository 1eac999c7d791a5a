package tools_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/tools"
)

// FuzzDecodeQuery: no query string makes a tool's query decoding panic;
// it either fails as invalid input naming fields, or gives a call whose
// own query decodes to the same call.
func FuzzDecodeQuery(f *testing.F) {
	cat, err := tools.New(tools.Options{})
	if err != nil {
		f.Fatal(err)
	}
	list := cat.All()
	for _, t := range list {
		call, err := t.DecodeJSON(context.Background(), t.ExampleInput)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(call.Query().Encode())
	}
	for _, s := range []string{"count=abc", "count=1e3&timeframe=H1", "dateTime=2025-03-31", "x=%zz", "entry=1e999&direction=long",
		"slPct=-0&tpPct=0.04&entry=3500&direction=short", "pattern=(a&flags=gu&input=", "address=0x" + "ab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw) // what net/http hands a handler, parse errors or not
		for _, tool := range list {
			call, err := tool.DecodeQuery(context.Background(), q)
			if err != nil {
				var se *svc.Error
				if !errors.As(err, &se) || se.Kind != svc.KindInvalid {
					t.Fatalf("%s %q: error %T %v, want invalid input", tool.Key, raw, err, err)
				}
				if len(se.Fields) == 0 {
					t.Fatalf("%s %q: invalid input without a field: %v", tool.Key, raw, err)
				}
				continue
			}
			again, err := tool.DecodeQuery(context.Background(), call.Query())
			if err != nil {
				t.Fatalf("%s %q: its own query %q does not decode: %v", tool.Key, raw, call.Query().Encode(), err)
			}
			if a, b := call.Query().Encode(), again.Query().Encode(); a != b {
				t.Fatalf("%s %q: query %q decodes to %q", tool.Key, raw, a, b)
			}
		}
	})
}

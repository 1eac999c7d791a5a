package tools_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/tools"
)

// TestFingerprint: a call's fingerprint depends on its decoded values, the
// transport and the name, not on how the input was written (JSON spacing,
// member order, number spelling, query parameter order).
func TestFingerprint(t *testing.T) {
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fp := func(key, input string) string {
		t.Helper()
		tool, ok := cat.ByKey(key)
		if !ok {
			t.Fatalf("no tool %s", key)
		}
		var c *tools.Call
		if strings.HasPrefix(input, "?") {
			c, err = tool.Decode(ctx, httptest.NewRequest(tool.Method, tool.Path+input, nil))
		} else {
			c, err = tool.DecodeJSON(ctx, []byte(input))
		}
		if err != nil {
			t.Fatalf("%s %s: %v", key, input, err)
		}
		return c.Fingerprint("http", key)
	}
	risk := fp("risk-levels", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	for _, same := range []string{
		`{"tpPct":0.04,"slPct":0.05,"direction":"long","entry":3500}`,
		"\t{ \"entry\" : 3500.0,\r\n\"direction\":\"long\", \"slPct\":5e-2, \"tpPct\":0.040 }\n",
	} {
		if fp("risk-levels", same) != risk {
			t.Errorf("%s: another fingerprint", same)
		}
	}
	if fp("risk-levels", `{"entry":3500.5,"direction":"long","slPct":0.05,"tpPct":0.04}`) == risk {
		t.Error("another value, the same fingerprint")
	}
	bars := fp("xau-bars", "?timeframe=M5&count=20")
	if fp("xau-bars", "?count=20&timeframe=M5") != bars {
		t.Error("the order of query parameters changes the fingerprint")
	}
	if fp("xau-bars", "?count=21&timeframe=M5") == bars {
		t.Error("another value, the same fingerprint")
	}
	if fp("risk-levels", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`) != risk {
		t.Error("the same call, another fingerprint")
	}
}

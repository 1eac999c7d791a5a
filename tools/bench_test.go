package tools_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/svctest"
	"github.com/seed1284c1d2/svc/tools"
)

// BenchmarkDecodeCSVProfile measures Decode of a csv_profile body just
// under the default 2 MiB limit: the strict walk, the decode and the
// validating run (which is the whole profile; Run then costs nothing).
func BenchmarkDecodeCSVProfile(b *testing.B) {
	c, err := tools.New(tools.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tl, _ := c.ByKey("csv-profile")
	doc, _ := json.Marshal(string(svctest.GenerateCSV(1800<<10, 1)))
	body := `{"csv":` + string(doc) + `}`
	if len(body) > int(c.BodyLimit()) {
		b.Fatalf("body of %d bytes", len(body))
	}
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, tl.Path, strings.NewReader(body))
		if _, err := tl.Decode(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRiskLevels measures Decode of a small body.
func BenchmarkDecodeRiskLevels(b *testing.B) {
	c, err := tools.New(tools.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tl, _ := c.ByKey("risk-levels")
	ctx := context.Background()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, tl.Path, strings.NewReader(`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`))
		if _, err := tl.Decode(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

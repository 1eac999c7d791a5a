package svc_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// jsonShapeBenchDoc is the 10 MB document of the JSON benchmarks (an array
// of nested records, see svctest.GenerateJSON), built once.
var jsonShapeBenchDoc = sync.OnceValue(func() []byte { return svctest.GenerateJSON(10<<20, 1) })

// BenchmarkJSONShape10MB walks a 10 MB document; compare its MB/s with
// BenchmarkJSONUnmarshalAny10MB (target: at least as fast).
func BenchmarkJSONShape10MB(b *testing.B) {
	req := svc.JSONShapeRequest{Value: jsonShapeBenchDoc()}
	b.SetBytes(int64(len(req.Value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.JSONShape(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONUnmarshalAny10MB decodes the same bytes into an any with
// encoding/json, the baseline of BenchmarkJSONShape10MB.
func BenchmarkJSONUnmarshalAny10MB(b *testing.B) {
	doc := jsonShapeBenchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONShapeVsUnmarshalAny10MB runs both in alternation and reports
// the ratio of their best times (throughput of JSONShape relative to
// json.Unmarshal into any; target ≥ 1), which stays meaningful on a busy
// machine.
func BenchmarkJSONShapeVsUnmarshalAny10MB(b *testing.B) {
	doc := jsonShapeBenchDoc()
	req := svc.JSONShapeRequest{Value: doc}
	b.SetBytes(int64(2 * len(doc)))
	bestShape, bestUnmarshal := time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		start := time.Now()
		if _, err := svc.JSONShape(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		bestShape = min(bestShape, time.Since(start))
		start = time.Now()
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
		bestUnmarshal = min(bestUnmarshal, time.Since(start))
	}
	b.ReportMetric(float64(bestUnmarshal)/float64(bestShape), "throughput-ratio")
	b.ReportMetric(float64(len(doc))/bestShape.Seconds()/1e6, "shape-MB/s")
	b.ReportMetric(float64(len(doc))/bestUnmarshal.Seconds()/1e6, "unmarshal-MB/s")
}

package finder

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkFind runs every query of the evaluation sets (on-topic and
// off-topic, both halves) once per iteration against the catalog's
// documents and reports the cost per query (ns/query) and the
// 99th percentile of the per-query durations (p99-ns/query; target under
// 100 µs).
func BenchmarkFind(b *testing.B) {
	f := New(findCatalogDocs(b))
	var queries []string
	for _, in := range findLoadIntents(b, "find_eval.json") {
		queries = append(queries, in.Query)
	}
	for _, in := range findLoadIntents(b, "find_holdout.json") {
		queries = append(queries, in.Query)
	}
	offTune, offHold := routeOffTopic(b)
	queries = append(append(queries, offTune...), offHold...)
	durations := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, q := range queries {
			start := time.Now()
			_ = f.Find(q, 5)
			if len(durations) < cap(durations) {
				durations = append(durations, time.Since(start))
			}
		}
	}
	b.StopTimer()
	perQuery := float64(b.Elapsed().Nanoseconds()) / float64(b.N*len(queries))
	b.ReportMetric(perQuery, "ns/query")
	slices.Sort(durations)
	if len(durations) > 0 {
		b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns/query")
	}
}

// BenchmarkNewFinder measures building the index of the catalog.
func BenchmarkNewFinder(b *testing.B) {
	docs := findCatalogDocs(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = New(docs)
	}
}

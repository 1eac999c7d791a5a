package svc_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// csvBenchDoc is the 10 MB document of the CSV benchmarks (8 mixed
// columns, see svctest.GenerateCSV), built once.
var csvBenchDoc = sync.OnceValue(func() []byte { return svctest.GenerateCSV(10<<20, 1) })

// BenchmarkCSVProfile10MB profiles a 10 MB document; compare its MB/s with
// BenchmarkEncodingCSV10MB (target: at least half of it).
func BenchmarkCSVProfile10MB(b *testing.B) {
	doc := string(csvBenchDoc())
	req := svc.CSVProfileRequest{CSV: doc}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.CSVProfile(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingCSV10MB reads every record of the same bytes with
// encoding/csv (ReuseRecord), the baseline of BenchmarkCSVProfile10MB.
func BenchmarkEncodingCSV10MB(b *testing.B) {
	doc := csvBenchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		r := csv.NewReader(bytes.NewReader(doc))
		r.ReuseRecord = true
		for {
			if _, err := r.Read(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCSVProfile10MBPeakHeap reports the heap during CSVProfile of a
// 10 MB document, relative to the input size (target: at most 3).
// extraheap/input is the growth of the heap (live and not yet swept
// objects, sampled every 100 µs) over its level before the call, and
// peakheap/input is 1 + that: the peak heap of the call, the input string
// itself included, whatever else the test binary keeps alive.
// alloc/input is what one call allocates in total, an upper bound of
// extraheap/input.
func BenchmarkCSVProfile10MBPeakHeap(b *testing.B) {
	doc := string(svctest.GenerateCSV(10<<20, 1)) // only the string stays alive
	req := svc.CSVProfileRequest{CSV: doc}
	size := float64(len(doc))
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (heap, allocs uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	var extraRatio, allocRatio float64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		base, alloc0 := read()
		stop, done := make(chan struct{}), make(chan uint64)
		go func() {
			peak := uint64(0)
			t := time.NewTicker(100 * time.Microsecond)
			defer t.Stop()
			for {
				if h, _ := read(); h > peak {
					peak = h
				}
				select {
				case <-stop:
					done <- peak
					return
				case <-t.C:
				}
			}
		}()
		b.StartTimer()
		if _, err := svc.CSVProfile(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_, alloc1 := read()
		close(stop)
		peak := <-done
		extraRatio = max(extraRatio, float64(peak-min(peak, base))/size)
		allocRatio = max(allocRatio, float64(alloc1-alloc0)/size)
		b.StartTimer()
	}
	b.ReportMetric(1+extraRatio, "peakheap/input")
	b.ReportMetric(extraRatio, "extraheap/input")
	b.ReportMetric(allocRatio, "alloc/input")
}

// BenchmarkCSVProfileVsEncodingCSV10MB runs CSVProfile and the
// encoding/csv read of BenchmarkEncodingCSV10MB in alternation and reports
// the ratio of their best times (throughput of CSVProfile relative to
// encoding/csv; target ≥ 0.5), which stays meaningful on a busy machine.
func BenchmarkCSVProfileVsEncodingCSV10MB(b *testing.B) {
	doc := csvBenchDoc()
	req := svc.CSVProfileRequest{CSV: string(doc)}
	b.SetBytes(int64(2 * len(doc)))
	bestProfile, bestCSV := time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		start := time.Now()
		if _, err := svc.CSVProfile(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		bestProfile = min(bestProfile, time.Since(start))
		start = time.Now()
		r := csv.NewReader(bytes.NewReader(doc))
		r.ReuseRecord = true
		for {
			if _, err := r.Read(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		bestCSV = min(bestCSV, time.Since(start))
	}
	b.ReportMetric(float64(bestCSV)/float64(bestProfile), "throughput-ratio")
	b.ReportMetric(float64(len(doc))/bestProfile.Seconds()/1e6, "profile-MB/s")
	b.ReportMetric(float64(len(doc))/bestCSV.Seconds()/1e6, "encodingcsv-MB/s")
}

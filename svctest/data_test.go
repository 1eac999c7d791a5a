package svctest_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/leanovate/gopter"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func TestGenerateCSV(t *testing.T) {
	for _, size := range []int{0, 1, 1000, 300_000} {
		doc := svctest.GenerateCSV(size, 42)
		if len(doc) < size || len(doc) > size+512 {
			t.Errorf("size %d: got %d bytes", size, len(doc))
		}
		if !bytes.Equal(doc, svctest.GenerateCSV(size, 42)) {
			t.Errorf("size %d: not deterministic", size)
		}
		r := csv.NewReader(bytes.NewReader(doc))
		r.FieldsPerRecord = 8
		n := 0
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("size %d: record %d: %v", size, n, err)
			}
			if n == 0 && strings.Join(rec, ",") != "id,price,name,date,active,qty,comment,updated" {
				t.Errorf("header %v", rec)
			}
			n++
		}
		if n < 2 {
			t.Errorf("size %d: %d records", size, n)
		}
	}
	if bytes.Equal(svctest.GenerateCSV(5000, 1), svctest.GenerateCSV(5000, 2)) {
		t.Error("seeds 1 and 2 give the same document")
	}
}

func TestGenerateJSON(t *testing.T) {
	for _, size := range []int{0, 1, 1000, 300_000} {
		doc := svctest.GenerateJSON(size, 42)
		if len(doc) < size || len(doc) > size+1024 {
			t.Errorf("size %d: got %d bytes", size, len(doc))
		}
		if !json.Valid(doc) || !bytes.Equal(doc, svctest.GenerateJSON(size, 42)) {
			t.Errorf("size %d: invalid or not deterministic", size)
		}
		var records []map[string]any
		if err := json.Unmarshal(doc, &records); err != nil || len(records) < 1 {
			t.Errorf("size %d: %v, %d records", size, err, len(records))
		}
	}
	if bytes.Equal(svctest.GenerateJSON(5000, 1), svctest.GenerateJSON(5000, 2)) {
		t.Error("seeds 1 and 2 give the same document")
	}
}

// dataSample draws n values from a generator.
func dataSample(t *testing.T, g gopter.Gen, n int) []any {
	t.Helper()
	params := gopter.DefaultGenParameters()
	out := make([]any, 0, n)
	for range n {
		r := g(params)
		v, ok := r.Retrieve()
		if !ok {
			t.Fatal("generator gave no value")
		}
		out = append(out, v)
	}
	return out
}

func TestCSVGenerators(t *testing.T) {
	delimiters := map[string]int{}
	var headerUnset, headerFalse, ragged, quoted, crlf int
	for _, v := range dataSample(t, svctest.CSVProfileRequest(), 1000) {
		req := v.(svc.CSVProfileRequest)
		resp, err := svc.CSVProfile(context.Background(), req)
		if err != nil {
			t.Fatalf("generated request rejected: %v\n%q", err, req.CSV)
		}
		delimiters[resp.Delimiter]++
		switch {
		case req.HasHeader == nil:
			headerUnset++
		case !*req.HasHeader:
			headerFalse++
		}
		if resp.RaggedRows > 0 {
			ragged++
		}
		if strings.Contains(req.CSV, `""`) {
			quoted++
		}
		if strings.Contains(req.CSV, "\r\n") {
			crlf++
		}
	}
	// The variety the documentation promises shows up.
	if len(delimiters) != 4 || headerUnset == 0 || headerFalse == 0 || ragged == 0 || quoted == 0 || crlf == 0 {
		t.Errorf("delimiters %v headerUnset %d headerFalse %d ragged %d quoted %d crlf %d",
			delimiters, headerUnset, headerFalse, ragged, quoted, crlf)
	}
	types := map[string]int{}
	for _, v := range dataSample(t, svctest.CSVDocument(), 500) {
		resp, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: v.(string)})
		if err != nil {
			t.Fatalf("generated document rejected: %v\n%q", err, v)
		}
		for _, c := range resp.Columns {
			types[c.InferredType]++
		}
	}
	for _, ty := range []string{svc.CSVTypeInteger, svc.CSVTypeNumber, svc.CSVTypeBoolean, svc.CSVTypeDate,
		svc.CSVTypeDateTime, svc.CSVTypeString, svc.CSVTypeEmpty} {
		if types[ty] == 0 {
			t.Errorf("no %s column in 500 documents: %v", ty, types)
		}
	}
}

func TestJSONShapeRequestGenerator(t *testing.T) {
	var limited, truncated, deep, nonIdent int
	for _, v := range dataSample(t, svctest.JSONShapeRequest(), 1000) {
		req := v.(svc.JSONShapeRequest)
		if !json.Valid(req.Value) {
			t.Fatalf("invalid JSON %s", req.Value)
		}
		resp, err := svc.JSONShape(context.Background(), req)
		if err != nil {
			t.Fatalf("generated request rejected: %v\n%s", err, req.Value)
		}
		if resp.DepthLimited {
			limited++
		}
		if resp.PathsTruncated {
			truncated++
		}
		if resp.MaxDepthSeen >= 4 {
			deep++
		}
		for _, p := range resp.Paths {
			if strings.Contains(p.Path, `["`) {
				nonIdent++
				break
			}
		}
	}
	if limited == 0 || truncated == 0 || deep == 0 || nonIdent == 0 {
		t.Errorf("depthLimited %d pathsTruncated %d deep %d non-identifier names %d", limited, truncated, deep, nonIdent)
	}
}

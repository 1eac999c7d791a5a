package httpserver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenLedgerSpool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "spool.jsonl")
	sp, entries, bad, err := openLedgerSpool(path)
	if err != nil || len(entries) != 0 || len(bad) != 0 {
		t.Fatalf("a new spool: %v %v %v", entries, bad, err)
	}
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	e1 := spoolEntry{Payer: "0x1", ToolKey: "risk-levels", Amount: "5000", Asset: "0xa", Network: "eip155:8453",
		Nonce: "0x01", SettledAt: at, RequestID: "r1", FirstFailure: at}
	e2 := e1
	e2.Nonce, e2.RefCode, e2.Transaction = "0x02", "ref1", "0xtx"
	for _, e := range []spoolEntry{e1, e2} {
		if err := sp.add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.close(); err != nil {
		t.Fatal(err)
	}
	// A line that is not an entry, then a last line cut short.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("{not json}\n" + `{"payer":"0x3","tool":"x","nonce":"0x0`)
	_ = f.Close()

	sp, entries, bad, err = openLedgerSpool(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	if len(entries) != 2 || entries[0] != e1 || entries[1] != e2 {
		t.Fatalf("entries %+v", entries)
	}
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "line 3: {not json}") {
		t.Fatalf("bad %q", bad)
	}
	if got := entries[1].settlement(); got.RefCode != "ref1" || got.Transaction != "0xtx" || !got.SettledAt.Equal(at) {
		t.Fatalf("settlement %+v", got)
	}

	// rewrite keeps exactly the given entries, and add appends after them.
	if err := sp.rewrite([]spoolEntry{e2}); err != nil {
		t.Fatal(err)
	}
	if err := sp.add(e1); err != nil {
		t.Fatal(err)
	}
	_, entries, bad, err = openLedgerSpool(path)
	if err != nil || len(bad) != 0 || len(entries) != 2 || entries[0] != e2 || entries[1] != e1 {
		t.Fatalf("after rewrite and add: %+v %q %v", entries, bad, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// FuzzLedgerSpool: any file content opens without a panic, and every line
// is an entry, a bad line or skipped (empty, or a last line cut short).
func FuzzLedgerSpool(f *testing.F) {
	f.Add([]byte(`{"payer":"0x1","tool":"t","amount":"1","asset":"0xa","network":"eip155:8453","nonce":"0x1","settledAt":"2026-01-01T00:00:00Z","firstFailure":"2026-01-01T00:00:00Z"}` + "\n"))
	f.Add([]byte("{}\n\n{\"payer\":1}\nxx"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "spool.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sp, entries, bad, err := openLedgerSpool(path)
		if err != nil {
			t.Fatal(err)
		}
		defer sp.close()
		lines := bytes.Split(data, []byte("\n"))
		if len(entries)+len(bad) > len(lines) {
			t.Fatalf("%d entries and %d bad lines from %d lines", len(entries), len(bad), len(lines))
		}
		for _, e := range entries {
			if e.Nonce == "" || e.Payer == "" || e.ToolKey == "" {
				t.Fatalf("entry without its key: %+v", e)
			}
		}
	})
}

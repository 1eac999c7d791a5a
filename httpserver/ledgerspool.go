package httpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/seed1284c1d2/svc/store"
)

// The ledger spool: the settlements waiting for their ledger record, kept in
// a local file (Config.LedgerSpool) as well as in memory, so that a crash
// or a stop while the ledger is unreachable loses none of them. Each
// waiting settlement is one JSON line, appended and synced when its first
// append fails; the file is rewritten (to a temporary file, synced, then
// renamed over it) whenever one leaves the queue. At start the server
// queues every line it finds; appends are idempotent per authorization
// nonce, so a settlement recorded just before a crash is not recorded
// twice. The file belongs to one server process: instances need a file
// each.

// ErrLedgerSpool is wrapped by every error about the ledger spool file.
var ErrLedgerSpool = errors.New("httpserver: ledger spool")

func spoolError(err error) error { return fmt.Errorf("%w: %w", ErrLedgerSpool, err) }

// spoolEntry is one line of the spool file.
type spoolEntry struct {
	Payer        string    `json:"payer"`
	ToolKey      string    `json:"tool"`
	Amount       string    `json:"amount"`
	Asset        string    `json:"asset"`
	Network      string    `json:"network"`
	Transaction  string    `json:"transaction,omitempty"`
	Nonce        string    `json:"nonce"`
	RefCode      string    `json:"ref,omitempty"`
	SettledAt    time.Time `json:"settledAt"`
	RequestID    string    `json:"requestId,omitempty"`
	FirstFailure time.Time `json:"firstFailure"`
}

func spoolEntryOf(p *pendingSettlement) spoolEntry {
	st := p.st
	return spoolEntry{Payer: st.Payer, ToolKey: st.ToolKey, Amount: st.Amount, Asset: st.Asset, Network: st.Network,
		Transaction: st.Transaction, Nonce: st.Nonce, RefCode: st.RefCode, SettledAt: st.SettledAt,
		RequestID: p.requestID, FirstFailure: p.first}
}

func (e spoolEntry) settlement() store.Settlement {
	return store.Settlement{Payer: e.Payer, ToolKey: e.ToolKey, Amount: e.Amount, Asset: e.Asset, Network: e.Network,
		Transaction: e.Transaction, Nonce: e.Nonce, RefCode: e.RefCode, SettledAt: e.SettledAt}
}

// ledgerSpool is the spool file of a server.
type ledgerSpool struct {
	path string
	f    *os.File // open for appending
}

// maxSpoolBytes bounds the spool file read at start (10,000 waiting
// settlements take about 5 MB).
const maxSpoolBytes = 64 << 20

// openLedgerSpool opens (creating it and its directory if needed) the spool
// at path and returns the entries it holds. A last line cut short by a
// crash is skipped; any other line that does not decode is returned in bad
// (with its line number) for the caller to report, and is dropped from the
// file at its next rewrite.
func openLedgerSpool(path string) (sp *ledgerSpool, entries []spoolEntry, bad []string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, nil, spoolError(err)
	}
	data, err := readSpool(path)
	if err != nil {
		return nil, nil, nil, err
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e spoolEntry
		if err := json.Unmarshal(line, &e); err != nil || e.Nonce == "" || e.Payer == "" || e.ToolKey == "" {
			if i == len(lines)-1 { // no newline after it: a write cut short
				continue
			}
			bad = append(bad, fmt.Sprintf("line %d: %s", i+1, truncate(string(line), 600)))
			continue
		}
		entries = append(entries, e)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, nil, spoolError(err)
	}
	return &ledgerSpool{path: path, f: f}, entries, bad, nil
}

func readSpool(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, spoolError(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, spoolError(err)
	}
	if info.Size() > maxSpoolBytes {
		return nil, spoolError(fmt.Errorf("%s is %d bytes, more than the %d a spool can hold: reconcile it by hand",
			path, info.Size(), maxSpoolBytes))
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, spoolError(err)
	}
	return data, nil
}

// add appends e and syncs the file.
func (sp *ledgerSpool) add(e spoolEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return spoolError(err)
	}
	if _, err := sp.f.Write(append(line, '\n')); err != nil {
		return spoolError(err)
	}
	if err := sp.f.Sync(); err != nil {
		return spoolError(err)
	}
	return nil
}

// rewrite replaces the file's contents with entries, atomically.
func (sp *ledgerSpool) rewrite(entries []spoolEntry) error {
	var buf bytes.Buffer
	for _, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			return spoolError(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	tmp := sp.path + ".tmp"
	if err := writeSynced(tmp, buf.Bytes()); err != nil {
		return err
	}
	if err := os.Rename(tmp, sp.path); err != nil {
		return spoolError(err)
	}
	if d, err := os.Open(filepath.Dir(sp.path)); err == nil { // make the rename durable
		_ = d.Sync()
		_ = d.Close()
	}
	f, err := os.OpenFile(sp.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return spoolError(err)
	}
	_ = sp.f.Close()
	sp.f = f
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return spoolError(err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return spoolError(err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return spoolError(err)
	}
	if err := f.Close(); err != nil {
		return spoolError(err)
	}
	return nil
}

// close closes the file.
func (sp *ledgerSpool) close() error { return sp.f.Close() }

package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// BenchmarkPruneWhilePaying measures what pruning costs the paid calls
// running meanwhile: a store holding SVC_BENCH_PRUNE_ROWS (default
// 100,000) settled rows past their retention, 32 callers running the
// journal's writes of a paid call (Reserve → Settling → Settle) for 3 s
// without pruning, then while Prune deletes every expired row, in the
// same run. It reports the paid-call cycles per second of both phases and
// their ratio, the longest a single journal write took in each, and the
// prune's time and rows per second; "one-transaction" deletes every row
// in one transaction (the store's operation timeout bounding it), as a
// single-statement prune does, "batched" is Prune with the default batch
// and rest (engine.DefaultPruneRest), "batched-rest-2" resting twice the
// batch's time, "batched-no-rest" not resting between batches.
// PostgreSQL runs with SVC_TEST_DATABASE_URL set (bench/prune.sh).
//
//	SVC_BENCH_PRUNE_ROWS=200000 go test -run '^$' -bench BenchmarkPruneWhilePaying -benchtime 1x ./store/
func BenchmarkPruneWhilePaying(b *testing.B) {
	rows := 100_000
	if v, err := strconv.Atoi(os.Getenv("SVC_BENCH_PRUNE_ROWS")); err == nil && v > 0 {
		rows = v
	}
	dialects := []string{"sqlite"}
	if os.Getenv("SVC_TEST_DATABASE_URL") != "" {
		dialects = append(dialects, "postgres")
	}
	for _, d := range dialects {
		for _, mode := range []string{"one-transaction", "batched", "batched-rest-2", "batched-no-rest"} {
			b.Run(d+"/"+mode, func(b *testing.B) {
				for range b.N {
					benchPruneWhilePaying(b, d, mode, rows)
				}
			})
		}
	}
}

// pruneBench is the store under measurement and how to fill and prune it.
type pruneBench struct {
	st       Store
	generate func(ctx context.Context, rows int, now time.Time) error
	oneTx    func(ctx context.Context, now time.Time) (int64, error)
}

func benchPruneWhilePaying(b *testing.B, dialect, mode string, rows int) {
	ctx := context.Background()
	pb := openPruneBench(b, dialect)
	defer pb.st.Close()
	now := time.Now().UTC()
	b.StopTimer()
	if err := pb.generate(ctx, rows, now); err != nil {
		b.Fatalf("generate %d expired rows: %v", rows, err)
	}
	c := newPaidCaller(pb.st, now)
	stop := c.start(ctx, 32)
	time.Sleep(500 * time.Millisecond) // warm up
	idle := c.run(false, func() error { time.Sleep(3 * time.Second); return nil })
	b.StartTimer()
	var pruned int64
	pruning := c.run(true, func() error {
		var t engine.PruneTotals
		var err error
		switch mode {
		case "one-transaction":
			t.Deleted, err = pb.oneTx(ctx, now)
		case "batched":
			t, err = pb.st.Prune(ctx, now, engine.PruneOptions{})
		case "batched-rest-2":
			t, err = pb.st.Prune(ctx, now, engine.PruneOptions{Rest: 2})
		default:
			t, err = pb.st.Prune(ctx, now, engine.PruneOptions{Rest: -1})
		}
		pruned = t.Deleted
		return err
	})
	b.StopTimer()
	if err := stop(); err != nil {
		b.Fatalf("paid calls: %v", err)
	}
	c.summarize(&idle)
	c.summarize(&pruning)
	if pruning.err != nil {
		b.Logf("%s %s: the prune failed after %v: %v", dialect, mode, pruning.elapsed.Round(time.Millisecond), pruning.err)
	}
	b.ReportMetric(idle.rate(), "calls/s-idle")
	b.ReportMetric(pruning.rate(), "calls/s-pruning")
	b.ReportMetric(pruning.rate()/idle.rate(), "ratio")
	b.ReportMetric(ms(idle.maxWrite), "max-write-ms-idle")
	b.ReportMetric(ms(pruning.maxWrite), "max-write-ms-pruning")
	b.ReportMetric(ms(idle.p99Write), "p99-write-ms-idle")
	b.ReportMetric(ms(pruning.p99Write), "p99-write-ms-pruning")
	b.ReportMetric(pruning.elapsed.Seconds(), "prune-s")
	b.ReportMetric(float64(pruned)/pruning.elapsed.Seconds(), "pruned-rows/s")
	b.ReportMetric(float64(pruned), "pruned-rows")
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// openPruneBench opens a fresh store of dialect.
func openPruneBench(b *testing.B, dialect string) *pruneBench {
	ctx := context.Background()
	if dialect == "sqlite" {
		st, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "svc.db"))
		if err != nil {
			b.Fatalf("OpenSQLite: %v", err)
		}
		s := st.(*sqliteStore)
		return &pruneBench{st: st, generate: s.benchGenerateExpired, oneTx: s.benchPruneOneTransaction}
	}
	base := os.Getenv("SVC_TEST_DATABASE_URL")
	var r [6]byte
	_, _ = rand.Read(r[:])
	schema := "svc_bench_" + hex.EncodeToString(r[:])
	admin := func(stmt string) {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			b.Fatalf("connect: %v", err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, stmt); err != nil {
			b.Fatalf("%s: %v", stmt, err)
		}
	}
	admin(`CREATE SCHEMA ` + schema)
	b.Cleanup(func() { admin(`DROP SCHEMA ` + schema + ` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		b.Fatalf("SVC_TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := Open(ctx, u.String(), WithMaxConns(40))
	if err != nil {
		b.Fatalf("Open(postgres): %v", err)
	}
	s := st.(*postgresStore)
	return &pruneBench{st: st, generate: s.benchGenerateExpired, oneTx: s.benchPruneOneTransaction}
}

// benchExpiredRow is the SELECT list of a generated row numbered n (a
// column of the generating query): settled, its key, answer and payload
// past their retention at now ($1/?1) by 1 h plus n ms, with a payload and
// an answer the size of real ones. fmtHex renders n as hex of a width.
func benchExpiredRow(param func(i int) string, fmtHex func(n string, width int) string) string {
	return `'k' || n, 'eip155:8453', '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', ` + fmtHex("n", 40) + `, ` + fmtHex("n", 64) + `,
		'0x209693bc6afc0c5328ba36faf03c514ef312287c', '3400', 'sha256:bench', 'POST /api/risk-levels', 'risk_levels',
		'http', '', 'bench', 2, ` + sqlState(engine.StateSettled) + `, 0, 'bench', 0, ` + param(2) + `, ` + param(3) + `,
		` + param(4) + `, ` + param(1) + ` - 3600000000000 - n * 1000000, ` + param(5) + `, '',
		` + param(1) + ` - 3600000000000 - n * 1000000, ` + param(1) + ` - 90000000000000, ` + param(1) + ` - 90000000000000`
}

// benchAnswer and benchSettlement are the JSON of a recorded answer and a
// settlement the size of real ones.
const (
	benchAnswer     = `{"status":200,"header":{"Content-Type":["application/json"]},"body":"eyJkaXJlY3Rpb24iOiJsb25nIiwiZW50cnkiOjM1MDAsInJpc2tSZXdhcmQiOjAuOCwic2xQY3QiOjAuMDUsInN0b3AiOjM0OTguMjUsInN0b3BEaXN0YW5jZSI6MS43NSwidGFyZ2V0IjozNTAxLjQsInRhcmdldERpc3RhbmNlIjoxLjQsInRwUGN0IjowLjA0fQ=="}`
	benchSettlement = `{"success":true,"transaction":"0x75440e5f82792a03a01f8b9ef653f661b782a59260ea3ae1aefe4b858bee5a7b","network":"eip155:8453","payer":"0x7CB7D2FcCFF164A4EF209b9e4caB25Ecc0d19Cc8"}`
)

// benchGenerateExpired inserts rows expired settled rows in one statement.
func (s *sqliteStore) benchGenerateExpired(ctx context.Context, rows int, now time.Time) error {
	sel := benchExpiredRow(func(i int) string { return "?" + strconv.Itoa(i) },
		func(n string, w int) string { return fmt.Sprintf("printf('0x%%0%dx', %s)", w, n) })
	_, err := s.w.ExecContext(ctx, `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?6)
		INSERT INTO payments (`+paymentCols+`) SELECT `+sel+` FROM seq`,
		instant(now), benchPayload, benchRequirements, benchAnswer, benchSettlement, rows)
	return err
}

// benchPruneOneTransaction deletes every prunable row past keep_until in
// one transaction under the operation timeout.
func (s *sqliteStore) benchPruneOneTransaction(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.writeTx(ctx, "prune", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM payments WHERE keep_until < ? AND state IN `+sqlStates(engine.Prunable), instant(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// benchGenerateExpired inserts rows expired settled rows in one statement,
// then vacuums and analyzes the table.
func (s *postgresStore) benchGenerateExpired(ctx context.Context, rows int, now time.Time) error {
	sel := benchExpiredRow(func(i int) string {
		if i == 1 {
			return "$1::bigint"
		}
		return "$" + strconv.Itoa(i) + "::text"
	}, func(n string, w int) string { return fmt.Sprintf("'0x' || lpad(to_hex(%s), %d, '0')", n, w) })
	_, err := s.pool.Exec(ctx, `INSERT INTO payments (`+paymentCols+`) SELECT `+sel+` FROM generate_series(0, $6::bigint - 1) AS n`,
		instant(now), benchPayload, benchRequirements, benchAnswer, benchSettlement, rows)
	if err == nil {
		_, err = s.pool.Exec(ctx, `VACUUM ANALYZE payments`)
	}
	return err
}

// benchPruneOneTransaction deletes every prunable row past keep_until in
// one transaction under the operation timeout.
func (s *postgresStore) benchPruneOneTransaction(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.withTx(ctx, "prune", func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM payments WHERE keep_until < $1 AND state IN `+sqlStates(engine.Prunable), instant(now))
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// paidCaller runs paid calls' journal writes from many goroutines and
// records when each write ended and how long it took.
type paidCaller struct {
	j   engine.CallJournal
	now time.Time
	seq atomic.Int64

	mu     sync.Mutex
	writes []writeTime
}

// writeTime is one journal write: when it started and ended; cycle is
// true for the write that ends a paid call (Settle).
type writeTime struct {
	start, end time.Time
	cycle      bool
}

func newPaidCaller(j engine.CallJournal, now time.Time) *paidCaller {
	return &paidCaller{j: j, now: now}
}

// start runs n callers until the returned stop is called; stop returns
// the first error of a write.
func (c *paidCaller) start(ctx context.Context, n int) (stop func() error) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var first atomic.Value
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-quit:
					return
				default:
				}
				if err := c.cycle(ctx); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	return func() error {
		close(quit)
		wg.Wait()
		if err, ok := first.Load().(error); ok {
			return err
		}
		return nil
	}
}

// cycle runs one paid call's writes, timing each.
func (c *paidCaller) cycle(ctx context.Context) error {
	i := c.seq.Add(1)
	payer, nonce := fmt.Sprintf("0x%040x", 1<<40+i), fmt.Sprintf("0x%064x", 1<<40+i)
	asset := "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
	rsv := engine.Reservation{
		Key: exact.NonceKey("eip155:8453", asset, payer, nonce), Network: "eip155:8453", Asset: asset,
		Payer: payer, Nonce: nonce, PayTo: payer, Amount: "3400",
		Request: engine.Request{Hash: "sha256:bench", Resource: "POST /api/risk-levels", Product: "risk_levels",
			Transport: "http", RequestID: "bench", X402Version: 2},
		Owner: "bench", LeaseUntil: c.now.Add(time.Hour), KeepUntil: c.now.Add(time.Hour), Now: c.now,
	}
	answer := engine.Answer{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}},
		Body: []byte(`{"direction":"long","entry":3500,"riskReward":0.8,"slPct":0.05,"stop":3498.25,"stopDistance":1.75,"target":3501.4,"targetDistance":1.4,"tpPct":0.04}`)}
	writes := []func() error{
		func() error { _, err := c.j.Reserve(ctx, rsv, 3); return err },
		func() error {
			return c.j.Settling(ctx, rsv.Key, "bench", engine.Settling{Answer: answer, AnswerUntil: c.now.Add(24 * time.Hour),
				Payload: []byte(benchPayload), Requirements: []byte(benchRequirements), Payer: payer, Amount: "3400",
				LeaseUntil: c.now.Add(time.Hour)})
		},
		func() error {
			return c.j.Settle(ctx, rsv.Key, x402.SettleResponse{Success: true, Transaction: nonce, Network: "eip155:8453"}, c.now)
		},
	}
	for k, w := range writes {
		t0 := time.Now()
		if err := w(); err != nil {
			return err
		}
		end := time.Now()
		c.mu.Lock()
		c.writes = append(c.writes, writeTime{start: t0, end: end, cycle: k == len(writes)-1})
		c.mu.Unlock()
	}
	return nil
}

// phase is what the callers did while one phase ran: the paid calls
// completed within it, and the writes that ended within it or, with
// overlap, that overlapped it (ending after it).
type phase struct {
	from     time.Time
	elapsed  time.Duration
	overlap  bool
	cycles   int
	maxWrite time.Duration
	p99Write time.Duration
	err      error
}

// rate is the paid calls completed per second.
func (p phase) rate() float64 { return float64(p.cycles) / p.elapsed.Seconds() }

// run runs f as a phase; summarize (once the callers stopped) fills in
// what they did meanwhile.
func (c *paidCaller) run(overlap bool, f func() error) phase {
	p := phase{from: time.Now(), overlap: overlap}
	p.err = f()
	p.elapsed = time.Since(p.from)
	return p
}

// summarize counts the writes of phase p.
func (c *paidCaller) summarize(p *phase) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := p.from.Add(p.elapsed)
	var took []time.Duration
	for _, w := range c.writes {
		if w.start.Before(p.from) || w.start.After(end) || (!p.overlap && w.end.After(end)) {
			continue
		}
		if w.cycle && !w.end.After(end) {
			p.cycles++
		}
		took = append(took, w.end.Sub(w.start))
	}
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	p.maxWrite, p.p99Write = took[len(took)-1], took[len(took)*99/100]
}

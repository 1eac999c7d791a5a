package claimer_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/jackc/pgx/v5"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// recordJSON is a channel record as the crash tests hand it to the child
// process.
type recordJSON struct {
	ID            string              `json:"id"`
	Config        batch.ChannelConfig `json:"config"`
	Charged       string              `json:"charged"`
	SignedMax     string              `json:"signedMax"`
	Signature     string              `json:"signature"`
	LastRequestAt int64               `json:"lastRequestAt"`
}

// childEnv names the variables of the child process.
const childEnv = "CLAIMER_CRASH_CHILD"

// TestCrashChild is the child process of TestCrashRecovery (skipped
// otherwise): a claimer on a SQLite claim log runs ClaimNow on the
// channel records of a file; with CLAIMER_CRASH_AT set, it stops at that
// step of its claim (prints "AT step" and waits to be killed).
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("the child process of TestCrashRecovery")
	}
	ctx := context.Background()
	raw, err := os.ReadFile(os.Getenv("CLAIMER_RECORDS"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []recordJSON
	if err := json.Unmarshal(raw, &recs); err != nil {
		t.Fatal(err)
	}
	chans := claimer.NewMemoryChannels()
	for _, r := range recs {
		ch, err := batch.ParseChannelConfig(r.Config)
		if err != nil {
			t.Fatal(err)
		}
		charged, _ := new(big.Int).SetString(r.Charged, 10)
		max, _ := new(big.Int).SetString(r.SignedMax, 10)
		chans.Put(batch.ChannelRecord{Network: x402.NetworkBase, ID: common.HexToHash(r.ID), Channel: ch, Charged: charged, SignedMax: max,
			Signature: hexutil.MustDecode(r.Signature), LastRequestAt: time.Unix(r.LastRequestAt, 0)})
	}
	st, err := store.Open(ctx, os.Getenv("CLAIMER_DB"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ec, err := ethclient.Dial(os.Getenv("CLAIMER_RPC"))
	if err != nil {
		t.Fatal(err)
	}
	fac, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: os.Getenv("CLAIMER_FACILITATOR")})
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(os.Getenv("CLAIMER_AUTHORIZER_KEY"), "0x"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := claimer.New(claimer.Config{Network: x402.NetworkBase, Channels: chans, Log: st.BatchClaims(), Facilitator: fac, Chain: ec, AuthorizerKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if at := os.Getenv("CLAIMER_CRASH_AT"); at != "" {
		claimer.SetStepHook(c, func(step string) {
			if step == at {
				fmt.Printf("AT %s\n", step)
				_ = os.Stdout.Sync()
				select {}
			}
		})
	}
	rep, err := c.ClaimNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("REPORT %s\n", b)
}

// A real process claiming through the official facilitator is killed
// with SIGKILL after signing its claim (logged, not sent), after the
// facilitator broadcast it (not mined), and after it was mined (not
// recorded). Each time a restarted process resolves the pending claim
// from the chain: the claim that was never sent is sent again, the
// others are recorded as they are on chain, so every charged voucher is
// claimed exactly once: totalClaimed = charged, one claim transaction per
// claim, none reverted.
func TestCrashRecovery(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { crashRecovery(t, filepath.Join(t.TempDir(), "claims.db")) })
	t.Run("postgres", func(t *testing.T) { crashRecovery(t, pgSchemaDSN(t)) })
}

// pgSchemaDSN creates a schema of its own in the database of
// SVC_TEST_DATABASE_URL, dropped when the test ends, and returns a DSN
// whose sessions use it; it skips the test when the variable is unset.
func pgSchemaDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SVC_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("SVC_TEST_DATABASE_URL is not set: the claim log on PostgreSQL is not tested")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "h3_claimer_" + hex.EncodeToString(b[:])
	admin := func(stmt string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to SVC_TEST_DATABASE_URL: %v", err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	admin("CREATE SCHEMA " + schema)
	t.Cleanup(func() { admin("DROP SCHEMA " + schema + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// crashRecovery is TestCrashRecovery with the claim log at db (a SQLite
// file or a PostgreSQL URL).
func crashRecovery(t *testing.T, db string) {
	e := newEnv(t)
	dir := t.TempDir()
	recordsFile := filepath.Join(dir, "records.json")
	authHex := hexutil.Encode(crypto.FromECDSA(e.authKey))

	var payers []*payer
	for i := 0; i < 4; i++ {
		payers = append(payers, e.open(t, 200_000))
	}
	writeRecords := func() {
		t.Helper()
		var out []recordJSON
		for _, p := range payers {
			r := e.record(t, p, time.Now())
			out = append(out, recordJSON{ID: r.ID.Hex(), Config: r.Channel.Config(), Charged: r.Charged.String(), SignedMax: r.SignedMax.String(),
				Signature: hexutil.Encode(r.Signature), LastRequestAt: r.LastRequestAt.Unix()})
		}
		b, _ := json.Marshal(out)
		if err := os.WriteFile(recordsFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	child := func(crashAt string) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=1", "CLAIMER_RECORDS="+recordsFile, "CLAIMER_DB="+db, "CLAIMER_RPC="+e.chain.URL,
			"CLAIMER_FACILITATOR="+e.facURL, "CLAIMER_AUTHORIZER_KEY="+authHex, "CLAIMER_CRASH_AT="+crashAt)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewScanner(out), &stderr
	}
	pending := func() []claimer.Record {
		t.Helper()
		st, err := store.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		recs, err := st.BatchClaims().Pending(context.Background(), x402.NetworkBase)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	kill := func(cmd *exec.Cmd) {
		t.Helper()
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}

	claimTxs := 0
	for i, phase := range []struct {
		name, crashAt string
		broadcast     bool
		sentBefore    bool // the killed process's claim reached the chain
	}{
		{name: "after signing", crashAt: "signed"},
		{name: "after broadcast", broadcast: true, sentBefore: true},
		{name: "after mining", crashAt: "answered", sentBefore: true},
	} {
		before := make([]*big.Int, len(payers))
		for j, p := range payers {
			before[j] = new(big.Int).Set(p.charged)
			e.serve(t, p, 3+i+j, time.Now())
		}
		writeRecords()

		cmd, out, stderr := child(phase.crashAt)
		if phase.broadcast {
			e.chain.SetAutomine(t, false)
			waitPendingTx(t, e.chain)
			kill(cmd)
			e.chain.Mine(t, 1)
			e.chain.SetAutomine(t, true)
		} else {
			want := "AT " + phase.crashAt
			got := ""
			for out.Scan() {
				if got = out.Text(); got == want {
					break
				}
			}
			if got != want {
				t.Fatalf("%s: the child ended before %q: %s", phase.name, want, stderr)
			}
			kill(cmd)
		}
		if p := pending(); len(p) != 1 || len(p[0].Rows) != len(payers) {
			t.Fatalf("%s: the log holds %d pending claims, want the killed process's one", phase.name, len(p))
		}
		for j, p := range payers {
			st := anviltest.EscrowChannel(t, e.chain.Client, p.id)
			want := before[j]
			if phase.sentBefore {
				want = p.charged
			}
			if st.TotalClaimed.Cmp(want) != 0 {
				t.Fatalf("%s: channel %d totalClaimed %s before the restart, want %s", phase.name, j, st.TotalClaimed, want)
			}
		}
		claimTxs++

		// The restart.
		cmd, out, stderr = child("")
		var rep claimer.Report
		for out.Scan() {
			if s, ok := strings.CutPrefix(out.Text(), "REPORT "); ok {
				if err := json.Unmarshal([]byte(s), &rep); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: the restarted process: %v\n%s", phase.name, err, stderr)
		}
		if rep.Recovered != 1 || rep.Claims != 0 {
			t.Fatalf("%s: the restart's report %+v, want the pending claim resolved and no new claim", phase.name, rep)
		}
		if p := pending(); len(p) != 0 {
			t.Fatalf("%s: pending after the restart: %+v", phase.name, p)
		}
		for j, p := range payers {
			if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.TotalClaimed.Cmp(p.charged) != 0 {
				t.Fatalf("%s: channel %d totalClaimed %s, charged %s", phase.name, j, st.TotalClaimed, p.charged)
			}
		}
	}

	// Every transaction of the chain succeeded, and there is one claim
	// transaction per claim: none was sent twice.
	selector := batch.SettlementABI().Methods["claimWithSignature"].ID
	ctx := context.Background()
	head, err := e.chain.Client.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	for n := uint64(0); n <= head; n++ {
		blk, err := e.chain.Client.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range blk.Transactions() {
			r := e.chain.WaitReceipt(t, tx.Hash())
			if r.Status != types.ReceiptStatusSuccessful {
				t.Fatalf("transaction %s in block %d reverted", tx.Hash(), n)
			}
			if tx.To() != nil && *tx.To() == anviltest.Escrow && bytes.HasPrefix(tx.Data(), selector) {
				claims++
			}
		}
	}
	if claims != claimTxs {
		t.Fatalf("%d claim transactions on chain, want %d (one per claim)", claims, claimTxs)
	}
}

// waitPendingTx waits until the chain's pool holds a transaction.
func waitPendingTx(t *testing.T, c *anviltest.Chain) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var st struct {
			Pending hexutil.Uint64 `json:"pending"`
		}
		if err := c.RPC.CallContext(context.Background(), &st, "txpool_status"); err != nil {
			t.Fatalf("txpool_status: %v", err)
		}
		if st.Pending > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no transaction reached the pool within 60 s")
}

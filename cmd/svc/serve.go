package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/internal/scrub"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
	"github.com/seed1284c1d2/svc/xau/mt5"
	"github.com/seed1284c1d2/svc/xau/replay"
)

// Defaults of svc serve.
const (
	defaultAddr            = "127.0.0.1:8080"
	defaultDB              = "svc-data/svc.db"
	defaultShutdownTimeout = 90 * time.Second
	pruneInterval          = 10 * time.Minute
)

// devKeySeed derives the dev-mode payTo wallet's key. The key is public
// (it is in this source file): the address is a placeholder that lets dev
// mode run without configuration, never a wallet to receive real money —
// and in dev mode nothing settles on chain anyway.
const devKeySeed = "svc dev mode payTo: a public, well-known key; never send funds to this address"

// devPayTo returns the dev-mode receiving address: the address of the key
// SHA-256(devKeySeed).
func devPayTo() (string, error) {
	k := sha256.Sum256([]byte(devKeySeed))
	s, err := client.ParseSigner(hex.EncodeToString(k[:]))
	if err != nil {
		return "", fmt.Errorf("dev payTo: %w", err)
	}
	return s.Address(), nil
}

// serveConfig is the resolved configuration of svc serve.
type serveConfig struct {
	addr, baseURL, network, payTo string
	devMode, devPayTo             bool
	facilitatorURL, authHeader    string
	publicFacilitator             string // the facilitator URL the public documents name
	secrets                       scrub.Secrets
	prices                        map[string]string
	bodyLimit                     int64
	bodyMemory                    int64
	bodyRate                      float64 // bytes per second; negative: off
	terminal                      string
	bridgeURL, bridgeToken        string
	replayFile, replayTimeframe   string
	replayOffset                  time.Duration
	symbol                        string
	db                            string
	rate                          float64
	burst                         int
	unpaidRate                    float64
	unpaidBurst                   int
	payerBurst                    int
	payerRefill                   time.Duration
	payerConcurrency              int
	settleTimeout                 time.Duration
	trusted                       []netip.Prefix
	regexTimeout, toolTimeout     time.Duration
	healthTTL, shutdownTimeout    time.Duration
	logLevel, logFormat           string
	adminAddr                     string
	adminToken                    string        // required by the admin listener when set
	settle                        string        // "" (a facilitator) or settleOnchain
	chain                         *onchainFlags // with settleOnchain
	// statusRPC is the RPC endpoint recovery reads the chain from when
	// settling through --facilitator-url ("" without --rpc-url).
	statusRPC string
	devChain  *devChainRun // --chain embedded
	// batch holds --schemes and the batch-settlement flags.
	batch *sellSchemeFlags
}

// parseServe reads the flags and the SVC_* environment.
func parseServe(args []string, stderr io.Writer, getenv func(string) string) (*serveConfig, error) {
	f := envflag.New("serve", stderr, getenv, "svc serve [flags]")
	addr := f.String("addr", "SVC_ADDR", defaultAddr, "listen address (port 0 picks a free port; the bound address is printed)")
	baseURL := f.String("base-url", "SVC_BASE_URL", "", "public base URL clients reach the server at (default http://<addr>)")
	network := f.String("network", "SVC_NETWORK", x402.NetworkBase, "payment network (CAIP-2 id)")
	payTo := f.String("pay-to", "SVC_PAY_TO", "", "wallet receiving the payments; required unless in dev mode")
	facURL := f.String("facilitator-url", "SVC_FACILITATOR_URL", "", "x402 facilitator base URL; absent = dev mode with the local facilitator (nothing settles on chain)")
	authHeader := f.String("facilitator-auth-header", "SVC_FACILITATOR_AUTH_HEADER", "", `header sent to the facilitator, "Name: value" (never logged)`)
	prices := f.List("price", "SVC_PRICES", "price override key=usd, e.g. regex-test=0.004 (repeatable)")
	bodyLimit := f.String("body-limit", "SVC_BODY_LIMIT", "2MiB", "request body limit (413 past it)")
	bodyMemory := f.String("body-memory", "SVC_BODY_MEMORY", "16MiB", "memory for the request bodies held at once, every route together (503 past it); one client address holds a quarter at most")
	bodyRate := f.String("body-rate", "SVC_BODY_RATE", "1MiB", `request-body bytes per second per client address on the free routes, MCP and A2A included ("off" disables)`)
	terminal := f.String("terminal", "SVC_TERMINAL", "", "gold terminal: simulated, bridge, replay or none (default: bridge when --bridge-url is set, replay when --replay-file is set, simulated in dev mode, none otherwise)")
	bridgeURL := f.String("bridge-url", "SVC_MT5_BRIDGE_URL", "", "MT5 bridge base URL (xau/mt5/bridge)")
	bridgeTokenEnv := f.String("bridge-token-env", "", "", "name of the environment variable holding the MT5 bridge token (default "+defaultBridgeTokenEnv+")")
	replayFile := f.String("replay-file", "SVC_REPLAY_FILE", "", "MT5 history export (CSV) to replay")
	replayTF := f.String("replay-timeframe", "SVC_REPLAY_TIMEFRAME", "M1", "base timeframe of the replay file (M1, M5, M15, H1)")
	replayOffset := f.Duration("replay-server-offset", "SVC_REPLAY_SERVER_OFFSET", 0, "UTC offset of the trading server whose times the replay file holds (e.g. 2h)")
	symbol := f.String("symbol", "SVC_GOLD_SYMBOL", "", "terminal gold symbol (default XAUUSD)")
	db := f.String("db", "SVC_DATABASE_URL", defaultDB, "SQLite file path, or a postgres:// URL")
	rate := f.Float("rate", "SVC_RATE", httpserver.DefaultRate, "free-route requests per second per client address (negative disables)")
	burst := f.Int("burst", "SVC_BURST", httpserver.DefaultBurst, "free-route burst per client address")
	unpaidRate := f.Float("unpaid-rate", "SVC_UNPAID_RATE", httpserver.DefaultUnpaidRate, "requests without payment per second per client address on the paid routes, and likewise refused payments (negative disables)")
	unpaidBurst := f.Int("unpaid-burst", "SVC_UNPAID_BURST", httpserver.DefaultUnpaidBurst, "burst of requests without payment per client address on the paid routes")
	payerBurst := f.Int("payer-burst", "SVC_PAYER_BURST", engine.DefaultPayerBurst, "paid calls of one payer that may run without an answer (timed out, failed, refused at settlement) before it gets 429 (negative disables the payer limits)")
	payerRefill := f.Duration("payer-refill", "SVC_PAYER_REFILL", engine.DefaultPayerRefill, "how long a payer past its --payer-burst waits for each further paid call")
	payerConcurrency := f.Int("payer-concurrency", "SVC_PAYER_CONCURRENCY", engine.DefaultPayerConcurrency, "paid calls of one payer that may run at once (429 past it)")
	settleTimeout := f.Duration("settle-timeout", "SVC_SETTLE_TIMEOUT", engine.DefaultSettleTimeout, "time limit of one settlement at the facilitator (honoured end to end)")
	trusted := f.List("trusted-proxy", "SVC_TRUSTED_PROXIES", "CIDR of a reverse proxy whose X-Forwarded-For is believed (repeatable)")
	regexTimeout := f.Duration("regex-timeout", "SVC_REGEX_TIMEOUT", 100*time.Millisecond, "time limit of one regex_test call")
	toolTimeout := f.Duration("tool-timeout", "SVC_TOOL_TIMEOUT", httpserver.DefaultToolTimeout, "time limit of one tool run (504 past it, nothing settled)")
	healthTTL := f.Duration("health-ttl", "SVC_HEALTH_TTL", xau.DefaultHealthTTL, "how long a terminal availability check is reused")
	shutdown := f.Duration("shutdown-timeout", "SVC_SHUTDOWN_TIMEOUT", defaultShutdownTimeout, "how long a stop waits for calls in flight")
	logLevel := f.String("log-level", "SVC_LOG_LEVEL", "info", "debug, info, warn or error (info logs every request)")
	logFormat := f.String("log-format", "SVC_LOG_FORMAT", "text", "text or json")
	adminAddr := f.String("admin-addr", "SVC_ADMIN_ADDR", "", "operator listener serving /metrics, the dashboard (/) and pprof instead of the public port (off by default; keep it private)")
	adminTokenEnv := f.String("admin-token-env", "", "", "name of the environment variable holding a token (16+ characters) the admin listener requires, as a bearer token or a Basic password (default SVC_ADMIN_TOKEN when set)")
	dev := f.EnvBool("dev", "SVC_DEV", false, "dev mode on purpose: the local facilitator, nothing settles on chain (the default only when nothing else is configured)")
	publicFac := f.String("public-facilitator-url", "SVC_PUBLIC_FACILITATOR_URL", "", "facilitator URL the public documents name (default: only the scheme and host of --facilitator-url)")
	f.Groups = serveFlagGroups
	settle := f.String("settle", "SVC_SETTLE", "", `"onchain": settle on chain in this process (with --rpc-url and a relayer key) instead of through a facilitator`)
	chain := addOnchainFlags(f)
	devChain := f.String("chain", "SVC_CHAIN", "", `"embedded": dev mode settling for real on a local EVM chain run in this process (chain id 8453, test USDC; its RPC URL and a payer's dev key are printed)`)
	batchFl := addSellSchemeFlags(f, chain.auth)
	if err := f.ParseNoArgs(args); err != nil {
		return nil, err
	}
	c := &serveConfig{
		addr: strings.TrimSpace(*addr), baseURL: strings.TrimRight(strings.TrimSpace(*baseURL), "/"),
		facilitatorURL: strings.TrimSpace(*facURL), authHeader: *authHeader,
		terminal: strings.ToLower(strings.TrimSpace(*terminal)), bridgeURL: strings.TrimSpace(*bridgeURL),
		replayFile: *replayFile, replayTimeframe: *replayTF, replayOffset: *replayOffset, symbol: *symbol,
		db: strings.TrimSpace(*db), rate: *rate, burst: *burst, unpaidRate: *unpaidRate, unpaidBurst: *unpaidBurst,
		payerBurst: *payerBurst, payerRefill: *payerRefill, payerConcurrency: *payerConcurrency, settleTimeout: *settleTimeout,
		regexTimeout: *regexTimeout, toolTimeout: *toolTimeout, healthTTL: *healthTTL, shutdownTimeout: *shutdown,
		logLevel: *logLevel, logFormat: *logFormat, adminAddr: strings.TrimSpace(*adminAddr),
	}
	if c.payerRefill <= 0 {
		return nil, envflag.UsageError(fmt.Sprintf("--payer-refill %s must be positive", c.payerRefill))
	}
	if c.payerConcurrency < 1 {
		return nil, envflag.UsageError(fmt.Sprintf("--payer-concurrency %d must be at least 1", c.payerConcurrency))
	}
	n, ok := x402.LookupNetwork(strings.TrimSpace(*network))
	if !ok {
		return nil, envflag.UsageError(fmt.Sprintf("--network %q is not a known network (eip155:8453 is Base, eip155:84532 Base Sepolia)", *network))
	}
	c.network = n.CAIP2
	c.settle, c.chain = strings.ToLower(strings.TrimSpace(*settle)), chain
	if err := batchFl.check(getenv); err != nil {
		return nil, err
	}
	c.batch = batchFl
	// Credentials first, so that nothing below can print them.
	c.secrets.AddURL(c.facilitatorURL)
	c.secrets.AddHeader(c.authHeader)
	c.secrets.AddDSN(c.db)
	c.secrets.AddPrivateURL(c.bridgeURL)
	c.secrets.AddPrivateURL(*chain.rpcURL)
	if err := checkPublishing(c, strings.TrimSpace(*publicFac)); err != nil {
		return nil, err
	}
	if err := checkEmbeddedChain(c, *devChain, *chain.rpcURL); err != nil {
		return nil, err
	}
	switch {
	case c.settle != "" && c.settle != settleOnchain:
		return nil, envflag.UsageError(fmt.Sprintf("--settle %q: the only value is %q (without it, payments settle through --facilitator-url)", *settle, settleOnchain))
	case c.settle == settleOnchain && c.facilitatorURL != "":
		return nil, envflag.UsageError("--settle onchain and --facilitator-url exclude each other")
	case c.settle == settleOnchain:
		if err := chain.check(getenv); err != nil {
			return nil, err
		}
	}
	c.devMode = c.facilitatorURL == "" && c.settle == ""
	if batchFl.on() && !c.devMode && strings.TrimSpace(*chain.rpcURL) == "" {
		return nil, envflag.UsageError("--schemes " + batch.Scheme + " needs --rpc-url (SVC_RPC_URL): its claimer reads the escrow's channels (and watches withdrawals) through it")
	}
	if c.facilitatorURL != "" {
		c.statusRPC = strings.TrimSpace(*chain.rpcURL)
		if *chain.confirmations < 1 || *chain.confirmations > 1000 {
			return nil, envflag.UsageError("--confirmations must be between 1 and 1000")
		}
	}
	if *dev && strings.TrimSpace(*chain.rpcURL) != "" {
		return nil, envflag.UsageError("--rpc-url is for --facilitator-url (recovery reads the chain) or --settle onchain; dev mode settles nothing on chain")
	}
	if *dev && !c.devMode {
		other := "--facilitator-url"
		if c.settle == settleOnchain {
			other = "--settle onchain"
		}
		return nil, envflag.UsageError("--dev and " + other + " contradict each other: --dev runs the local facilitator, which settles nothing on chain; drop one")
	}
	if c.devMode && !*dev {
		if given := productionSettings(c, strings.TrimSpace(*payTo), trusted.Values()); len(given) > 0 {
			return nil, envflag.UsageError(fmt.Sprintf("production settings given (%s) but no way to settle payments: "+
				"set --facilitator-url (SVC_FACILITATOR_URL) to the x402 facilitator that settles them on chain, "+
				"or --settle onchain with --rpc-url and a relayer key to settle them in this process, "+
				"or add --dev (SVC_DEV=true) to run in dev mode on purpose (the local facilitator settles nothing)", strings.Join(given, ", ")))
		}
	}
	c.payTo = strings.TrimSpace(*payTo)
	if c.payTo == "" {
		if !c.devMode {
			return nil, envflag.UsageError("--pay-to (SVC_PAY_TO) is required with a facilitator URL or --settle onchain: it is the wallet that receives the payments")
		}
		p, err := devPayTo()
		if err != nil {
			return nil, err
		}
		c.payTo, c.devPayTo = p, true
	}
	if err := payToError("--pay-to", c.payTo); err != nil {
		return nil, err
	}
	if c.authHeader != "" {
		name, _, ok := strings.Cut(c.authHeader, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t\r\n") {
			return nil, envflag.UsageError(`--facilitator-auth-header must look like "Name: value"`)
		}
		if c.devMode {
			return nil, envflag.UsageError("--facilitator-auth-header needs --facilitator-url")
		}
	}
	if len(prices.Values()) > 0 {
		c.prices = map[string]string{}
		for _, kv := range prices.Values() {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
				return nil, envflag.UsageError(fmt.Sprintf("--price %q: want key=price, e.g. regex-test=0.004", kv))
			}
			c.prices[strings.TrimSpace(k)] = strings.TrimPrefix(strings.TrimSpace(v), "$")
		}
	}
	bl, err := envflag.ParseBytes(*bodyLimit)
	if err != nil {
		return nil, envflag.UsageError("--body-limit: " + err.Error())
	}
	c.bodyLimit = bl
	if c.bodyMemory, err = envflag.ParseBytes(*bodyMemory); err != nil {
		return nil, envflag.UsageError("--body-memory: " + err.Error())
	}
	if c.bodyMemory < c.bodyLimit {
		return nil, envflag.UsageError(fmt.Sprintf("--body-memory %d must hold one body of --body-limit %d bytes", c.bodyMemory, c.bodyLimit))
	}
	if v := strings.TrimSpace(*bodyRate); strings.EqualFold(v, "off") {
		c.bodyRate = -1
	} else if br, err := envflag.ParseBytes(v); err != nil {
		return nil, envflag.UsageError("--body-rate: " + err.Error() + `, or "off"`)
	} else {
		c.bodyRate = float64(br)
	}
	tokenEnv := strings.TrimSpace(*bridgeTokenEnv)
	if tokenEnv == "" {
		tokenEnv = defaultBridgeTokenEnv
	}
	if !envNameRE.MatchString(tokenEnv) {
		return nil, envflag.UsageError("--bridge-token-env takes the name of an environment variable (letters, digits and _), not the token itself (the value given is not repeated here)")
	}
	c.bridgeToken = strings.TrimSpace(getenv(tokenEnv))
	c.secrets.Add(c.bridgeToken)
	if err := c.readAdminToken(strings.TrimSpace(*adminTokenEnv), getenv); err != nil {
		return nil, err
	}
	if c.terminal == "" {
		switch {
		case c.bridgeURL != "":
			c.terminal = "bridge"
		case c.replayFile != "":
			c.terminal = "replay"
		case c.devMode:
			c.terminal = "simulated"
		default:
			c.terminal = "none"
		}
	}
	switch c.terminal {
	case "simulated", "none":
	case "bridge":
		if c.bridgeURL == "" {
			return nil, envflag.UsageError("--terminal bridge needs --bridge-url (SVC_MT5_BRIDGE_URL)")
		}
		if c.bridgeToken == "" {
			return nil, envflag.UsageError("--terminal bridge needs the bridge token in " + tokenVarWhere("--bridge-token-env", defaultBridgeTokenEnv, tokenEnv))
		}
	case "replay":
		if c.replayFile == "" {
			return nil, envflag.UsageError("--terminal replay needs --replay-file (SVC_REPLAY_FILE)")
		}
	default:
		return nil, envflag.UsageError(fmt.Sprintf("--terminal %q: want simulated, bridge, replay or none", c.terminal))
	}
	for _, p := range trusted.Values() {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, envflag.UsageError(fmt.Sprintf("--trusted-proxy %q is not a CIDR or an address", p))
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		c.trusted = append(c.trusted, pfx.Masked())
	}
	if c.db == "" {
		c.db = defaultDB
	}
	if c.devChain != nil { // dev mode's defaults, settled on the embedded chain
		c.devMode, c.settle = false, settleOnchain
	}
	return c, nil
}

// checkPublishing checks the URLs of c and sets c.publicFacilitator: the
// base URL is published, so it may not carry credentials or a query; the
// facilitator and bridge URLs are private, and their errors never repeat
// them; the documents name the facilitator by --public-facilitator-url, or
// by the scheme and host of the facilitator URL alone.
func checkPublishing(c *serveConfig, publicFac string) error {
	if c.baseURL != "" {
		if err := publishedURLError("--base-url", c.baseURL); err != nil {
			return err
		}
	}
	if c.facilitatorURL != "" {
		if err := privateURLError("--facilitator-url", c.facilitatorURL); err != nil {
			return err
		}
		c.publicFacilitator = originOf(c.facilitatorURL)
	}
	if c.bridgeURL != "" {
		if err := privateURLError("--bridge-url", c.bridgeURL); err != nil {
			return err
		}
	}
	if publicFac != "" {
		if c.facilitatorURL == "" {
			return envflag.UsageError("--public-facilitator-url needs --facilitator-url")
		}
		if err := publishedURLError("--public-facilitator-url", publicFac); err != nil {
			return err
		}
		c.publicFacilitator = strings.TrimRight(publicFac, "/")
	}
	return nil
}

// productionSettings names the settings of c that only make sense in
// production (where payments settle), for the refusal of a silent dev
// mode: a payTo wallet, a public base URL, trusted proxies, a PostgreSQL
// database, an MT5 bridge, a facilitator header or public URL.
func productionSettings(c *serveConfig, payTo string, trusted []string) []string {
	var given []string
	if payTo != "" {
		given = append(given, "--pay-to (SVC_PAY_TO)")
	}
	if c.baseURL != "" && !isLoopbackURL(c.baseURL) {
		given = append(given, "a non-loopback --base-url (SVC_BASE_URL)")
	}
	if len(trusted) > 0 {
		given = append(given, "--trusted-proxy (SVC_TRUSTED_PROXIES)")
	}
	if isPostgres(c.db) {
		given = append(given, "a PostgreSQL --db (SVC_DATABASE_URL)")
	}
	if c.bridgeURL != "" || c.terminal == "bridge" {
		given = append(given, "an MT5 bridge (--bridge-url, SVC_MT5_BRIDGE_URL)")
	}
	if c.authHeader != "" {
		given = append(given, "--facilitator-auth-header (SVC_FACILITATOR_AUTH_HEADER)")
	}
	if strings.TrimSpace(*c.chain.rpcURL) != "" {
		given = append(given, "--rpc-url (SVC_RPC_URL)")
	}
	return given
}

// isPostgres reports whether dsn names a PostgreSQL database.
func isPostgres(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// newLogger builds the slog logger on stderr.
func newLogger(stderr io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, envflag.UsageError(fmt.Sprintf("--log-level %q: want debug, info, warn or error", level))
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, envflag.UsageError(fmt.Sprintf("--log-format %q: want text or json", format))
}

// serve runs the server until ctx ends (SIGINT, SIGTERM), then drains the
// calls in flight.
func serve(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) (err error) {
	c, err := parseServe(args, stderr, getenv)
	if err != nil {
		return err
	}
	// No error leaves with a credential of the configuration in it.
	defer func() { err = c.secrets.Err(err) }()
	// Log lines (one per request at level info) and the banner go out
	// through a buffer (see logSink), with every credential masked (see
	// scrub.Secrets.Writer).
	sink := newLogSink(stderr)
	stopFlush := sink.start(logFlushEvery)
	defer stopFlush()
	stderr = c.secrets.Writer(sink)
	log, err := newLogger(stderr, c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	log = slog.New(flushOnWarn{Handler: log.Handler(), sink: sink})
	if c.devMode {
		if err := checkDevAddr(c.addr); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	bound := ln.Addr().String()
	a, err := assemble(ctx, c, log, bound)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer a.st.Close()
	srv, st, catalog, base := a.srv, a.st, a.catalog, a.base

	admin, err := startAdmin(c.adminAddr, c.adminToken, srv, log)
	if err != nil {
		return err
	}
	defer admin.stop(context.Background())
	printBanner(stderr, c, bound, base, st.Dialect(), catalog)
	if admin != nil {
		fmt.Fprintf(stderr, "  admin:       http://%s — /metrics, the dashboard (/) and /debug/pprof/, not on the public port\n\n", admin.Addr())
	}
	log.Info("svc: listening", "addr", bound, "base_url", base, "dev_mode", c.devMode, "network", c.network,
		"pay_to", c.payTo, "terminal", c.terminal, "store", st.Dialect(), "tools", catalog.Len(), "version", buildVersion())
	if c.devMode {
		log.Warn("svc: " + httpserver.DevModeNote)
	}
	if c.terminal == "none" {
		log.Warn("svc: no gold terminal configured: the three gold routes answer 503 (set --bridge-url or --terminal)")
	}
	_ = sink.Flush() // the banner and the start-up lines at once

	go pruneLoop(ctx, st, log)
	// The engine's heartbeat and recovery run as long as the server serves,
	// and stop after the paid calls in flight.
	ectx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		_ = a.engine.Run(ectx)
	}()
	defer func() {
		stopEngine()
		<-engineDone
		a.engine.Close() // before the store closes (deferred earlier)
		a.closeFacilitator()
	}()
	// The claimer of batch-settlement channels (when offered) stops first,
	// while the facilitator it settles through is still up.
	stopClaimer, err := c.batch.startClaimer(ctx, c.network, strings.TrimSpace(*c.chain.rpcURL), a.facilitator, st, srv.Registry(), log)
	if err != nil {
		return err
	}
	defer stopClaimer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	log.Info("svc: stopping; waiting for calls in flight", "in_flight", srv.InFlight(), "timeout", c.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("svc: stopped")
	return nil
}

// checkDevAddr refuses dev mode on an address that is not loopback.
func checkDevAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return envflag.UsageError(fmt.Sprintf("--addr %q: %v", addr, err))
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return nil
	}
	return envflag.UsageError(fmt.Sprintf("dev mode (no --facilitator-url: the local facilitator settles nothing on chain) refuses to listen on %q, "+
		"which is not a loopback address; use 127.0.0.1 or [::1], or configure --facilitator-url and --pay-to for production", addr))
}

// openTerminal builds the gold terminal; nil for "none".
func openTerminal(c *serveConfig) (xau.Terminal, error) {
	switch c.terminal {
	case "simulated":
		t, err := xau.NewSimulated(xau.SimConfig{Symbol: c.symbol})
		if err != nil {
			return nil, fmt.Errorf("simulated terminal: %w", err)
		}
		return t, nil
	case "bridge":
		t, err := mt5.New(mt5.Config{BaseURL: c.bridgeURL, Token: c.bridgeToken})
		if err != nil {
			return nil, fmt.Errorf("MT5 bridge: %w", err)
		}
		return t, nil
	case "replay":
		tf, err := xau.ParseTimeframe(c.replayTimeframe)
		if err != nil {
			return nil, envflag.UsageError(fmt.Sprintf("--replay-timeframe %q: want M1, M5, M15 or H1", c.replayTimeframe))
		}
		t, err := replay.Open(replay.Config{Symbol: c.symbol, Timeframe: tf, ServerUTCOffset: c.replayOffset}, c.replayFile)
		if err != nil {
			return nil, fmt.Errorf("replay terminal: %w", err)
		}
		return t, nil
	}
	return nil, nil
}

// newFacilitator builds the local facilitator (dev mode) or the remote
// one.
func newFacilitator(c *serveConfig, log *slog.Logger, signers *exact.SignerCache) (x402.Facilitator, error) {
	if c.devChain != nil {
		return startEmbeddedChain(c, log, signers)
	}
	if c.settle == settleOnchain {
		return c.chain.buildMux(context.Background(), c.network, c.payTo, signers, log)
	}
	if c.devMode {
		f, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{c.network}, PayTo: c.payTo,
			Verifier: exact.Verifier{Signers: signers}})
		if err != nil {
			return nil, fmt.Errorf("local facilitator: %w", err)
		}
		return f, nil
	}
	cfg := facilitator.HTTPConfig{URL: c.facilitatorURL, Logger: log}
	if c.authHeader != "" {
		name, value, _ := strings.Cut(c.authHeader, ":")
		h := http.Header{}
		h.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		cfg.AuthHeaders = func(context.Context, string) (http.Header, error) { return h.Clone(), nil }
	}
	f, err := facilitator.NewHTTP(cfg)
	if err != nil {
		return nil, fmt.Errorf("facilitator: %w", err)
	}
	return f, nil
}

// openStore opens the SQLite file (creating its directory) or PostgreSQL.
func openStore(ctx context.Context, dsn string) (store.Store, error) {
	if !isPostgres(dsn) {
		path := strings.TrimPrefix(dsn, "sqlite:")
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("store directory: %w", err)
			}
		}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		// The store's errors say "store: ..." already; the database
		// password never appears in them.
		var s scrub.Secrets
		s.AddDSN(dsn)
		return nil, s.Err(err)
	}
	return st, nil
}

// openStoreReadOnly opens the store of a report (svc ledger, payments,
// reconcile) for reading: a SQLite file that does not exist, or a database
// without svc's schema, is refused with a usage error (exit 2) that says
// where the data usually is, instead of a report of nothing.
func openStoreReadOnly(ctx context.Context, dsn string) (store.Store, error) {
	st, err := store.Open(ctx, dsn, store.ReadOnly())
	if err == nil {
		return st, nil
	}
	var s scrub.Secrets
	s.AddDSN(dsn)
	switch {
	case errors.Is(err, store.ErrNoDatabase):
		return nil, envflag.UsageError(fmt.Sprintf("--db %s: no such database: svc serve creates it (%s under the directory it runs in, unless --db or $SVC_DATABASE_URL says otherwise); run from that directory or pass --db", scrub.DisplayDSN(dsn), defaultDB))
	case errors.Is(err, store.ErrSchema):
		return nil, envflag.UsageError(fmt.Sprintf("--db %s: not an svc database of this version (%s); svc serve creates and upgrades it", scrub.DisplayDSN(dsn), s.Scrub(err.Error())))
	}
	return nil, s.Err(err)
}

// pruner is the store's periodic housekeeping (store.Store.PruneAll).
type pruner interface {
	PruneAll(ctx context.Context, now time.Time) (store.Pruned, error)
}

// pruneLoop deletes expired payment journal rows, forgets recorded answers
// past their retention and drops old lounge entries, periodically. The
// journal is pruned in batches that leave the writer to the paid calls in
// between; a round that does not finish within pruneInterval stops and the
// next one takes up the rest.
func pruneLoop(ctx context.Context, st pruner, log *slog.Logger) {
	t := time.NewTicker(pruneInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			pctx, cancel := context.WithTimeout(ctx, pruneInterval)
			p, err := st.PruneAll(pctx, now)
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				log.Warn("svc: pruning the store stopped; the next round continues", "error", err,
					"payments", p.Payments, "answers", p.Answers)
			default:
				log.Debug("svc: pruned the store", "payments", p.Payments, "answers", p.Answers, "lounge_entries", p.LoungeEntries)
			}
		}
	}
}

// printBanner tells a human on stderr what is running and what it means.
func printBanner(w io.Writer, c *serveConfig, bound, base, dialect string, catalog *tools.Catalog) {
	var b strings.Builder
	mode := "production"
	if c.devMode || c.devChain != nil {
		mode = "DEV MODE"
	}
	fmt.Fprintf(&b, "\nsvc %s — %s — listening on http://%s\n", buildVersion(), mode, bound)
	if base != "http://"+bound {
		fmt.Fprintf(&b, "  public URL:  %s\n", base)
	}
	if c.devMode {
		b.WriteString("  payments:    LOCAL facilitator: payment signatures are verified for real, but NOTHING is settled on chain\n")
		b.WriteString("               (every PAYMENT-RESPONSE says onChain:false; /health says devMode:true)\n")
	} else if c.devChain != nil {
		b.WriteString(c.devChain.bannerLines())
	} else if c.settle == settleOnchain {
		b.WriteString("  payments:    settled ON CHAIN by this process (relayer key; --rpc-url)\n")
		if c.chain.relayerKey != nil {
			fmt.Fprintf(&b, "  relayer:     %s pays the gas of every settlement: keep it funded (/health shows its balance)\n",
				crypto.PubkeyToAddress(c.chain.relayerKey.PublicKey).Hex())
		}
	} else {
		fmt.Fprintf(&b, "  payments:    facilitator %s (its path, credentials and query are not shown; published as %s)\n", originOf(c.facilitatorURL), c.publicFacilitator)
	}
	fmt.Fprintf(&b, "  network:     %s (USDC)\n", c.network)
	if c.devPayTo {
		fmt.Fprintf(&b, "  payTo:       %s  (DEV address from a public key: never send funds to it)\n", c.payTo)
	} else {
		fmt.Fprintf(&b, "  payTo:       %s\n", c.payTo)
	}
	switch c.terminal {
	case "simulated":
		b.WriteString("  gold data:   SIMULATED terminal (responses say \"source\":\"simulated\")\n")
	case "none":
		b.WriteString("  gold data:   none configured: the gold routes answer 503\n")
	default:
		fmt.Fprintf(&b, "  gold data:   %s\n", c.terminal)
	}
	fmt.Fprintf(&b, "  store:       %s (%s)\n", dialect, scrub.DisplayDSN(c.db))
	b.WriteString("  payments:    every step journaled in the store before it happens; interrupted payments are recovered at start\n")
	b.WriteString("  recovery:    " + recoveryNote(c) + "\n")
	ops := "/health /livez /readyz /metrics"
	if c.adminAddr != "" {
		ops = "/health /livez /readyz (/metrics on the admin listener)"
	}
	fmt.Fprintf(&b, "  tools:       %d paid routes; free: / /llms.txt /api/find /api/route /api/catalog /api/try /openapi.json /skill.md\n               /mcp /server.json /a2a /.well-known/agent-card.json /.well-known/x402 /api/club %s\n", catalog.Len(), ops)
	fmt.Fprintf(&b, "  try:         curl -i %s/api/session-state\n\n", base)
	_, _ = io.WriteString(w, b.String())
}

// recoveryNote says what the recovery of an interrupted settlement relies
// on, for the banner.
func recoveryNote(c *serveConfig) string {
	switch {
	case c.devMode:
		return "the local facilitator's records (dev mode)"
	case c.settle == settleOnchain:
		return "backed by the chain (authorizationState and the transfer's events, through --rpc-url)"
	case c.statusRPC != "":
		return "backed by the chain: interrupted settlements are read from --rpc-url (authorizationState and the transfer's events)"
	}
	return "DEPENDS ON THE FACILITATOR DEDUPLICATING: one that answers a settlement presented again with \"nonce already used\"\n" +
		"               leaves it unknown for the operator (svc ledger, svc reconcile); give --rpc-url so that recovery asks the chain"
}

// assembled is a server built from a configuration, not yet serving.
type assembled struct {
	srv         *httpserver.Server
	engine      *engine.Engine // the caller runs it (engine.Run) while serving
	st          store.Store    // the caller closes it
	catalog     *tools.Catalog
	base        string // the public base URL
	facilitator x402.Facilitator
	// closeFacilitator stops what the facilitator still runs (the on-chain
	// one follows its transactions until they are mined); a no-op for
	// the others. The caller calls it after the engine's Close.
	closeFacilitator func()
}

// assemble opens the terminal, the facilitator and the store of c and
// builds the server with every route, for a listener bound to bound.
func assemble(ctx context.Context, c *serveConfig, log *slog.Logger, bound string) (*assembled, error) {
	terminal, err := openTerminal(c)
	if err != nil {
		return nil, err
	}
	// The engine and a local facilitator check the same payments: one
	// signature recovery each is enough.
	signers := exact.NewSignerCache(4096)
	facilitator, err := newFacilitator(c, log, signers)
	if err != nil {
		return nil, err
	}
	// A facilitator reached over HTTP tells no status: with --rpc-url,
	// recovery asks the chain itself what became of a settlement.
	var status x402.StatusChecker
	if c.statusRPC != "" {
		r, err := statusReader(ctx, c.statusRPC, c.network, uint64(*c.chain.confirmations))
		if err != nil {
			return nil, err
		}
		status = r
	}
	st, err := openStore(ctx, c.db)
	if err != nil {
		return nil, err
	}
	base := c.baseURL
	if base == "" {
		base = "http://" + bound
	}
	catalog, err := tools.New(tools.Options{Prices: c.prices, BaseURL: base, Network: c.network, BodyLimit: c.bodyLimit})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	// One payment engine for every transport: its outcomes are counted by
	// the server's metrics once the server exists. Outside dev mode the
	// facilitator verifies every payment after the local checks, so a
	// smart-contract wallet's signature (ERC-1271), which only the chain can
	// check, is left to it; the local facilitator of dev mode checks
	// signatures locally only.
	var observe paymentObserver
	scheme, err := exactserver.New(exactserver.Config{
		Facilitator:           facilitator,
		Status:                status,
		Verifier:              &exact.Verifier{Signers: signers},
		SkipFacilitatorVerify: c.devMode,
		ContractWallets:       !c.devMode,
		Deduplicates:          c.devMode || c.settle == settleOnchain,
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	schemes, err := c.batch.serverSchemes(ctx, scheme, facilitator, st, c.network, log)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	eng, err := engine.New(engine.Config{
		Schemes:          schemes,
		Journal:          st,
		Logger:           log,
		SettleTimeout:    c.settleTimeout,
		RunTimeout:       c.toolTimeout + time.Second,
		PayerBurst:       c.payerBurst,
		PayerRefill:      c.payerRefill,
		PayerConcurrency: c.payerConcurrency,
		Hook:             crashTestHook(log),
		Observe:          observe.observe,
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	// One shop sells the tools on every transport: HTTP, MCP and A2A.
	shopCfg := sell.Config{Offers: eng, Catalog: catalog, PayTo: c.payTo, Network: c.network,
		Env: tools.Env{Terminal: terminal, DefaultSymbol: c.symbol, RegexTimeout: c.regexTimeout}}
	if terminal != nil {
		hc := xau.NewHealthCache(terminal, c.healthTTL, nil)
		shopCfg.TerminalCheck, shopCfg.SymbolCheck = hc.Check, hc.CheckSymbol
	}
	shop, err := sell.New(shopCfg)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	var admit freeAdmitter
	routes, disc, err := freeRoutes(c, catalog, st, base, log, eng, shop, &admit)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	srv, err := httpserver.New(httpserver.Config{
		Catalog:        catalog,
		Routes:         routes,
		Observer:       disc.Stats(),
		Traffic:        disc.Stats().Traffic(),
		Terminal:       terminal,
		Env:            tools.Env{DefaultSymbol: c.symbol, RegexTimeout: c.regexTimeout},
		Shop:           shop,
		HealthTTL:      c.healthTTL,
		Facilitator:    facilitator,
		Store:          st,
		Engine:         eng,
		SettleTimeout:  c.settleTimeout,
		UnpaidRate:     c.unpaidRate,
		UnpaidBurst:    c.unpaidBurst,
		PayTo:          c.payTo,
		Network:        c.network,
		PublicBaseURL:  base,
		DevMode:        c.devMode,
		DevChain:       c.devChain != nil,
		Addr:           bound,
		BodyLimit:      c.bodyLimit,
		BodyMemory:     c.bodyMemory,
		BodyRate:       c.bodyRate,
		RateLimit:      c.rate,
		RateBurst:      c.burst,
		TrustedProxies: c.trusted,
		ToolTimeout:    c.toolTimeout,
		Logger:         log,
		Version:        buildVersion(),
		SeparateAdmin:  c.adminAddr != "",
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	fn := srv.ObservePayment
	observe.fn.Store(&fn)
	admit.srv.Store(srv)
	closeFac := func() {}
	if cl, ok := facilitator.(interface{ Close() }); ok {
		closeFac = cl.Close
	}
	return &assembled{srv: srv, engine: eng, st: st, catalog: catalog, base: base, facilitator: facilitator, closeFacilitator: closeFac}, nil
}

// paymentObserver forwards the engine's events to a consumer set after the
// engine is built (the server, which needs the engine first).
type paymentObserver struct {
	fn atomic.Pointer[func(engine.Event)]
}

func (o *paymentObserver) observe(ev engine.Event) {
	if f := o.fn.Load(); f != nil {
		(*f)(ev)
	}
}

// freeAdmitter takes extra requests from the server's free-route rate limit
// for the routes built before the server (MCP batches); it admits all until
// the server is set.
type freeAdmitter struct {
	srv atomic.Pointer[httpserver.Server]
}

func (a *freeAdmitter) admit(r *http.Request, n int) (bool, time.Duration) {
	if s := a.srv.Load(); s != nil {
		return s.AdmitFree(r, n)
	}
	return true, 0
}

// admitUnpaid, admitPayment and paymentRefused are the server's limits of
// unpaid calls and refused payments, for the MCP and A2A sellers.
func (a *freeAdmitter) admitUnpaid(r *http.Request) (bool, time.Duration) {
	if s := a.srv.Load(); s != nil {
		return s.AdmitUnpaid(r)
	}
	return true, 0
}

func (a *freeAdmitter) admitPayment(r *http.Request) (bool, time.Duration) {
	if s := a.srv.Load(); s != nil {
		return s.AdmitPayment(r)
	}
	return true, 0
}

func (a *freeAdmitter) paymentRefused(r *http.Request) {
	if s := a.srv.Load(); s != nil {
		s.PaymentRefused(r)
	}
}

// serveFlagGroups orders `svc serve -h` by topic.
var serveFlagGroups = []envflag.Group{
	{Title: "Listening", Names: []string{"addr", "base-url", "trusted-proxy", "admin-addr", "admin-token-env"}},
	{Title: "Payments", Names: []string{"dev", "chain", "network", "pay-to", "facilitator-url", "facilitator-auth-header", "public-facilitator-url", "price", "settle-timeout"}},
	{Title: "The chain (--rpc-url: read by recovery with --facilitator-url; settled on with --settle onchain)", Names: []string{"rpc-url", "settle", "relayer-key-env", "relayer-key-file", "max-fee-gwei", "max-tip-gwei", "min-relayer-balance", "confirmations"}},
	{Title: "Gold terminal", Names: []string{"terminal", "bridge-url", "bridge-token-env", "replay-file", "replay-timeframe", "replay-server-offset", "symbol", "health-ttl"}},
	{Title: "Payment schemes (batch-settlement: payment channels, one deposit then vouchers)", Names: sellSchemeFlagNames()},
	{Title: "Storage", Names: []string{"db"}},
	{Title: "Limits", Names: []string{"body-limit", "body-memory", "body-rate", "rate", "burst", "unpaid-rate", "unpaid-burst", "payer-burst", "payer-refill", "payer-concurrency", "regex-timeout", "tool-timeout", "shutdown-timeout"}},
	{Title: "Logs", Names: []string{"log-level", "log-format"}},
}

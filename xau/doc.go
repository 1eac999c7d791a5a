// Package xau is svc's port to a trading terminal: the read-only source of
// the gold (XAUUSD) quotes and bars behind the xau_quote, xau_bars and
// xau_market_state tools.
//
// # The port
//
// [Terminal] has three methods, Health, Quote and Bars, and nothing else: no
// method can place an order, touch a position or change an account, so no
// adapter can either. Prices are exact decimals (shopspring/decimal), times
// are UTC, bars come oldest first with open times aligned to their
// [Timeframe] (M1, M5, M15, H1). Every Health and Quote says where it came
// from ([Source]: "simulated", "scripted", "mt5", "replay"), so a response
// can never pass simulated data off as real.
//
// Errors distinguish what a server must tell apart. [ErrUnavailable]: the
// terminal cannot answer now (disconnected, timed out, token rejected, or it
// sent data that failed validation); the server answers 503 and settles no
// payment. [ErrBadRequest] and [ErrUnknownSymbol]: the request is wrong; the
// server answers 400. Errors are [*Error] values whose Reason is safe to show
// a client and whose Cause is for logs. This package does not import the
// root package svc; the root maps these sentinels to its own error kinds.
//
// Untrusted data is checked with [ValidateQuote] (bid > 0, ask ≥ bid, spread
// ≤ 1 % of the bid and an optional absolute cap) and [ValidateBars] (OHLC
// consistency, positive prices, strictly increasing aligned times).
//
// # Adapters
//
//   - [NewSimulated]: a deterministic simulated XAUUSD terminal, the default
//     of `svc serve` in dev mode. Realistic volatility (17 % a year by
//     default), quiet Asian and busy London/New York sessions, spreads of
//     0.10–0.40, prices in cents, a weekend closure from Friday 22:00 to
//     Sunday 22:00 UTC. The same seed and clock always give the same data.
//   - [NewScripted], [Down], [NewSwitchable]: test fakes that serve fixed
//     data, are always down, or go down and up on command.
//
// Two adapters live in subpackages, so that a program that does not use them
// links neither an HTTP client nor a CSV reader:
//
//   - xau/mt5: a real MetaTrader 5 terminal through a small HTTP bridge
//     running next to it (contract and reference implementation in
//     xau/mt5/bridge: README.md and bridge.py). Responses are decoded
//     strictly and validated; bad upstream data becomes ErrUnavailable.
//   - xau/replay: replays an MT5 history export (the CSV of MT5's "Export
//     bars") up to a clock, never revealing a bar that had not completed by
//     then.
//
// An adapter outside this package builds its errors with [Unavailable],
// [BadRequest], [UnknownSymbol] and [ContextError], and checks its
// arguments and data with [CheckBarsRequest], [ValidateQuote],
// [ValidateBars] and [CheckBar].
//
// [HealthCache] sits in front of any Terminal for the pre-payment
// availability check: results (up or down) are reused for two seconds and
// concurrent checks share one underlying call.
//
// # Pointing a server at a real terminal
//
//  1. On the terminal's Windows host, run xau/mt5/bridge/bridge.py as a service
//     with BRIDGE_TOKEN (a long random secret) and MT5_SERVER_TZ (the trading
//     server's time zone) set, listening on 127.0.0.1 or a private (VPN)
//     address; see xau/mt5/bridge/README.md.
//  2. Make it reachable from the svc host only: an SSH tunnel, WireGuard, or
//     TLS in front, plus a firewall rule.
//  3. Give svc the bridge URL and the same token (cmd/svc's bridge settings),
//     which build mt5.New(mt5.Config{BaseURL: url, Token: token}).
//     Responses then carry "source":"mt5"; a wrong token shows up as
//     ErrUnavailable "bridge rejected token".
package xau

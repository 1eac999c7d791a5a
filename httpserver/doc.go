// Package httpserver is svc's reference HTTP server: wiring only. The tools
// and their rules live in the root package and in tools, the payment
// protocol in x402, the terminal port in xau and the durable state in
// store; this package puts them on routes and adds the limits, errors, logs
// and metrics of a public service.
//
// # Routes
//
// Every tool of the catalog is a paid route at its method and path (the
// tools package's descriptor table: GET /api/session-state, POST
// /api/risk-levels, ...); nothing here knows a tool by name. Free routes:
// GET /health (terminal, store and facilitator status, what recovery relies
// on, dev mode, version),
// GET /livez and GET /readyz (probes) and GET /metrics (Prometheus text
// format; on the admin handler only with Config.SeparateAdmin). Extra
// routes (the discovery surfaces, among them GET /api/catalog, and the
// club) are given in Config.Routes or with Server.Mount.
//
// # The paid pipeline
//
// In order, so that nobody pays for a request that cannot succeed:
//
//  1. the input is decoded and validated by the tool's adapter
//     (tools.Tool.Decode): invalid → 400 with the field errors, no 402;
//  2. the terminal-backed tools check the terminal's availability and the
//     symbol a call names through an xau.HealthCache (a result lives
//     Config.HealthTTL): down → 503, a symbol the terminal does not serve →
//     400 unknown_symbol, no 402;
//  3. the payment engine (x402/engine) through its net/http binding
//     (x402/nethttp): without payment → 402 with PAYMENT-REQUIRED (x402 v2:
//     exact scheme, the network's USDC, PayTo, the price in atomic units,
//     and the bazaar extension with the tool's input schema and examples),
//     encoded once per route; with payment, the engine checks it locally,
//     reserves the authorization in the payment journal (Config.Store) and
//     asks the facilitator's /verify (not the local dev facilitator's,
//     which adds nothing to the local checks);
//  4. the tool runs on the call decoded in step 1, bounded by
//     Config.ToolTimeout; its failure (503 terminal, 504 time limit) is
//     answered as such and nothing is settled — not even a time-out on the
//     payer's own input (x402 settles what is delivered). Such failures
//     are charged to the payer instead (the engine's payer budget,
//     engine.Config.PayerBurst): a payer whose paid calls keep running for
//     nothing, or who has too many running at once, gets 429 with
//     Retry-After before any tool runs again (on MCP and A2A too, through
//     the same engine), other payers unaffected;
//  5. the answer is journaled (state settling) before the facilitator's
//     settle; the settlement and its ledger entry (tool key, payer, amount,
//     network, asset, transaction, nonce, route, transport and the referral
//     code of the call: the "ref" query parameter or the X-Ref header) are
//     journaled in one commit before the answer goes out with
//     PAYMENT-RESPONSE. A crash anywhere is recovered by the engine (at
//     start and every few seconds, from any instance): nothing settled is
//     lost, nothing settles twice, and the client's retry of the same
//     payment gets the recorded answer. The request a payment buys is
//     identified by the decoded input (tools.Call.Fingerprint, the rule of
//     every transport): a retry whose JSON is formatted otherwise or whose
//     query parameters come in another order gets the recorded answer;
//     another value is refused as a used authorization.
//
// HEAD on a paid route never pays: it is answered as the unpaid GET. The
// 402's JSON body is the x402 v1 offer (for v1 clients; v2 clients read the
// header).
//
// # Browsers (CORS)
//
// A payment is a signature in a header, not an ambient credential, so the
// paid routes are open to every origin: each answer carries
// Access-Control-Allow-Origin "*" and exposes PAYMENT-REQUIRED and
// PAYMENT-RESPONSE, and OPTIONS on a paid path answers the preflight (204,
// the route's method, Access-Control-Allow-Headers with Content-Type,
// PAYMENT-SIGNATURE, X-PAYMENT, X-Ref, X-Request-Id and
// Access-Control-Expose-Headers, which the official x402 browser clients
// send on the paid retry; a plain list of requested names is allowed as
// asked). Preflights are free and rate-limited as free routes are.
//
// # Errors
//
// Every error answer is an RFC 9457 application/problem+json: type
// ("urn:svc:problem:<code>"), title, status, detail, code, instance (the
// path), requestId and, for invalid input, errors [{field, rule, message}].
// *svc.Error kinds map to 400, 503, 504, 413 and 500; unknown paths are 404
// and known paths with another method 405 with an Allow header. The
// payment binding's own answers (malformed payment header 400, facilitator
// 502 or 504, payment journal 503, settlement pending 503, unpaid and
// refused-payment rate limits 429, body memory exhausted 503, body too slow 408) are written by the same problem
// writer, their x402 reason as the code.
//
// # Limits
//
// Request bodies are bounded by the catalog's body limit (2 MiB by
// default; 413 past it), or less where a route needs less (Route.BodyLimit:
// kilobytes for the finder and the router). Every body, on paid and free
// routes alike, is read within one memory budget as its bytes arrive
// (Config.BodyMemory, 16 MiB by default, a free route's body counted four
// times for the copies its decoding makes; 503 server_busy with
// Retry-After when it stays full for two seconds), of which one client
// address holds at most a share (Config.BodyClientMemory, a quarter by
// default, but always room for one body; 429 with Retry-After past it),
// and it must arrive at a minimum rate
// (Config.MinBodyRate, 16 KiB/s after a grace of five seconds; 408
// request_timeout and the connection closed below it): one slow client
// cannot hold the memory the others need. On the free routes (MCP and A2A
// included) the server reads the body before the handler runs and charges
// its bytes to the client's body rate (Config.BodyRate, 1 MiB/s with a
// burst of twice the body limit; 429 with Retry-After past it, and a body
// whose Content-Length is past it is refused unread, its connection
// closed), which bounds the work of decoding them per client, not only
// their count; and requests there with a body over LargeBody are handled
// at most Config.LargeBodyWork at once (GOMAXPROCS; 503 with Retry-After
// after a two-second wait), so that a flood of large messages from many
// addresses leaves the probes and the small requests their share of the
// CPU. Free routes (and unknown paths) are rate-limited
// per client address with a token bucket (Config.RateLimit per second,
// Config.RateBurst; 429 with Retry-After); on the paid routes, requests
// without payment are limited likewise (Config.UnpaidRate, UnpaidBurst),
// and so, in a bucket of their own at the same rate, are refused payments:
// a client whose payments were refused more than UnpaidBurst times
// recently gets 429 before its next payment is checked, while a client
// whose payments are good is never slowed down. The client
// address is the TCP peer, an IPv6 address counted by its /64, or the
// right-most untrusted X-Forwarded-For address when the peer is one of
// Config.TrustedProxies. The http.Server has header, read, write and idle
// timeouts and a header size limit; Shutdown waits for the requests in
// flight, paid calls included.
//
// # Observability
//
// Each request gets an id (a valid incoming X-Request-Id is kept, else one
// is generated) echoed in X-Request-Id and in problems, and one access log
// record (slog, Info): method, path, route, status, duration, bytes,
// request id and, for errors, the reason. Bodies, query strings and headers
// (payment headers included) are never logged.
//
// Metrics use prometheus/client_golang with a registry of the server's own
// (Server.Registry; never the library's global one). GET /metrics exposes
// svc_http_requests_total{route,kind,method,status},
// svc_http_request_duration_seconds{route} (histogram),
// svc_x402_payment_required_total{route} (402s offered),
// svc_x402_settlements_total{route} (paid calls over every transport, under
// the tool's HTTP route), svc_x402_revenue_atomic_total{route,network,asset}
// (amounts settled with the call, in atomic units: exact payments),
// svc_x402_charged_atomic_total{route,network,asset,scheme} (every paid
// call's charge, whatever its scheme; a batch-settlement channel's charges
// are settled later, when the claimer claims them), svc_failures_total{reason},
// svc_rate_limited_total, svc_x402_payments{state} (the payment journal's
// rows by state, asked of the store at scrape time: settling and unknown
// ones need attention), svc_x402_recovered_total{result},
// svc_terminal_up, svc_terminal_lag_seconds, svc_facilitator_up,
// svc_uptime_seconds, svc_build_info{version,revision,goversion} and the Go
// runtime and process collectors. The first, the 402s and the settlements
// are counted in a stats.Traffic (Config.Traffic): the one count of the
// answered requests, which discovery's stats routes read too, so that no
// event is counted twice; Server.Counts returns its figures (the
// dashboard's conversion table). RouteDocs describes the server's own free
// routes for discovery's documents.
//
// # Probes and the admin handler
//
// GET /livez answers 200 while the process serves. GET /readyz (Readiness)
// is 200 when the store answers and holds its schema (Store.CheckSchema)
// and the facilitator offers the exact scheme on the network, 503 otherwise;
// the terminal is reported with the routes it backs but never decides.
// Both say what the recovery of an interrupted settlement relies on
// (RecoveryHealth: the chain, or the facilitator deduplicating), which
// never decides readiness either.
// AdminHandler serves /metrics, the dashboard (revenue per tool and day from
// the ledger, conversion, journal states, dependencies, referral codes;
// HTML with inline SVG, nothing fetched from elsewhere), the probes and
// pprof, for a listener of the operator's; with Config.SeparateAdmin,
// /metrics leaves the public routes.
//
// # Dev mode
//
// With the local facilitator (facilitator.Local, or Config.DevMode)
// payments are verified for real but nothing is settled on chain. /health
// says so, every PAYMENT-RESPONSE says so (onChain false), and the server
// refuses to listen on any address but loopback.
package httpserver

// Package httpserver is svc's reference HTTP server: wiring only. The tools
// and their rules live in the root package and in tools, the payment
// protocol in x402, the terminal port in xau and the durable state in
// store; this package puts them on routes and adds the limits, errors, logs
// and metrics of a public service.
//
// # Routes
//
// Every tool of the catalog is a paid route at its method and path (section
// 4 of the interface specification: GET /api/session-state, POST
// /api/risk-levels, ...); nothing here knows a tool by name. Free routes:
// GET /health (terminal, store and facilitator status, dev mode, version),
// GET /metrics (Prometheus text format) and GET /api/catalog
// ({ok, total, offset, limit, items}; offset ≥ 0, limit 1–100, default 50).
// Extra routes (the discovery surfaces) are given in Config.Routes or with
// Server.Mount; a "GET /api/catalog" route replaces the built-in listing.
//
// # The paid pipeline
//
// In order, so that nobody pays for a request that cannot succeed:
//
//  1. the input is decoded and validated by the tool's adapter
//     (tools.Tool.Decode): invalid → 400 with the field errors, no 402;
//  2. the terminal-backed tools check the terminal's availability through
//     an xau.HealthCache (a result lives Config.HealthTTL): down → 503, no
//     402;
//  3. without payment → 402 with PAYMENT-REQUIRED (x402 v2: exact scheme,
//     the network's USDC, PayTo, the price in atomic units, and the bazaar
//     extension with the tool's input schema and examples); with payment,
//     the x402 middleware checks it locally, reserves the authorization in
//     the store and asks the facilitator's /verify;
//  4. the tool runs on the call decoded in step 1, bounded by
//     Config.ToolTimeout; its failure (503 terminal, 504 time limit) is
//     answered as such and nothing is settled;
//  5. the payment is settled, the answer goes out with PAYMENT-RESPONSE and
//     the settlement is appended to the ledger with the tool key, payer,
//     amount, network, asset, transaction, authorization nonce and the
//     referral code of the call (the "ref" query parameter or the X-Ref
//     header). An append that fails does not touch the answer; the
//     settlement is appended again in the background with growing pauses,
//     idempotently per authorization nonce. With Config.LedgerSpool it is
//     also kept in that local file until recorded, across crashes and
//     restarts; without one it is retried for up to 15 minutes and once
//     more at Shutdown, and whatever is given up is logged with what is
//     needed to reconcile it.
//
// When Config.PublicBaseURL is set, a tool's resource URL is its endpoint
// (PublicBaseURL + path), the offer is the same for every request, and the
// 402 the middleware writes is recorded once and replayed to unpaid
// requests after steps 1 and 2: encoding the offer is most of the cost of a
// 402 otherwise. The 402's JSON body is the x402 v1 offer (for v1 clients;
// v2 clients read the header).
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
// and known paths with another method 405 with an Allow header. The x402
// middleware's own answers (malformed payment header 400, facilitator 502
// or 504, replay guard 503) are problems too, with a "reason" member.
//
// # Limits
//
// Request bodies are bounded by the catalog's body limit (2 MiB by
// default; 413 past it). Free routes (and unknown paths) are rate-limited
// per client address with a token bucket (Config.RateLimit per second,
// Config.RateBurst; 429 with Retry-After); paid routes are not. The client
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
// (payment headers included) are never logged. GET /metrics exposes
// svc_http_requests_total{route,kind,method,status},
// svc_http_request_duration_seconds{route} (histogram),
// svc_x402_payment_required_total{route}, svc_x402_settlements_total{route},
// svc_failures_total{reason}, svc_rate_limited_total,
// svc_ledger_append_failures_total, svc_ledger_retry_pending,
// svc_ledger_unrecorded_total and svc_uptime_seconds.
//
// # Dev mode
//
// With the local facilitator (x402.LocalFacilitator, or Config.DevMode)
// payments are verified for real but nothing is settled on chain. /health
// says so, every PAYMENT-RESPONSE says so (onChain false), and the server
// refuses to listen on any address but loopback.
package httpserver

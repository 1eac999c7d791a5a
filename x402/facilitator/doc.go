// Package facilitator holds implementations of x402.Facilitator and the
// facilitator HTTP API:
//
//   - HTTP: a client of a remote facilitator's HTTP API (POST /verify,
//     POST /settle, GET /supported), failures typed as *Error;
//   - Local: for development, verifies exact payments for real
//     (x402/exact) and settles nothing on chain; it also implements
//     x402.StatusChecker;
//   - Handler and NewHandler: serve any x402.Facilitator over that HTTP
//     API, honouring the payment-identifier extension;
//   - WithPaymentIdentifier: a payload ready to be (re-)presented for
//     settlement with a payment identifier.
package facilitator

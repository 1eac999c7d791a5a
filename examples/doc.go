// Package examples holds runnable programs that use svc as a library, each
// a main package in a directory of its own:
//
//   - library: call the tools as plain Go functions;
//   - embed: run the reference server (package httpserver) in your own
//     program, in dev mode;
//   - middleware: charge for your own handlers with the x402 middleware
//     (package x402/nethttp) on your own http.ServeMux;
//   - pay: pay for a call with the Go x402 client (package x402/client);
//   - mcp-tool: charge for your own MCP tool (package x402/mcp on the
//     official Go SDK);
//   - a2a-agent: charge for your own A2A skill with the A2A x402 payments
//     extension (package x402/a2a).
//
// Run one with `go run ./examples/NAME`; the tests of this package build
// every example and run them against servers on 127.0.0.1.
package examples

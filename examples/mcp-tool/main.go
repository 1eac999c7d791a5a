// Command mcp-tool is an MCP server (the official Go SDK, Streamable HTTP
// at /mcp) that charges for its own tool with x402 (package x402/mcp): the
// tool "fortune" costs $0.001 in USDC on Base. A call without payment gets
// the x402 PaymentRequired; a client that pays (Cloudflare's agents
// withX402Client, or any client of the x402 MCP transport) gets the
// fortune with the settlement in _meta["x402/payment-response"].
//
// It runs in dev mode: a local facilitator verifies payment signatures for
// real but settles nothing on chain, and the payment journal is in memory.
//
//	go run ./examples/mcp-tool -addr 127.0.0.1:8092
//
// For production, use a facilitator that settles (x402/facilitator's HTTP
// client, or x402/facilitator/onchain), a durable journal (package store)
// and your own PayTo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// payTo receives the payments (any valid address in dev mode).
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func main() {
	addr := flag.String("addr", "127.0.0.1:8092", "listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-tool:", err)
		os.Exit(1)
	}
}

// FortuneInput are the arguments of the paid tool.
type FortuneInput struct {
	Topic string `json:"topic" jsonschema:"what the fortune is about"`
}

// FortuneOutput is its answer.
type FortuneOutput struct {
	Topic   string `json:"topic"`
	Fortune string `json:"fortune"`
}

var fortunes = []string{"a paid answer arrives", "the settlement lands before the answer", "nothing is charged for nothing"}

// fortune is the paid tool's handler: it runs only once the call is paid.
func fortune(_ context.Context, _ *sdk.CallToolRequest, in FortuneInput) (FortuneOutput, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(in.Topic))
	return FortuneOutput{Topic: in.Topic, Fortune: fortunes[int(h.Sum32())%len(fortunes)]}, nil
}

func run(ctx context.Context, addr string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: payTo})
	if err != nil {
		return err
	}
	exact, err := exactserver.New(exactserver.Config{Facilitator: local, SkipFacilitatorVerify: true})
	if err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{exact}, Journal: engine.NewMemoryJournal(), Logger: log})
	if err != nil {
		return err
	}
	defer eng.Close()
	go func() { _ = eng.Run(ctx) }()
	s, err := seller.New(seller.Config{Engine: eng, Logger: log})
	if err != nil {
		return err
	}
	sell, err := x402mcp.NewSeller(x402mcp.Config{Seller: s, Logger: log})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	offer, err := eng.NewOffer("tools/call fortune", "fortune", x402.Route{
		Price: "$0.001", Network: x402.NetworkBase, PayTo: payTo,
		Resource: x402.ResourceInfo{URL: x402mcp.ResourceURL(base, "fortune"), Description: "a fortune", MimeType: "application/json"},
	})
	if err != nil {
		return err
	}
	info := &sdk.Implementation{Name: "fortune-teller", Version: "1.0.0"}
	caps := &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}
	caps.AddExtension(x402mcp.ExtensionPayment, nil)
	srv := sdk.NewServer(info, &sdk.ServerOptions{Capabilities: caps, Logger: log})
	if err := x402mcp.AddPaidTool(sell, srv, &sdk.Tool{Name: "fortune", Description: "Tells a fortune about a topic. Paid: $0.001 per call (x402)."}, offer, fortune); err != nil {
		return err
	}
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sell.Handler(mcpHandler, info))

	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on %s (MCP at %s/mcp)\n", base, base)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Command a2a-agent is an A2A agent (A2A 1.0, JSON-RPC at /a2a, agent card
// at /.well-known/agent-card.json) that charges for its own skill with the
// A2A x402 payments extension (package x402/a2a): the skill "fortune"
// costs $0.001 in USDC on Base. A message asking for a fortune gets a task
// in input-required whose status message carries the x402 PaymentRequired
// (metadata "x402.payment.required"); a message on that task with the
// signed payment (metadata "x402.payment.payload") gets the task completed
// with the fortune as an artifact and the settlement in
// "x402.payment.receipts".
//
// It runs in dev mode: a local facilitator verifies payment signatures for
// real but settles nothing on chain, and the payment journal and the tasks
// are in memory.
//
//	go run ./examples/a2a-agent -addr 127.0.0.1:8093
//
// For production, use a facilitator that settles (x402/facilitator's HTTP
// client, or x402/facilitator/onchain), a durable journal (package store)
// and your own PayTo.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// stateWorking is the state of a task whose payment is being processed.
const stateWorking x402a2a.TaskState = "TASK_STATE_WORKING"

// payTo receives the payments (any valid address in dev mode).
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func main() {
	addr := flag.String("addr", "127.0.0.1:8093", "listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "a2a-agent:", err)
		os.Exit(1)
	}
}

var fortunes = []string{"a paid answer arrives", "the settlement lands before the answer", "nothing is charged for nothing"}

// fortune is the paid skill: it runs only once the call is paid.
func fortune(topic string) ([]byte, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(topic))
	return json.Marshal(map[string]string{"topic": topic, "fortune": fortunes[int(h.Sum32())%len(fortunes)]})
}

// task is what the agent keeps of a task: the topic asked for and the
// receipts so far.
type task struct {
	id, contextID string
	topic         string
	state         x402a2a.TaskState
	receipts      []x402.SettleResponse
	reply         map[string]any // the last answer
}

// agent answers SendMessage and GetTask.
type agent struct {
	seller *seller.Seller
	offer  *engine.Offer
	log    *slog.Logger
	mu     sync.Mutex
	tasks  map[string]*task
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

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	offer, err := eng.NewOffer("A2A fortune", "fortune", x402.Route{
		Price: "$0.001", Network: x402.NetworkBase, PayTo: payTo,
		Resource: x402.ResourceInfo{URL: base + "/a2a#fortune", Description: "a fortune", MimeType: "application/json"},
	})
	if err != nil {
		return err
	}
	a := &agent{seller: s, offer: offer, log: log, tasks: map[string]*task{}}
	card, err := json.Marshal(map[string]any{
		"name": "fortune-teller", "description": "Tells a fortune about a topic, paid with x402.", "version": "1.0.0",
		"supportedInterfaces": []map[string]string{{"url": base + "/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"capabilities": map[string]any{"streaming": false, "pushNotifications": false,
			"extensions": []map[string]any{{"uri": x402a2a.ExtensionURI, "description": "x402 payments", "required": true}}},
		"defaultInputModes": []string{"text/plain"}, "defaultOutputModes": []string{"application/json"},
		"skills": []map[string]any{{"id": "fortune", "name": "Fortune", "tags": []string{"paid"},
			"description": "A fortune about the topic of the message's text. Paid: $0.001 per call (x402)."}},
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(card)
	})
	mux.HandleFunc("POST /a2a", a.serve)

	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on %s (A2A at %s/a2a)\n", base, base)
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

// rpcRequest is a JSON-RPC request of the methods served.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ID      string `json:"id"` // GetTask
		Message struct {
			MessageID string                  `json:"messageId"`
			TaskID    string                  `json:"taskId"`
			ContextID string                  `json:"contextId"`
			Parts     []struct{ Text string } `json:"parts"`
			Metadata  json.RawMessage         `json:"metadata"`
		} `json:"message"`
	} `json:"params"`
}

// serve answers one JSON-RPC request.
func (a *agent) serve(w http.ResponseWriter, r *http.Request) {
	var req rpcRequest
	var result any
	var rpcErr map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		rpcErr = map[string]any{"code": -32700, "message": "parse error"}
	} else {
		switch req.Method {
		case "SendMessage":
			result, rpcErr = a.send(r.Context(), req)
		case "GetTask":
			a.mu.Lock()
			t, ok := a.tasks[req.Params.ID]
			if ok {
				result = t.reply["task"]
			}
			a.mu.Unlock()
			if !ok {
				rpcErr = map[string]any{"code": -32001, "message": "task not found"}
			}
		default:
			rpcErr = map[string]any{"code": -32601, "message": "method not found"}
		}
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rpcErr != nil {
		resp["error"] = rpcErr
	} else {
		resp["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// send answers SendMessage: a new task for a new topic, or the payment of
// a task waiting for one.
func (a *agent) send(ctx context.Context, req rpcRequest) (any, map[string]any) {
	msg := req.Params.Message
	a.mu.Lock()
	var t *task
	if msg.TaskID != "" {
		cur, ok := a.tasks[msg.TaskID]
		if !ok {
			a.mu.Unlock()
			return nil, map[string]any{"code": -32001, "message": "task not found"}
		}
		if cur.state != x402a2a.StateInputRequired {
			a.mu.Unlock()
			return nil, map[string]any{"code": -32004, "message": "the task takes no more messages; send a new message"}
		}
		c := *cur
		t = &c
		// A payment is being processed: a concurrent message on the
		// task is refused until it is answered.
		cur.state = stateWorking
	} else {
		var topic []string
		for _, p := range msg.Parts {
			topic = append(topic, p.Text)
		}
		t = &task{id: newID(), contextID: msg.ContextID, topic: strings.TrimSpace(strings.Join(topic, " "))}
		if t.contextID == "" {
			t.contextID = newID()
		}
	}
	a.mu.Unlock()
	if t.topic == "" {
		return nil, map[string]any{"code": -32602, "message": "the message's text is the topic of the fortune"}
	}
	input, _ := json.Marshal(t.topic)
	sale := seller.Sale{Offer: a.offer, Fingerprint: seller.Fingerprint(x402a2a.Transport, "fortune", input),
		Run: func(context.Context) ([]byte, error) { return fortune(t.topic) }}
	rep, err := x402a2a.Charge(ctx, a.seller, sale, msg.Metadata, seller.Request{RequestID: msg.MessageID}, t.receipts)
	if err != nil {
		return nil, map[string]any{"code": -32602, "message": err.Error()}
	}
	t.state, t.receipts = rep.State, rep.Metadata.Receipts
	text := map[x402a2a.TaskState]string{
		x402a2a.StateInputRequired: "Payment required: sign the x402 requirements in metadata and send them on this task.",
		x402a2a.StateCompleted:     "Paid; the fortune is in the artifact.",
		x402a2a.StateFailed:        "The payment or the call failed; nothing was charged unless a receipt says so.",
		x402a2a.StateCanceled:      "The payment was declined.",
	}[rep.State]
	body := map[string]any{
		"id": t.id, "contextId": t.contextID,
		"status": map[string]any{"state": rep.State, "timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
			"message": map[string]any{"messageId": newID(), "role": "ROLE_AGENT", "taskId": t.id, "contextId": t.contextID,
				"parts": []map[string]any{{"text": text}}, "metadata": rep.Metadata}},
	}
	if rep.Result.Paid() {
		body["artifacts"] = []map[string]any{{"artifactId": newID(), "name": "fortune",
			"parts": []map[string]any{{"data": json.RawMessage(rep.Result.Answer), "mediaType": "application/json"}}}}
	}
	t.reply = map[string]any{"task": body}
	a.mu.Lock()
	a.tasks[t.id] = t
	a.mu.Unlock()
	return t.reply, nil
}

// newID is a random id of a task, message or artifact.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

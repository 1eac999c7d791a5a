// Package schemetest holds a toy payment scheme for tests only: tickets
// checked locally and settled by a record in memory, with a corrective
// payment-required answer and payment-response extras of its own. Tests
// register it with the payment engine next to exact to prove that a
// scheme plugs in without the engine, a binding or a transport knowing it.
package schemetest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// Tickets is a toy payment scheme for tests: a payer spends
// numbered tickets, each an HMAC of (payer, sequence, amount, payTo) under
// a key the payer shares with the server. The server checks a ticket
// locally, settles it by recording the charge in memory (no facilitator,
// nothing on chain), answers with its own payment-response extras (the
// payer's next sequence), and refuses a ticket of a stale sequence with a
// corrective offer carrying the next one.
type Tickets struct {
	key []byte

	mu      sync.Mutex
	next    map[string]int    // payer → next sequence
	charged map[string]string // payment key → amount
	settles atomic.Int64
}

// ticket is the ticket scheme's payload.
type ticket struct {
	Payer string `json:"payer"`
	Seq   int    `json:"seq"`
	MAC   string `json:"mac"`
}

// The ticket scheme's name, refusal reasons and extra members.
const (
	Name        = "ticket"
	ReasonStale = "invalid_ticket_stale_sequence"
	ReasonMAC   = "invalid_ticket_mac"
	// ExtraNext is the payer's next sequence, in a corrective offer's
	// extra and in the payment response's.
	ExtraNext   = "nextSeq"
	extraIssuer = "issuer"
)

// NewTickets returns the ticket scheme on Base.
func NewTickets() *Tickets {
	return &Tickets{key: []byte("toy ticket key"), next: map[string]int{}, charged: map[string]string{}}
}

// Scheme implements x402.Mechanism.
func (s *Tickets) Scheme() string { return Name }

// Networks implements x402.Mechanism: Base.
func (s *Tickets) Networks() []string { return []string{x402.NetworkBase} }

// Requirements implements x402.ServerScheme: the route's price, asset
// and payTo under the ticket scheme.
func (s *Tickets) Requirements(rt x402.Route) (x402.PaymentRequirements, error) {
	req, err := rt.Requirements() // the price, asset and payTo of the route
	if err != nil {
		return req, err
	}
	req.Scheme, req.MaxTimeoutSeconds = Name, 60
	req.Extra = map[string]any{extraIssuer: "toy"}
	return req, nil
}

func (s *Tickets) mac(payer string, seq int, req x402.PaymentRequirements) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s|%d|%s|%s", payer, seq, req.Amount, req.PayTo)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign builds the payment of ticket seq of payer for req.
func (s *Tickets) Sign(payer string, seq int, req x402.PaymentRequirements) x402.PaymentPayload {
	raw, _ := json.Marshal(ticket{Payer: payer, Seq: seq, MAC: s.mac(payer, seq, req)}) // plain strings and ints
	return x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}
}

// Settles returns how many settlements the scheme made.
func (s *Tickets) Settles() int64 { return s.settles.Load() }

// Key is the journal key of ticket seq of payer.
func Key(payer string, seq int) string { return Name + "/" + payer + "/" + strconv.Itoa(seq) }

type ticketRefusal struct{ reason string }

func (e ticketRefusal) Error() string         { return "ticket refused: " + e.reason }
func (e ticketRefusal) RefusalReason() string { return e.reason }

// Check implements x402.ServerScheme: the ticket's MAC, and its sequence
// (a stale one is refused with a corrective offer carrying the next).
func (s *Tickets) Check(_ context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.Payment, error) {
	var tk ticket
	if err := json.Unmarshal(p.Payload, &tk); err != nil || !hmac.Equal([]byte(tk.MAC), []byte(s.mac(tk.Payer, tk.Seq, req))) {
		return x402.Payment{}, ticketRefusal{ReasonMAC}
	}
	pm := x402.Payment{Key: Key(tk.Payer, tk.Seq), Payer: tk.Payer, ID: strconv.Itoa(tk.Seq), Amount: req.Amount}
	s.mu.Lock()
	next := s.next[tk.Payer]
	_, spent := s.charged[pm.Key]
	s.mu.Unlock()
	if tk.Seq != next && !spent { // a spent ticket is the journal's: replayed or refused there
		corrected := req
		corrected.Extra = map[string]any{extraIssuer: "toy", ExtraNext: next}
		return pm, &x402.CorrectiveRefusal{Reason: ReasonStale, Message: "the next ticket is " + strconv.Itoa(next), Accepted: corrected}
	}
	return pm, nil
}

// Verify implements x402.ServerScheme: nothing to add to Check.
func (s *Tickets) Verify(_ context.Context, _ x402.PaymentPayload, _ x402.PaymentRequirements, pm x402.Payment) (x402.VerifyResponse, error) {
	return x402.VerifyResponse{IsValid: true, Payer: pm.Payer}, nil
}

// Settle records the charge: the scheme's settlement is local.
func (s *Tickets) Settle(_ context.Context, p x402.PaymentPayload, _ x402.PaymentRequirements, pm x402.Payment) (x402.Settlement, error) {
	s.settles.Add(1)
	var tk ticket
	if err := json.Unmarshal(p.Payload, &tk); err != nil {
		return x402.Settlement{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.charged[pm.Key] = pm.Amount
	s.next[tk.Payer] = max(s.next[tk.Payer], tk.Seq+1)
	return x402.Settlement{Status: x402.Settled, Response: x402.SettleResponse{
		Extra: map[string]any{"charged": pm.Amount, ExtraNext: s.next[tk.Payer]},
	}}, nil
}

// Resolve implements x402.ServerScheme from the scheme's records.
func (s *Tickets) Resolve(_ context.Context, p x402.PaymentPayload, req x402.PaymentRequirements, payer string) x402.Settlement {
	pm, err := s.Check(context.Background(), p, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.charged[pm.Key]; err == nil && ok {
		return x402.Settlement{Status: x402.Settled, Response: x402.SettleResponse{Payer: payer}}
	}
	return x402.Settlement{Status: x402.Released, Reason: "never charged"}
}

// SameProof implements x402.ServerScheme: the same MAC.
func (s *Tickets) SameProof(recorded, presented x402.PaymentPayload) bool {
	var a, b ticket
	return json.Unmarshal(recorded.Payload, &a) == nil && json.Unmarshal(presented.Payload, &b) == nil && a.MAC == b.MAC
}

// Client is the ticket scheme's part in a paying client: it spends the
// tickets of payer from seq on.
func (s *Tickets) Client(payer string, seq int) x402.ClientScheme {
	return &ticketClient{scheme: s, payer: payer, seq: seq}
}

type ticketClient struct {
	scheme *Tickets
	payer  string
	mu     sync.Mutex
	seq    int
}

func (c *ticketClient) Scheme() string     { return Name }
func (c *ticketClient) Networks() []string { return []string{x402.NetworkBase} }

func (c *ticketClient) Payload(_ context.Context, req x402.PaymentRequirements, _ time.Time, _ time.Duration) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.scheme.Sign(c.payer, c.seq, req)
	c.seq++
	return p.Payload, nil
}

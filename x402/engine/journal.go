package engine

import (
	"context"
	"errors"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// Answer is what a paid call answered: recorded before settlement and
// replayed to the same request presenting the same payment. Status and
// Header are those of an HTTP answer (other transports record 200 and the
// content type); Body is the payload.
type Answer struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body"`
}

// Record is one journal row: everything the engine and recovery need about
// one payment authorization. Key is exact.NonceKey(Network, Asset, Payer,
// Nonce) and identifies the row.
type Record struct {
	Key     string
	Network string // CAIP-2
	Asset   string // token contract
	Payer   string // authorization.from
	Nonce   string // authorization nonce, 0x + 64 hex
	PayTo   string
	Amount  string // atomic units, decimal

	// RequestHash identifies the request the authorization pays for; an
	// authorization is never admitted for another one.
	RequestHash string
	// Resource labels what is sold ("POST /api/risk-levels"); Product is
	// the ledger's name for it (a tool key).
	Resource string
	Product  string
	// Transport is how the call arrived: "http", "mcp" or "a2a".
	Transport string
	// RefCode is the referral code the call carried ("" for none).
	RefCode string
	// RequestID is the caller's request id, for logs and reconciliation.
	RequestID string
	// X402Version is the protocol version the client spoke (1 or 2).
	X402Version int

	State State
	// Attempts counts admissions of this authorization that ended without
	// settlement (released); Reserve refuses past the engine's limit.
	Attempts int
	// Owner is the engine instance holding the row (while reserved or
	// settling); LeaseUntil is when another instance may take it over
	// even if the owner still looks alive.
	Owner      string
	LeaseUntil time.Time

	// Payload and Requirements (JSON of x402.PaymentPayload in its v2 form,
	// and of x402.PaymentRequirements) are recorded with the move to
	// settling: recovery presents them to the facilitator again.
	Payload      []byte
	Requirements []byte
	// Answer is recorded with the move to settling and kept until
	// AnswerUntil; nil once forgotten.
	Answer      *Answer
	AnswerUntil time.Time
	// Settlement is the facilitator's answer once settled (or the last
	// refusal once failed).
	Settlement *x402.SettleResponse
	// Reason says why a row was released, failed or is unknown.
	Reason string

	// KeepUntil is how long the row (the authorization key) is kept: the
	// authorization's validBefore, capped by the engine's key retention.
	KeepUntil time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Errors of Journal implementations.
var (
	// ErrTaken: Reserve found the key held (reserved, settling, settled,
	// failed or unknown), or released and out of attempts; the existing
	// record comes with it.
	ErrTaken = errors.New("engine: payment authorization already known")
	// ErrState: a transition from a state it does not leave, or by an
	// owner that does not hold the row. The row is unchanged. A transition
	// of an absent key returns an error matching both ErrState and
	// ErrNotFound.
	ErrState = errors.New("engine: payment record is not in the expected state")
	// ErrNotFound: no row has the key.
	ErrNotFound = errors.New("engine: payment record not found")
)

// Journal is the durable payment journal the engine writes every
// transition to: the union of what its users need, which implementations
// satisfy. Each method returns only once its write is durable
// (committed); implementations may group the writes of concurrent callers
// into one commit. The journal also holds the ledger: Settle writes the
// ledger entry in the same commit as the settled state. Every transition
// follows the transition table (Transition.Rule): a row in a state the
// transition does not leave, or held by another owner where the rule
// needs the holder, is left unchanged with ErrState.
//
// Implementations: store (SQLite and PostgreSQL) and MemoryJournal (one
// process, nothing durable: for tests and embedding). The conformance suite
// is engine/journaltest.
type Journal interface {
	CallJournal
	LeaseJournal
	OperatorJournal
}

// CallJournal is what a paid call needs of the journal: the transitions
// of one payment, from its reservation to its outcome.
type CallJournal interface {
	// Reserve creates the row of r (reserved, no attempt; created and
	// updated at r.Now) unless its key exists (TransitionReserve). A
	// released row whose Attempts is below maxAttempts is reserved again
	// in place (TransitionReserveAgain: see Reservation.Again). Otherwise
	// it returns the existing record, Answer included, and ErrTaken. A row
	// past its KeepUntil at r.Now counts as absent if Prune may delete it
	// (Prunable); reserved, settling and unknown rows are never replaced.
	Reserve(ctx context.Context, r Reservation, maxAttempts int) (existing Record, err error)

	// Settling moves key from reserved (held by owner) to settling,
	// recording answer, answerUntil, the payload and requirements JSON, the
	// payer and amount (as the facilitator will be asked to settle them),
	// and leaseUntil. ErrState if the row is not reserved by owner.
	Settling(ctx context.Context, key, owner string, s Settling) error

	// Settle moves key from settling, unknown, released or failed (any
	// owner: a confirmed settlement is the truth, whatever recovery
	// concluded meanwhile) to settled with sr, and writes the ledger
	// entry (Network, Asset, Payer, Nonce, Product, Amount, sr.Transaction,
	// RefCode, Resource, Transport, at) in the same commit; the ledger
	// entry is idempotent on (network, asset, payer, nonce). Settling an
	// already settled key is a no-op returning nil. ErrState otherwise.
	Settle(ctx context.Context, key string, sr x402.SettleResponse, at time.Time) error

	// Release moves key from reserved or settling (held by owner) to
	// released, adding one to Attempts when counted is true (the call
	// failed or the payment was refused; a crash, or the refusal of a
	// signature nobody had checked before, is not counted), with reason.
	// ErrState otherwise.
	Release(ctx context.Context, key, owner, reason string, counted bool) error

	// Fail moves key from settling (held by owner) to failed, with the
	// facilitator's refusal sr and reason. ErrState otherwise.
	Fail(ctx context.Context, key, owner, reason string, sr x402.SettleResponse) error

	// Get returns the record of key (ErrNotFound if absent).
	Get(ctx context.Context, key string) (Record, error)
}

// LeaseJournal is what keeps rows held by live engine instances and lets
// recovery take over the rest.
type LeaseJournal interface {
	// Heartbeat records that the engine instance owner is alive at now.
	// Leave removes it (a clean shutdown).
	Heartbeat(ctx context.Context, owner string, now time.Time) error
	Leave(ctx context.Context, owner string) error

	// Recover, atomically and safely from several instances at once:
	// releases (uncounted, reason "abandoned") every reserved row whose
	// lease ended before now or whose owner's last heartbeat is before
	// deadBefore (or absent) (TransitionRecoverRelease); and claims up to
	// limit settling rows in the same situation for owner, setting their
	// LeaseUntil to leaseUntil, and returns them (Payload, Requirements and
	// Answer included) (TransitionRecoverClaim). It also records owner's
	// heartbeat at now, in the same commit, so that a row claimed by one
	// caller is not returned to another until its new lease ends. released
	// counts the rows released.
	Recover(ctx context.Context, owner string, now, deadBefore, leaseUntil time.Time, limit int) (claimed []Record, released int, err error)

	// MarkUnknown moves key from settling (held by owner) to unknown with
	// reason. ErrState otherwise.
	MarkUnknown(ctx context.Context, key, owner, reason string) error
}

// OperatorJournal is what the operator's tools read and the housekeeping
// does.
type OperatorJournal interface {
	// List returns up to limit records in state, oldest first (for the
	// operator: unknown rows above all).
	List(ctx context.Context, state State, limit int) ([]Record, error)

	// Counts returns the number of rows in each state.
	Counts(ctx context.Context) (map[State]int64, error)

	// Prune deletes rows past KeepUntil that are settled, released or
	// failed (Prunable: reserved, settling and unknown rows are never
	// deleted), and forgets their answers past AnswerUntil. It works in
	// batches: each one commit of its own that deletes or forgets at most
	// o.Batch rows, so that the journal's other writes wait for one batch
	// at most and go on between batches, while Prune rests (o.Rest). It
	// stops when nothing is left to
	// prune, when ctx ends (with ctx's error) or when o.After returns an
	// error (with that error), and returns the totals of the batches
	// committed. A batch is all or nothing; a later Prune takes up what
	// an interrupted one left.
	Prune(ctx context.Context, now time.Time, o PruneOptions) (PruneTotals, error)
}

// DefaultPruneBatch is the batch of Prune when PruneOptions.Batch is not
// positive: rows deleted, or answers forgotten, per commit.
const DefaultPruneBatch = 500

// PruneOptions says how Prune proceeds.
type PruneOptions struct {
	// Batch bounds the rows one commit deletes or whose answers it
	// forgets (DefaultPruneBatch when not positive): the longest a
	// concurrent write waits for Prune is what one batch takes.
	Batch int
	// After, when not nil, is called after each batch that deleted or
	// forgot something, outside any transaction, with the totals so far;
	// an error from it stops Prune.
	After func(PruneTotals) error
	// Rest is how long Prune waits after a batch, as a multiple of the
	// time the batch took (DefaultPruneRest when zero; negative: no
	// wait): a prune then takes at most 1/(1+Rest) of a single writer's
	// time, and the paid calls the rest.
	Rest float64
}

// DefaultPruneRest is PruneOptions.Rest when zero: Prune takes at most a
// fifth of the writer's time.
const DefaultPruneRest = 4

// Pause waits what o.Rest says after a batch that took took, or until ctx
// ends (its error).
func (o PruneOptions) Pause(ctx context.Context, took time.Duration) error {
	rest := o.Rest
	if rest == 0 {
		rest = DefaultPruneRest
	}
	if rest < 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(float64(took) * rest))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PruneTotals counts what Prune did.
type PruneTotals struct {
	Deleted   int64 // rows deleted
	Forgotten int64 // answers forgotten (of rows kept)
	Batches   int   // batches that deleted or forgot something
}

// BatchSize is o.Batch, or DefaultPruneBatch when that is not positive.
func (o PruneOptions) BatchSize() int {
	if o.Batch > 0 {
		return o.Batch
	}
	return DefaultPruneBatch
}

// Step adds one committed batch's deleted and forgotten rows to t and
// reports it to o.After; a batch that changed nothing is not counted.
func (o PruneOptions) Step(t *PruneTotals, deleted, forgotten int64) error {
	if deleted == 0 && forgotten == 0 {
		return nil
	}
	t.Deleted += deleted
	t.Forgotten += forgotten
	t.Batches++
	if o.After == nil {
		return nil
	}
	return o.After(*t)
}

// Reservation is what Reserve records of an admitted call: the
// authorization it pays with, the request it is admitted for, who holds
// it, until when, and how long its key is kept.
type Reservation struct {
	// Key identifies the authorization: the row's key, the journal key of
	// the payment's scheme (exact.NonceKey(Network, Asset, Payer, Nonce)).
	Key     string
	Network string // CAIP-2
	Asset   string // token contract
	Payer   string // who signed the authorization
	Nonce   string // authorization nonce
	PayTo   string
	Amount  string // atomic units, decimal
	// Request is the call the authorization is admitted for; a reservation
	// again takes it in place of the previous one.
	Request Request
	// Owner is the engine instance that holds the row until LeaseUntil.
	Owner      string
	LeaseUntil time.Time
	// KeepUntil is how long the row (the authorization key) is kept.
	KeepUntil time.Time
	// Now is the caller's clock: when the row is created (or updated, by
	// a reservation again), and the instant an existing row's KeepUntil
	// is judged at.
	Now time.Time
}

// Request is the call a reservation admits: what the Record fields of the
// same names hold (Hash is Record.RequestHash; an authorization is never
// admitted for another request).
type Request struct {
	Hash        string
	Resource    string
	Product     string
	Transport   string
	RefCode     string
	RequestID   string
	X402Version int
}

// Record returns the row Reserve creates for r: reserved, no attempt,
// created and updated at r.Now, nothing recorded yet.
func (r Reservation) Record() Record {
	rec := Record{
		Key: r.Key, Network: r.Network, Asset: r.Asset, Payer: r.Payer, Nonce: r.Nonce, PayTo: r.PayTo,
		Amount: r.Amount, State: TransitionReserve.Rule().To, Owner: r.Owner, LeaseUntil: r.LeaseUntil,
		KeepUntil: r.KeepUntil, CreatedAt: r.Now, UpdatedAt: r.Now,
	}
	rec.setRequest(r.Request)
	return rec
}

// Again returns cur reserved again by r in place: the request, the holder
// and the lease are r's, updated at r.Now; the authorization, the amounts,
// Attempts, KeepUntil and CreatedAt stay cur's; what the previous
// admission recorded (payload, requirements, answer, settlement, reason)
// is cleared.
func (r Reservation) Again(cur Record) Record {
	cur.State = TransitionReserveAgain.Rule().To
	cur.setRequest(r.Request)
	cur.Owner, cur.LeaseUntil, cur.UpdatedAt = r.Owner, r.LeaseUntil, r.Now
	cur.Payload, cur.Requirements, cur.Answer, cur.AnswerUntil = nil, nil, nil, time.Time{}
	cur.Settlement, cur.Reason = nil, ""
	return cur
}

// setRequest records q as the request rec is admitted for.
func (rec *Record) setRequest(q Request) {
	rec.RequestHash, rec.Resource, rec.Product, rec.Transport = q.Hash, q.Resource, q.Product, q.Transport
	rec.RefCode, rec.RequestID, rec.X402Version = q.RefCode, q.RequestID, q.X402Version
}

// Settling is what the move to settling records.
type Settling struct {
	Answer       Answer
	AnswerUntil  time.Time
	Payload      []byte // JSON x402.PaymentPayload (v2 form)
	Requirements []byte // JSON x402.PaymentRequirements
	Payer        string
	Amount       string
	LeaseUntil   time.Time
	// RequestHash, when set, must be the row's: a call whose reservation
	// was released and admitted again for another request never moves
	// that request's row.
	RequestHash string
}

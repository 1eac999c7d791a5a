// Package engine is the x402 payment engine: one transport-free, durable
// state machine for every paid call, whatever protocol it arrived on. A
// binding (the net/http middleware in x402/nethttp, the MCP and A2A servers)
// decodes the caller's request, validates its input, and hands the engine a
// Call: the priced Offer, a fingerprint of the request (of its decoded
// input, so that the same values sent again formatted otherwise are the
// same request) and the payment, if any. The engine answers with an
// Outcome: payment required, refused, unavailable, in progress, throttled,
// the recorded answer of a settled payment (replayed), or — after running
// the caller's function, journaling the answer and settling — paid.
//
// Every transition of a payment is committed to the Journal before the side
// effect that depends on it:
//
//   - reserved, before the tool runs (one authorization, one row: a key
//     known to the journal is never admitted for another request, on any
//     transport or instance);
//   - settling, with the answer, the payment and its requirements, before
//     the scheme settles it;
//   - settled, with the ledger entry in the same commit, before the answer
//     leaves.
//
// Recovery (Engine.Run: at start and periodically, on every instance at
// once) releases reservations whose owner died and resolves settling rows
// through the payment's scheme (x402.ServerScheme.Resolve: exact asks a
// status query, or presents the settlement again to a deduplicating
// facilitator). A row the scheme cannot tell becomes unknown, counted and
// listed for the operator, never dropped.
//
// The engine knows no scheme: each registered x402.ServerScheme
// (Config.Schemes) builds its entry of an offer (Engine.NewOffer), checks
// a payment locally and tells its identity (the journal's key, payer, id,
// amount and how long the key is kept), completes the checks after the
// reservation, settles (through a facilitator, or by a record of its own)
// and resolves an interrupted settlement. A payment goes to the scheme its
// accepted requirement names on that network.
//
// A call whose run fails is not settled, whatever the cause — a tool that
// timed out on the payer's own pathological input included: x402 settles
// what is delivered, and a payer charged without an answer would rightly
// contest it. Such runs are charged to the payer instead, in a budget of
// their own (Config.PayerBurst): a payer whose paid calls keep running
// for nothing (failed, timed out, or refused at settlement) is Throttled
// before anything runs again, on every transport, while other payers are
// not affected.
package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// Defaults of Config.
const (
	DefaultVerifyTimeout   = 15 * time.Second
	DefaultSettleTimeout   = 60 * time.Second
	DefaultRunTimeout      = 30 * time.Second
	DefaultAnswerRetention = 24 * time.Hour
	DefaultKeyRetention    = 30 * 24 * time.Hour
	DefaultMaxAttempts     = 3
	DefaultHeartbeat       = 2 * time.Second
	DefaultDeadAfter       = 10 * time.Second
	DefaultRecoverEvery    = 5 * time.Second
	// recoverBatch bounds the settling rows one recovery round claims and
	// resolves at once.
	recoverBatch = 8
	// leaseMargin is added to every lease on top of the step's timeout.
	leaseMargin = 15 * time.Second
	// A background resolution (resolveLater) starts only with at least
	// minResolveWindow of the lease left, and ends leaseSafety before it.
	minResolveWindow = 2 * time.Second
	leaseSafety      = time.Second
)

// Reasons of the engine's own refusals (Outcome.Reason), next to the
// x402 verification reasons it passes on.
const (
	// ReasonPaymentRequired is the error of an offer answering a call
	// without payment.
	ReasonPaymentRequired = "Payment required"
	// ReasonNoMatchingRequirements: the payment accepts none of the offered
	// requirements.
	ReasonNoMatchingRequirements = "No matching payment requirements"
	// ReasonPaymentInProgress: the same payment for the same request is
	// being processed (or settled and not yet recorded); retry later.
	ReasonPaymentInProgress = "payment_in_progress"
	// ReasonAttemptsExhausted: calls with this authorization failed too
	// often without settlement; sign a new one.
	ReasonAttemptsExhausted = "payment_attempts_exhausted"
	// ReasonStoreUnavailable: the payment journal could not be written.
	ReasonStoreUnavailable = "payment_store_unavailable"
	// ReasonFacilitatorUnavailable: the facilitator did not answer /verify.
	ReasonFacilitatorUnavailable = "facilitator_unavailable"
	// ReasonSettlementPending: the payment settled (or may have) and is not
	// recorded yet; the same request with the same payment gets the answer
	// once it is.
	ReasonSettlementPending = x402.ReasonSettlementPending
	// ReasonPaymentUnresolved: the payment may have settled but recovery
	// could not tell; the operator reconciles it (do not pay again).
	ReasonPaymentUnresolved = "payment_unresolved"
	// ReasonPaymentAlreadyUsed: the payment is known for another request
	// (or settled, failed or unknown), for a scheme that names no reason
	// of its own for it (x402.Payment.UsedReason).
	ReasonPaymentAlreadyUsed = "payment_already_used"
	// ReasonPayerThrottled: too many paid calls of this payer ran lately
	// without delivering (timed out, failed, or their settlement was
	// refused), or run now; retry after RetryAfter.
	ReasonPayerThrottled = "payer_throttled"
)

// Hook points (Config.Hook): where a crash test may stop the process.
const (
	HookSettlingCommitted = "settling-committed"
	HookSettleReturned    = "settle-returned"
	HookSettledCommitted  = "settled-committed"
)

// Config configures an Engine. Schemes is required.
type Config struct {
	// Schemes are the payment schemes offered and accepted, each on the
	// networks it is registered for, in the operator's order: an offer
	// lists, for each of its routes, the entry of every scheme serving the
	// route's network in this order, and a payment is checked, settled and
	// recovered by the scheme its accepted requirement names. At most one
	// scheme per (scheme, network).
	Schemes []x402.ServerScheme
	// Journal keeps every payment's state durably; nil means a
	// MemoryJournal (one process, nothing survives it).
	Journal Journal
	// Logger receives one record per decision (never a signature); nil
	// means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// VerifyTimeout, SettleTimeout and RunTimeout bound the schemes'
	// verification and settlement (a facilitator's) and the caller's run
	// function; zero means the defaults.
	VerifyTimeout time.Duration
	SettleTimeout time.Duration
	RunTimeout    time.Duration
	// AnswerRetention is how long a recorded answer is kept for replays
	// (whatever validBefore says); KeyRetention caps how long an
	// authorization key is kept past its use (validBefore otherwise).
	AnswerRetention time.Duration
	KeyRetention    time.Duration
	// MaxAttempts bounds the admissions of one authorization whose call
	// ended without settlement; zero means DefaultMaxAttempts. A refusal,
	// after the reservation, of a proof the local checks left unchecked
	// (x402.Payment.Unchecked) is not counted.
	MaxAttempts int
	// PayerBurst, PayerRefill and PayerConcurrency bound, per payer (the
	// authorization's from, known after the local checks), the paid calls
	// that run and deliver nothing. A call that runs and fails (a tool
	// time-out on the payer's input, an answer too large, an error), whose
	// settlement is refused, or whose caller leaves before the settlement,
	// takes one of the payer's PayerBurst tokens; a transient failure (the
	// run reports one), the journal or the facilitator failing, and a paid
	// call take none. One token comes back per PayerRefill, and a payer may
	// owe tokens (its calls running at once all failed). At most
	// PayerConcurrency calls of one payer run at once. A payer without a
	// token, or with PayerConcurrency calls running, is answered Throttled
	// before anything is written or run (a retry of a payment that needs
	// no run — a settled one replayed, one in progress or used — is
	// answered as usual). So a payer whose calls keep failing costs at
	// most PayerBurst runs (PayerConcurrency at once), then one per
	// PayerRefill, while a payer whose calls deliver is limited only in
	// its calls at once. Each engine keeps its own budgets, in memory. Zero
	// means the Default* values; a negative PayerBurst turns the budget
	// off.
	PayerBurst       int
	PayerRefill      time.Duration
	PayerConcurrency int
	// Instance names this engine in the journal (row owner); empty means a
	// random id. Two live engines must never share one.
	Instance string
	// Heartbeat, DeadAfter and RecoverEvery pace Run: how often this
	// instance says it is alive, after how long without a heartbeat an
	// owner is taken for dead, and how often recovery runs.
	Heartbeat    time.Duration
	DeadAfter    time.Duration
	RecoverEvery time.Duration
	// Hook, when set, is called at the points named Hook* with the
	// payment's key, on the call's goroutine (crash tests stop there).
	Hook func(point, key string)
	// Observe, when set, is told about every outcome and recovery result.
	// It must not block.
	Observe func(Event)
}

// Event is what Config.Observe is told.
type Event struct {
	Kind      OutcomeKind // the outcome (recovery: Paid or Refused/Unavailable)
	Resource  string
	Product   string
	Transport string
	Reason    string
	Network   string
	Asset     string
	Amount    string // atomic units, on Paid
	// Scheme names the payment's scheme, on Paid ("exact": settled with
	// the call; a scheme such as batch-settlement charges with the call and
	// settles later, in batches).
	Scheme    string
	Recovered bool // a recovery result, not a live call
}

// Engine runs paid calls; see the package documentation. Safe for
// concurrent use.
type Engine struct {
	cfg      Config
	schemes  map[schemeKind]x402.ServerScheme // by (scheme, CAIP-2 network)
	journal  Journal
	log      *slog.Logger
	instance string
	payers   *payerBudget // nil: no payer budget

	kick     chan struct{} // asks Run for a recovery round now
	lastKick atomic.Int64  // unix nanoseconds of the last kick taken

	// stop ends the background resolutions of undecided settlements
	// (settleLater, resolveLater) when the engine is closed; bg waits for
	// them.
	stop     chan struct{}
	stopOnce sync.Once
	bg       sync.WaitGroup

	mu      sync.Mutex
	running bool
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Engine, error) {
	if len(cfg.Schemes) == 0 {
		return nil, errors.New("engine: Config.Schemes needs at least one payment scheme")
	}
	schemes, err := checkSchemes(cfg.Schemes)
	if err != nil {
		return nil, err
	}
	if cfg.VerifyTimeout < 0 || cfg.SettleTimeout < 0 || cfg.RunTimeout < 0 || cfg.AnswerRetention < 0 || cfg.PayerRefill < 0 || cfg.PayerConcurrency < 0 ||
		cfg.KeyRetention < 0 || cfg.MaxAttempts < 0 || cfg.Heartbeat < 0 || cfg.DeadAfter < 0 || cfg.RecoverEvery < 0 {
		return nil, errors.New("engine: durations and limits must not be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Journal == nil {
		cfg.Journal = NewMemoryJournal()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.VerifyTimeout, DefaultVerifyTimeout)
	def(&cfg.SettleTimeout, DefaultSettleTimeout)
	def(&cfg.RunTimeout, DefaultRunTimeout)
	def(&cfg.AnswerRetention, DefaultAnswerRetention)
	def(&cfg.KeyRetention, DefaultKeyRetention)
	def(&cfg.Heartbeat, DefaultHeartbeat)
	def(&cfg.DeadAfter, DefaultDeadAfter)
	def(&cfg.RecoverEvery, DefaultRecoverEvery)
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.DeadAfter <= cfg.Heartbeat {
		return nil, errors.New("engine: DeadAfter must be longer than Heartbeat")
	}
	inst := cfg.Instance
	if inst == "" {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("engine: instance id: %w", err)
		}
		inst = hex.EncodeToString(b[:])
	}
	e := &Engine{cfg: cfg, schemes: schemes, journal: cfg.Journal, log: cfg.Logger, instance: inst, kick: make(chan struct{}, 1),
		stop: make(chan struct{})}
	if cfg.PayerBurst >= 0 {
		e.payers = newPayerBudget(cmp.Or(cfg.PayerBurst, DefaultPayerBurst), cmp.Or(cfg.PayerRefill, DefaultPayerRefill),
			cmp.Or(cfg.PayerConcurrency, DefaultPayerConcurrency), payerBudgetKeys)
	}
	return e, nil
}

// Instance returns this engine's owner id in the journal.
func (e *Engine) Instance() string { return e.instance }

// Schemes returns the registered payment schemes, in Config.Schemes order.
func (e *Engine) Schemes() []x402.ServerScheme { return slices.Clone(e.cfg.Schemes) }

// Journal returns the engine's journal.
func (e *Engine) Journal() Journal { return e.journal }

// SettleTimeout returns the bound of one settlement; bindings keep their
// own deadlines (an HTTP server's write timeout) above it.
func (e *Engine) SettleTimeout() time.Duration { return e.cfg.SettleTimeout }

// Offer is a priced resource: what a call without payment is told, and
// what a payment must accept.
type Offer struct {
	// Resource labels the resource in logs, events and the journal, e.g.
	// "POST /api/risk-levels".
	Resource string
	// Product is the ledger's name of what is sold (a tool key).
	Product string
	// PaymentRequired lists the accepted requirements (at least one), the
	// resource and the extensions. Its X402Version is set to 2; Error is
	// set per answer.
	PaymentRequired x402.PaymentRequired
}

// NewOffer builds an offer from one or more price configurations: for
// each route, the "accepts" entry of every registered scheme serving the
// route's network, in Config.Schemes order (the first route's resource and
// bazaar description are used). The error is the first Route.Validate or
// scheme failure, or a route no scheme serves.
func (e *Engine) NewOffer(resource, product string, routes ...x402.Route) (*Offer, error) {
	if len(routes) == 0 {
		return nil, errors.New("engine: an offer needs at least one price configuration")
	}
	pr, err := routes[0].PaymentRequired()
	if err != nil {
		return nil, fmt.Errorf("engine: offer %s: %w", resource, err)
	}
	pr.Accepts = nil
	for _, rt := range routes {
		if err := rt.Validate(); err != nil {
			return nil, fmt.Errorf("engine: offer %s: %w", resource, err)
		}
		network := cmp.Or(rt.Network, x402.DefaultNetwork)
		n := len(pr.Accepts)
		for _, s := range e.cfg.Schemes {
			if !x402.Serves(s, s.Scheme(), network) {
				continue
			}
			req, err := s.Requirements(rt)
			if err != nil {
				return nil, fmt.Errorf("engine: offer %s: scheme %s: %w", resource, s.Scheme(), err)
			}
			pr.Accepts = append(pr.Accepts, req)
		}
		if len(pr.Accepts) == n {
			return nil, fmt.Errorf("engine: offer %s: no payment scheme is registered on network %s", resource, clip.Bytes(network, 40))
		}
	}
	pr.X402Version = x402.Version
	return &Offer{Resource: resource, Product: product, PaymentRequired: pr}, nil
}

// checkSchemes refuses a nil scheme, one without networks, and two schemes
// registered for one (scheme, network).
func checkSchemes(schemes []x402.ServerScheme) (map[schemeKind]x402.ServerScheme, error) {
	kinds := make(map[schemeKind]x402.ServerScheme)
	for i, s := range schemes {
		if s == nil {
			return nil, fmt.Errorf("engine: Config.Schemes[%d] is nil", i)
		}
		if len(s.Networks()) == 0 {
			return nil, fmt.Errorf("engine: scheme %s is registered on no network", clip.Bytes(s.Scheme(), 40))
		}
		for _, n := range s.Networks() {
			k := schemeKind{s.Scheme(), x402.CAIP2(n)}
			if kinds[k] != nil {
				return nil, fmt.Errorf("engine: scheme %s is registered twice on %s", clip.Bytes(k.scheme, 40), clip.Bytes(k.network, 40))
			}
			kinds[k] = s
		}
	}
	return kinds, nil
}

// schemeKind is a registered (scheme, CAIP-2 network).
type schemeKind struct{ scheme, network string }

// scheme returns the registered scheme of req, nil if none.
func (e *Engine) scheme(req x402.PaymentRequirements) x402.ServerScheme {
	return e.schemes[schemeKind{req.Scheme, x402.CAIP2(req.Network)}]
}

// Required returns the offer's PaymentRequired with error reason set.
func (o *Offer) Required(reason string) x402.PaymentRequired {
	pr := o.PaymentRequired
	pr.X402Version = x402.Version
	pr.Error = reason
	return pr
}

// Call is one request for a priced resource.
type Call struct {
	Offer *Offer
	// PaymentRequired, when set, replaces Offer.PaymentRequired for this
	// call (a resource URL that depends on the request).
	PaymentRequired *x402.PaymentRequired
	// Fingerprint identifies the request (its decoded input): the same
	// payment is replayed only to the same fingerprint.
	Fingerprint string
	// Payment is the payment presented, nil for none. A v1 payment (X402Version 1)
	// is matched by scheme and network and treated as its v2 equivalent.
	Payment *x402.PaymentPayload
	// Transport is "http", "mcp" or "a2a".
	Transport string
	// RequestID and RefCode are recorded with the payment.
	RequestID string
	RefCode   string
}

// RunFunc produces the answer a payment buys. It runs once the payment is
// reserved and verified; an error means nothing is settled (the
// reservation is released, and counts as one of the authorization's
// MaxAttempts unless the caller left or the error has a Transient() bool
// method that reports true; unless it is transient, it is also charged to
// the payer's budget, Config.PayerBurst). ctx is bounded by
// Config.RunTimeout.
type RunFunc func(ctx context.Context) (Answer, error)

// OutcomeKind classifies an Outcome.
type OutcomeKind int

// Outcome kinds.
const (
	// PaymentRequired: no payment was presented; offer PaymentRequired.
	PaymentRequired OutcomeKind = iota + 1
	// Refused: the payment is refused (Reason); offer PaymentRequired again.
	Refused
	// InProgress: the same payment for the same request is being processed;
	// retry after RetryAfter.
	InProgress
	// Unavailable: the journal or the facilitator failed (Reason); nothing
	// was charged. Timeout tells a facilitator time-out.
	Unavailable
	// RunFailed: the run function failed (Err, and the Answer it returned,
	// if any); nothing was settled.
	RunFailed
	// SettleFailed: settlement failed (Settlement holds the failing
	// response); the answer is withheld.
	SettleFailed
	// Pending: the settlement went through (or may have) but could not be
	// recorded yet; the answer is withheld until it is, and the same
	// request with the same payment gets it then (retry after RetryAfter).
	Pending
	// Paid: the answer, settled now.
	Paid
	// Replayed: the recorded answer of this payment, settled before.
	Replayed
	// Throttled: too many paid calls of this payer ran lately without
	// delivering, or run now (Config.PayerBurst); nothing ran and nothing
	// was charged, and the same payment may be presented again after
	// RetryAfter.
	Throttled
)

// String names the kind for logs and metrics.
func (k OutcomeKind) String() string {
	switch k {
	case PaymentRequired:
		return "payment_required"
	case Refused:
		return "refused"
	case InProgress:
		return "in_progress"
	case Unavailable:
		return "unavailable"
	case RunFailed:
		return "run_failed"
	case SettleFailed:
		return "settle_failed"
	case Pending:
		return "pending"
	case Paid:
		return "paid"
	case Replayed:
		return "replayed"
	case Throttled:
		return "throttled"
	}
	return "invalid"
}

// Outcome is the engine's answer to a Call.
type Outcome struct {
	Kind OutcomeKind
	// Reason is the refusal or failure reason (x402 reason strings where
	// one exists).
	Reason string
	// PaymentRequired is set for PaymentRequired, Refused and InProgress:
	// the offer with its error set to Reason.
	PaymentRequired *x402.PaymentRequired
	// Answer is the paid or replayed answer, or what a failed run returned.
	Answer *Answer
	// Settlement is the settlement of Paid and Replayed, the failing
	// response of SettleFailed.
	Settlement *x402.SettleResponse
	// Err is the run function's error (RunFailed) or the cause of
	// Unavailable.
	Err error
	// Timeout marks an Unavailable caused by a facilitator time-out.
	Timeout bool
	// RetryAfter is set for InProgress, Pending and Throttled.
	RetryAfter time.Duration
	// Version is the protocol version of the payment (1 or 2; 2 without
	// one), for the binding's headers.
	Version int
	// Payer is the payment's payer once known.
	Payer string
	// Key is the payment's journal key once known.
	Key string
	// amount is what a Paid payment paid (x402.Payment.Amount), for the
	// events.
	amount string
	// Operation marks the answer of a payment operation
	// (x402.Payment.Operation): nothing ran, and Answer is the scheme's
	// body for it.
	Operation bool
}

// paid carries one admitted payment through the steps.
type paid struct {
	call    Call
	pr      *x402.PaymentRequired
	payload x402.PaymentPayload
	req     x402.PaymentRequirements
	version int
	scheme  x402.ServerScheme
	pm      x402.Payment // the payment's identity, as its scheme tells it
	payer   string
	key     string
	log     *slog.Logger
	// leaseUntil is the end of the settling row's lease (the engine's
	// clock): this engine's background work on the row stops before it.
	leaseUntil time.Time
}

// Serve runs one call through the engine. run is called at most once, only
// for an admitted payment.
func (e *Engine) Serve(ctx context.Context, c Call, run RunFunc) Outcome {
	out := e.serve(ctx, c, run)
	if out.Version == 0 {
		out.Version = x402.Version
	}
	if e.cfg.Observe != nil {
		ev := Event{Kind: out.Kind, Resource: c.Offer.Resource, Product: c.Offer.Product, Transport: c.Transport, Reason: out.Reason}
		if out.Kind == Paid && out.Settlement != nil {
			ev.Network, ev.Amount = out.Settlement.Network, cmp.Or(out.Settlement.Amount, out.amount)
			pr := &c.Offer.PaymentRequired
			if c.PaymentRequired != nil {
				pr = c.PaymentRequired
			}
			ev.Asset = assetOn(pr.Accepts, ev.Network)
			if c.Payment != nil {
				ev.Scheme = c.Payment.Accepted.Scheme
			}
		}
		e.cfg.Observe(ev)
	}
	return out
}

func (e *Engine) serve(ctx context.Context, c Call, run RunFunc) Outcome {
	pr := &c.Offer.PaymentRequired
	if c.PaymentRequired != nil {
		pr = c.PaymentRequired
	}
	if c.Payment == nil {
		return e.refuse(pr, PaymentRequired, ReasonPaymentRequired, 0)
	}
	p := &paid{call: c, pr: pr, version: c.Payment.X402Version}
	p.log = e.log.With("resource", c.Offer.Resource, "transport", c.Transport)
	if c.RequestID != "" {
		p.log = p.log.With("request_id", c.RequestID)
	}
	if !e.match(p) {
		p.log.Info("x402: no matching payment requirements", "x402_version", p.version)
		return e.refuse(pr, Refused, ReasonNoMatchingRequirements, p.version)
	}
	p.scheme = e.scheme(p.req)
	if p.scheme == nil { // an offer replaced per call may name any scheme
		p.log.Info("x402: no payment scheme is registered for the requirements", "scheme", clip.Bytes(p.req.Scheme, 40))
		return e.refuse(pr, Refused, ReasonNoMatchingRequirements, p.version)
	}
	pm, err := p.scheme.Check(ctx, p.payload, p.req)
	p.payer = pm.Payer
	if err != nil {
		reason := x402.ReasonUnexpectedVerifyError
		var rf x402.Refusal
		if errors.As(err, &rf) {
			reason = rf.RefusalReason()
		}
		p.log.Info("x402: payment refused by local checks", "reason", reason, "payer", clip.Bytes(pm.Payer, 42))
		o := e.refuse(pr, Refused, reason, p.version)
		var cr *x402.CorrectiveRefusal
		if errors.As(err, &cr) {
			correct(o.PaymentRequired, p.req, cr.Accepted)
		}
		o.Payer = pm.Payer
		return o
	}
	p.pm, p.key = pm, pm.Key
	p.log = p.log.With("payer", clip.Bytes(pm.Payer, 42), "nonce", clip.Bytes(pm.ID, 66), "amount", pm.Amount, "network", p.req.Network)

	// The payer's budget (Config.PayerBurst). A payer it does not admit is
	// answered before anything is written; a call admitted to run is
	// started in it, and charged when it ran and delivered nothing through
	// the payer's doing.
	var started, charged bool
	defer func() {
		if started {
			e.payers.finish(p.payer, e.cfg.Now(), charged)
		}
	}()
	if e.payers != nil {
		if ok, wait := e.payers.admits(p.payer, e.cfg.Now()); !ok {
			return e.throttled(ctx, p, wait)
		}
	}
	if o, ok := e.reserve(ctx, p); !ok {
		return o
	}
	if o, ok := e.verify(ctx, p); !ok {
		return o
	}
	if e.payers != nil {
		// Started only now: a payment that runs nothing (replayed, in
		// progress, refused) is not counted, and neither is a proof the
		// verification refused (anyone may name somebody else's address as
		// the payer, when the proof is left to it).
		ok, wait := e.payers.start(p.payer, e.cfg.Now())
		if !ok {
			e.release(p, "payer throttled", false)
			return e.throttledOutcome(p, wait)
		}
		started = true
	}
	if len(p.pm.Operation) > 0 {
		// A payment operation (a channel's refund): nothing runs; the
		// settlement is the whole of it.
		o := e.settle(ctx, p, Answer{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: p.pm.Operation})
		charged = o.Kind == SettleFailed
		o.Operation = o.Kind == Paid
		return o
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RunTimeout)
	ans, err := safeRun(rctx, run)
	cancel()
	if err != nil {
		// A failure the payer did not cause (the caller left, or the run
		// says it is transient: an upstream down after the preflight) does
		// not use up one of the authorization's attempts. Every failure but
		// a transient one is charged to the payer's budget: a caller that
		// leaves may have made the run spend its time all the same.
		var tr interface{ Transient() bool }
		transient := errors.As(err, &tr) && tr.Transient()
		counted := ctx.Err() == nil && !transient
		charged = !transient
		e.release(p, "run failed: "+clip.Bytes(err.Error(), 200), counted)
		p.log.Info("x402: paid call failed; not settled", "error", err)
		o := Outcome{Kind: RunFailed, Err: err, Version: p.version, Payer: p.payer, Key: p.key}
		if ans.Status != 0 || len(ans.Body) > 0 {
			o.Answer = &ans
		}
		return o
	}
	if ans.Status == 0 {
		ans.Status = 200
	}
	o := e.settle(ctx, p, ans)
	// A refused settlement (insufficient funds, ...) ran the call for
	// nothing, as a failed run does, and so did a caller that left before
	// the settlement.
	charged = o.Kind == SettleFailed || (o.Kind == Unavailable && ctx.Err() != nil)
	return o
}

// throttled answers a call whose payer the budget does not admit (Config.
// PayerBurst): Throttled, before anything is written or run. A payment the
// journal knows already is answered by it as usual (the recorded answer of
// a settled payment, in progress, used), since that runs nothing; a run it
// would grant (a released authorization with attempts left) is released
// again, uncounted.
func (e *Engine) throttled(ctx context.Context, p *paid, wait time.Duration) Outcome {
	if _, err := e.journal.Get(ctx, p.key); err == nil {
		if o, ok := e.reserve(ctx, p); !ok {
			return o
		}
		e.release(p, "payer throttled", false)
	}
	return e.throttledOutcome(p, wait)
}

// throttledOutcome is the Throttled outcome of p.
func (e *Engine) throttledOutcome(p *paid, wait time.Duration) Outcome {
	p.log.Info("x402: payer throttled (paid calls that delivered nothing, or too many at once); nothing run", "retry_after", wait)
	o := e.refuse(p.pr, Throttled, ReasonPayerThrottled, p.version)
	o.Payer, o.Key, o.RetryAfter = p.payer, p.key, wait
	return o
}

// assetOn returns the asset of the first requirement on network (a CAIP-2
// id or a v1 name), "" if none.
func assetOn(accepts []x402.PaymentRequirements, network string) string {
	want := network
	if n, ok := x402.LookupNetwork(network); ok {
		want = n.CAIP2
	}
	for _, a := range accepts {
		got := a.Network
		if n, ok := x402.LookupNetwork(a.Network); ok {
			got = n.CAIP2
		}
		if got == want {
			return a.Asset
		}
	}
	return ""
}

// correct replaces, in pr, the requirement matched by a refused payment
// with the scheme's corrected one (x402.CorrectiveRefusal).
func correct(pr *x402.PaymentRequired, matched, corrected x402.PaymentRequirements) {
	accepts := slices.Clone(pr.Accepts)
	for i, a := range accepts {
		if a.Scheme == matched.Scheme && a.Network == matched.Network && a.Amount == matched.Amount &&
			strings.EqualFold(a.Asset, matched.Asset) && strings.EqualFold(a.PayTo, matched.PayTo) {
			accepts[i] = corrected
			break
		}
	}
	pr.Accepts = accepts
}

// refuse builds a payment-required or refused outcome.
func (e *Engine) refuse(pr *x402.PaymentRequired, kind OutcomeKind, reason string, version int) Outcome {
	out := *pr
	out.X402Version = x402.Version
	out.Error = reason
	return Outcome{Kind: kind, Reason: reason, PaymentRequired: &out, Version: version}
}

// Identify is the identity of payment as its scheme tells it (the
// scheme's local checks, x402.ServerScheme.Check) against the requirements
// of offer it accepts, without journaling or settling anything: a binding
// tells by its Key whether a payment presented again is one it has seen.
// A payment that matches no offered requirement of a registered scheme, or
// that the checks refuse, is an error.
func (e *Engine) Identify(ctx context.Context, offer *Offer, payment x402.PaymentPayload) (x402.Payment, error) {
	p := &paid{call: Call{Offer: offer, Payment: &payment}, pr: &offer.PaymentRequired, version: payment.X402Version}
	if !e.match(p) {
		return x402.Payment{}, fmt.Errorf("engine: %s", ReasonNoMatchingRequirements)
	}
	s := e.scheme(p.req)
	if s == nil {
		return x402.Payment{}, fmt.Errorf("engine: no payment scheme %q is registered on %s", clip.Bytes(p.req.Scheme, 40), clip.Bytes(p.req.Network, 40))
	}
	pm, err := s.Check(ctx, p.payload, p.req)
	if err != nil {
		return pm, fmt.Errorf("engine: %w", err)
	}
	return pm, nil
}

// match finds the offered requirement the payment accepts.
func (e *Engine) match(p *paid) bool {
	if p.version == x402.VersionV1 {
		for _, req := range p.pr.Accepts {
			if v2, ok := x402.PayloadFromV1(*p.call.Payment, req); ok {
				p.payload, p.req = v2, req
				return true
			}
		}
		return false
	}
	req, ok := x402.FindMatchingRequirements(p.pr.Accepts, p.call.Payment.Accepted)
	if ok {
		p.payload, p.req = *p.call.Payment, req
	}
	return ok
}

// reserve claims the authorization; ok is false when o answers the call.
func (e *Engine) reserve(ctx context.Context, p *paid) (o Outcome, ok bool) {
	now := e.cfg.Now()
	keep := now.Add(e.cfg.KeyRetention)
	if vb := p.pm.KeepUntil; !vb.IsZero() && vb.Before(keep) {
		keep = vb
	}
	c := p.call
	res := Reservation{
		Key: p.key, Network: p.req.Network, Asset: strings.ToLower(p.req.Asset), Payer: p.pm.Payer,
		Nonce: p.pm.ID, PayTo: p.req.PayTo, Amount: p.pm.Amount,
		Request: Request{Hash: c.Fingerprint, Resource: c.Offer.Resource, Product: c.Offer.Product,
			Transport: c.Transport, RefCode: c.RefCode, RequestID: c.RequestID, X402Version: p.version},
		Owner:      e.instance,
		LeaseUntil: now.Add(e.cfg.VerifyTimeout + e.cfg.RunTimeout + leaseMargin),
		KeepUntil:  keep, Now: now,
	}
	existing, err := e.journal.Reserve(ctx, res, e.cfg.MaxAttempts)
	base := Outcome{Version: p.version, Payer: p.payer, Key: p.key}
	switch {
	case err == nil:
		return base, true
	case errors.Is(err, ErrTaken):
		same := existing.RequestHash == c.Fingerprint
		switch {
		case existing.State == StateSettled && same && existing.Answer != nil && existing.Settlement != nil &&
			(!p.pm.Unchecked || e.sameProof(p, existing.Payload)):
			// A proof left to the verification after the reservation was
			// checked by nobody here: the replay needs the very proof that
			// was paid with.
			p.log.Info("x402: replaying the answer of a settled payment")
			base.Kind, base.Answer, base.Settlement = Replayed, existing.Answer, existing.Settlement
			base.Operation = len(p.pm.Operation) > 0
			return base, false
		case same && (existing.State == StateReserved || existing.State == StateSettling):
			if existing.State == StateSettling {
				e.Kick() // its owner may be gone: resolve it as soon as allowed
			}
			p.log.Info("x402: payment in progress", "state", existing.State.String())
			o := e.refuse(p.pr, InProgress, ReasonPaymentInProgress, p.version)
			o.Payer, o.Key, o.RetryAfter = p.payer, p.key, e.retryAfter(existing)
			return o, false
		case existing.State == StateUnknown && same:
			// Possibly paid: never ask this payer to pay again.
			p.log.Warn("x402: retry of a payment whose state is unknown; the operator must reconcile it")
			base.Kind, base.Reason, base.RetryAfter = Pending, ReasonPaymentUnresolved, time.Minute
			return base, false
		case existing.State == StateReleased && same:
			p.log.Info("x402: authorization out of attempts", "attempts", existing.Attempts)
			o := e.refuse(p.pr, Refused, ReasonAttemptsExhausted, p.version)
			o.Payer, o.Key = p.payer, p.key
			return o, false
		}
		p.log.Info("x402: payment authorization already used", "state", existing.State.String(), "same_request", same)
		o := e.refuse(p.pr, Refused, cmp.Or(p.pm.UsedReason, ReasonPaymentAlreadyUsed), p.version)
		o.Payer, o.Key = p.payer, p.key
		return o, false
	default:
		p.log.Error("x402: the payment journal refused a reservation", "error", err)
		base.Kind, base.Reason, base.Err = Unavailable, ReasonStoreUnavailable, err
		return base, false
	}
}

// sameProof reports whether the recorded payment payload (JSON of an
// x402.PaymentPayload) carries the proof of p's (its scheme tells).
func (e *Engine) sameProof(p *paid, recorded []byte) bool {
	var pp x402.PaymentPayload
	if json.Unmarshal(recorded, &pp) != nil {
		return false
	}
	return p.scheme.SameProof(pp, p.payload)
}

// retryAfter is how long a client waiting for rec should wait.
func (e *Engine) retryAfter(rec Record) time.Duration {
	d := rec.LeaseUntil.Sub(e.cfg.Now())
	switch {
	case d < time.Second:
		return time.Second
	case d > 5*time.Second:
		return 5 * time.Second
	}
	return d.Round(time.Second)
}

// verify completes the scheme's checks once the payment is reserved (a
// facilitator's verify); ok is false when o answers.
func (e *Engine) verify(ctx context.Context, p *paid) (o Outcome, ok bool) {
	vctx, cancel := context.WithTimeout(ctx, e.cfg.VerifyTimeout)
	defer cancel()
	vr, err := p.scheme.Verify(vctx, p.payload, p.req, p.pm)
	if err != nil {
		e.release(p, "facilitator verify failed", false)
		p.log.Warn("x402: facilitator verify failed", "error", err)
		return Outcome{Kind: Unavailable, Reason: ReasonFacilitatorUnavailable, Err: err, Version: p.version, Payer: p.payer, Key: p.key,
			Timeout: errors.Is(err, context.DeadlineExceeded)}, false
	}
	if !vr.IsValid {
		reason := vr.InvalidReason
		if reason == "" {
			reason = x402.ReasonUnexpectedVerifyError
		}
		// A refusal of a proof left unchecked locally may be of a forgery
		// by someone else: it does not use up the payment.
		e.release(p, "facilitator refused: "+clip.Bytes(reason, 100), !p.pm.Unchecked)
		p.log.Info("x402: payment refused by the facilitator", "reason", clip.Bytes(reason, 80))
		o := e.refuse(p.pr, Refused, reason, p.version)
		o.Payer, o.Key = p.payer, p.key
		return o, false
	}
	return Outcome{}, true
}

// release frees p's reservation, logging a failure (the lease frees it
// anyway).
func (e *Engine) release(p *paid, reason string, counted bool) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.VerifyTimeout)
	defer cancel()
	if err := e.journal.Release(ctx, p.key, e.instance, reason, counted); err != nil {
		p.log.Error("x402: releasing the payment reservation failed (its lease frees it)", "error", err)
	}
	e.schemeRelease(ctx, p)
}

// schemeRelease tells p's scheme, when it holds something of its own for
// a payment (x402.Releaser), that the payment is not settled.
func (e *Engine) schemeRelease(ctx context.Context, p *paid) {
	if r, ok := p.scheme.(x402.Releaser); ok {
		r.Release(ctx, p.payload, p.req, p.pm)
	}
}

// settle journals the answer, settles and journals the settlement.
func (e *Engine) settle(ctx context.Context, p *paid, ans Answer) Outcome {
	base := Outcome{Version: p.version, Payer: p.payer, Key: p.key}
	payloadJSON, err1 := json.Marshal(p.payload)
	reqJSON, err2 := json.Marshal(p.req)
	if err := errors.Join(err1, err2); err != nil {
		e.release(p, "encoding the payment failed", false)
		p.log.Error("x402: encoding the payment for the journal failed", "error", err)
		base.Kind, base.Reason, base.Err = Unavailable, ReasonStoreUnavailable, err
		return base
	}
	if err := ctx.Err(); err != nil { // the caller left: charge nothing
		e.release(p, "caller gone before settlement", false)
		base.Kind, base.Reason, base.Err = Unavailable, ReasonStoreUnavailable, err
		return base
	}
	now := e.cfg.Now()
	st := Settling{
		Answer: ans, AnswerUntil: now.Add(e.cfg.AnswerRetention),
		Payload: payloadJSON, Requirements: reqJSON, Payer: p.payer, Amount: p.pm.Amount,
		LeaseUntil: now.Add(e.cfg.SettleTimeout + leaseMargin), RequestHash: p.call.Fingerprint,
	}
	// The settling write is what makes a settlement recoverable: without
	// it, nothing is settled.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.VerifyTimeout)
	err := e.journal.Settling(wctx, p.key, e.instance, st)
	cancel()
	if err != nil {
		// A row that is no longer this call's (its lease ended and it was
		// released, or admitted again) is left alone.
		if !errors.Is(err, ErrState) {
			e.release(p, "journal refused settling", false)
		}
		p.log.Error("x402: the payment journal refused the settling state; nothing settled", "error", err)
		base.Kind, base.Reason, base.Err = Unavailable, ReasonStoreUnavailable, err
		return base
	}
	e.hook(HookSettlingCommitted, p.key)
	p.leaseUntil = st.LeaseUntil

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.SettleTimeout)
	defer cancel()
	res, err := p.scheme.Settle(sctx, p.payload, p.req, p.pm)
	e.hook(HookSettleReturned, p.key)
	if err != nil {
		// No decision: the transaction may have gone out. The row stays
		// settling; recovery resolves it once its lease ends.
		p.log.Error("x402: settlement failed without a decision; resolving it in the background (and by recovery after a crash)", "error", err)
		e.background(func() { e.resolveLater(p.key, p.leaseUntil, p.log) })
		base.Kind, base.Reason, base.Err, base.RetryAfter = Pending, ReasonSettlementPending, err, 5*time.Second
		return base
	}
	if res.Status != x402.Settled {
		return e.settleRefused(p, res)
	}
	sr := res.Response
	sr.Success = true
	if !res.Verbatim {
		e.completeSettlement(&sr, p.req, p.payer)
	}
	if err := e.recordSettled(context.WithoutCancel(ctx), p.key, sr); err != nil {
		p.log.Error("x402: settled but the journal did not record it; recording it in the background (and by recovery after a crash)",
			"transaction", clip.Bytes(sr.Transaction, 100), "error", err)
		e.background(func() { e.settleLater(p.key, sr, p.leaseUntil, p.log) })
		base.Kind, base.Reason, base.Err, base.RetryAfter = Pending, ReasonSettlementPending, err, 5*time.Second
		return base
	}
	e.hook(HookSettledCommitted, p.key)
	p.log.Info("x402: payment settled", "transaction", clip.Bytes(sr.Transaction, 100))
	base.Kind, base.Answer, base.Settlement, base.amount = Paid, &ans, &sr, p.pm.Amount
	return base
}

// settleRefused handles a settlement the scheme did not report settled.
func (e *Engine) settleRefused(p *paid, st x402.Settlement) Outcome {
	sr := st.Response
	if st.Status == x402.Undecided {
		// Something may be on chain: the payment may be made. The row stays
		// settling and is resolved in the background; the client is told to
		// come back with the same payment, never to pay again.
		p.log.Warn("x402: settlement ambiguous; resolving it in the background", "reason", clip.Bytes(cmp.Or(st.Reason, sr.ErrorReason), 80))
		e.background(func() { e.resolveLater(p.key, p.leaseUntil, p.log) })
		return Outcome{Kind: Pending, Reason: ReasonSettlementPending, RetryAfter: 5 * time.Second, Version: p.version, Payer: p.payer, Key: p.key}
	}
	if sr.ErrorReason == "" {
		sr.ErrorReason = x402.ReasonUnexpectedSettleError
	}
	out := x402.SettleResponse{Success: false, ErrorReason: sr.ErrorReason, ErrorMessage: sr.ErrorMessage, Network: p.req.Network, Payer: p.payer}
	base := Outcome{Kind: SettleFailed, Reason: sr.ErrorReason, Settlement: &out, Version: p.version, Payer: p.payer, Key: p.key}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.VerifyTimeout)
	defer cancel()
	var err error
	if st.Status == x402.Failed {
		// Refused for good (used elsewhere before our first settle).
		err = e.journal.Fail(ctx, p.key, e.instance, sr.ErrorReason, sr)
	} else {
		// Refused before anything was paid: the payer may try again
		// (bounded).
		err = e.journal.Release(ctx, p.key, e.instance, "settlement refused: "+clip.Bytes(sr.ErrorReason, 100), true)
	}
	if err != nil {
		p.log.Error("x402: journaling a refused settlement failed; recovery will resolve it", "error", err)
	}
	e.schemeRelease(ctx, p)
	p.log.Warn("x402: settlement refused", "reason", clip.Bytes(sr.ErrorReason, 80))
	return base
}

// completeSettlement fills what a facilitator may leave out.
func (e *Engine) completeSettlement(sr *x402.SettleResponse, req x402.PaymentRequirements, payer string) {
	if sr.Network == "" {
		sr.Network = req.Network
	}
	if sr.Payer == "" {
		sr.Payer = payer
	}
	if sr.Amount == "" {
		sr.Amount = req.Amount
	}
}

// recordSettled writes the settled state, retrying briefly: the store may
// be restarting, and a settled payment recorded now is answered now.
func (e *Engine) recordSettled(ctx context.Context, key string, sr x402.SettleResponse) error {
	var err error
	pause := 50 * time.Millisecond
	deadline := time.Now().Add(5 * time.Second)
	for {
		wctx, cancel := context.WithTimeout(ctx, e.cfg.VerifyTimeout)
		err = e.journal.Settle(wctx, key, sr, e.cfg.Now())
		cancel()
		if err == nil || errors.Is(err, ErrState) || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// settleLater keeps trying to record a settlement the journal refused,
// until it is recorded, the row leaves this engine or the row's lease ends
// (leaseUntil, on the engine's clock): after that, recovery (here or on
// another instance) owns the row and resolves it from the facilitator.
func (e *Engine) settleLater(key string, sr x402.SettleResponse, leaseUntil time.Time, log *slog.Logger) {
	pause := 500 * time.Millisecond
	for e.cfg.Now().Add(pause).Before(leaseUntil) {
		if !e.sleep(pause) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.VerifyTimeout)
		err := e.journal.Settle(ctx, key, sr, e.cfg.Now())
		cancel()
		if err == nil {
			log.Info("x402: settlement recorded after the journal came back", "transaction", clip.Bytes(sr.Transaction, 100))
			return
		}
		if errors.Is(err, ErrState) { // recovered meanwhile, or no longer ours
			return
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// resolveLater resolves, soon, a settlement whose outcome this engine did
// not learn (the facilitator failed or its answer was lost), rather than
// waiting for the row's lease to end: it presents the settlement again (a
// deduplicating facilitator returns the original result) or asks the
// status query, as recovery does, with growing pauses until the row is
// resolved or leaves this engine. Every attempt is cut to end within the
// row's lease, read from the row on the engine's clock: after the lease,
// another instance's recovery may resolve the row, and two settles of one
// authorization are never in flight at once.
func (e *Engine) resolveLater(key string, leaseUntil time.Time, log *slog.Logger) {
	pause := 2 * time.Second
	for e.cfg.Now().Add(pause + minResolveWindow + leaseSafety).Before(leaseUntil) {
		if !e.sleep(pause) {
			return
		}
		pause = min(2*pause, 15*time.Second)
		gctx, gcancel := context.WithTimeout(context.Background(), e.cfg.VerifyTimeout)
		rec, err := e.journal.Get(gctx, key)
		gcancel()
		if err != nil {
			continue
		}
		if rec.State != StateSettling || rec.Owner != e.instance {
			return // resolved elsewhere
		}
		leaseUntil = rec.LeaseUntil
		left := leaseUntil.Sub(e.cfg.Now()) - leaseSafety
		if left < minResolveWindow {
			return // too late to finish within the lease: recovery's turn
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(e.cfg.SettleTimeout, left))
		st := e.resolve(ctx, rec)
		cancel()
		if st != StateSettling {
			log.Info("x402: an undecided settlement is resolved", "state", st.String())
			return
		}
	}
}

// background runs f on its own goroutine, tracked for Close.
func (e *Engine) background(f func()) {
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		f()
	}()
}

// sleep waits d, or less when the engine closes; false means closed.
func (e *Engine) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.stop:
		return false
	}
}

// Close stops the background resolutions of undecided settlements and
// waits for them (their rows stay settling, durable: recovery, here or on
// another instance, resolves them). Call it after the last Serve has
// returned and before closing the journal. It is idempotent.
func (e *Engine) Close() {
	e.stopOnce.Do(func() { close(e.stop) })
	e.bg.Wait()
}

func (e *Engine) hook(point, key string) {
	if e.cfg.Hook != nil {
		e.cfg.Hook(point, key)
	}
}

// safeRun runs run, turning a panic into an error.
func safeRun(ctx context.Context, run RunFunc) (ans Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("engine: the paid call panicked: %v", v)
		}
	}()
	return run(ctx)
}

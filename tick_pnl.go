package svc

import (
	"context"

	"github.com/shopspring/decimal"
)

// TickPnLRequest is the input of TickPnL.
type TickPnLRequest struct {
	// Entry is the entry price; required. Any finite decimal is accepted,
	// including zero and negative prices (calendar spreads, WTI in April 2020).
	Entry Number `json:"entry" validate:"required"`
	// Exit is the exit price; required, any finite decimal like Entry.
	Exit Number `json:"exit" validate:"required"`
	// Contracts is the position size; required, > 0. Fractions are allowed
	// (CFDs, fractional lots).
	Contracts Number `json:"contracts" validate:"required,gt=0"`
	// TickSize is the minimum price increment; required, > 0.
	TickSize Number `json:"tickSize" validate:"required,gt=0"`
	// TickValue is the money value of one tick for one contract; required, > 0.
	TickValue Number `json:"tickValue" validate:"required,gt=0"`
	// Direction is "long" or "short"; required.
	Direction Direction `json:"direction" validate:"required,oneof=long short"`
}

// TickPnLResponse is the output of TickPnL.
type TickPnLResponse struct {
	// Ticks is the price move in ticks, positive when the trade gained.
	Ticks Number `json:"ticks"`
	// PnL is the profit (positive) or loss (negative) in the tick value's currency.
	PnL Number `json:"pnl"`
	// PriceMove is the move in the trade's favour: exit − entry for a long,
	// entry − exit for a short.
	PriceMove Number `json:"priceMove"`
	// WholeTicks reports whether PriceMove is an exact multiple of TickSize.
	// When false the prices are off the tick grid and Ticks is fractional.
	WholeTicks bool `json:"wholeTicks"`
	// PnLPerTick is the money value of one tick for the whole position:
	// tickValue·contracts.
	PnLPerTick Number `json:"pnlPerTick"`

	Entry     Number    `json:"entry"`
	Exit      Number    `json:"exit"`
	Contracts Number    `json:"contracts"`
	TickSize  Number    `json:"tickSize"`
	TickValue Number    `json:"tickValue"`
	Direction Direction `json:"direction"`
}

// TickPnL computes the result of a futures-style trade in ticks and money.
//
// Long: ticks = (exit − entry)/tickSize; short: ticks = (entry − exit)/tickSize;
// pnl = ticks·tickValue·contracts. Example: entry 100, exit 101, 2 contracts,
// tickSize 0.25, tickValue 12.5, long → ticks 4, pnl 100.
//
// Arithmetic is exact decimal. When the move is not a whole multiple of the
// tick size the quotient may not terminate (a tick size of 0.03, say): ticks
// is then rounded half-even to 8 decimal places, and pnl is computed from the
// exact quotient, as priceMove·tickValue·contracts/tickSize rounded half-even
// to 8 places once at the end — so pnl is the correctly rounded money result,
// not the product of the already rounded ticks. A result that terminates is
// always exact, and then pnl = ticks·tickValue·contracts holds exactly.
//
// Rules: entry and exit required; contracts, tickSize and tickValue > 0
// (rule "gt"); direction one of long, short (rule "oneof"); every number
// within the magnitude and precision bounds of [Number].
func TickPnL(ctx context.Context, req TickPnLRequest) (TickPnLResponse, error) {
	if err := ctx.Err(); err != nil {
		return TickPnLResponse{}, errorf(KindTimeout, err, "tick_pnl: %v", err)
	}
	if err := req.Validate(); err != nil {
		return TickPnLResponse{}, err
	}

	move := req.Exit.Decimal().Sub(req.Entry.Decimal())
	if req.Direction == Short {
		move = move.Neg()
	}
	tickSize := req.TickSize.Decimal()
	perTick := req.TickValue.Decimal().Mul(req.Contracts.Decimal())
	return TickPnLResponse{
		Ticks:      NewNumber(quo(move, tickSize)),
		PnL:        NewNumber(quo(move.Mul(perTick), tickSize)),
		PriceMove:  NewNumber(move),
		WholeTicks: tickPnLWhole(move, tickSize),
		PnLPerTick: NewNumber(perTick),
		Entry:      req.Entry,
		Exit:       req.Exit,
		Contracts:  req.Contracts,
		TickSize:   req.TickSize,
		TickValue:  req.TickValue,
		Direction:  req.Direction,
	}, nil
}

// tickPnLWhole reports whether move is an integer multiple of tickSize.
func tickPnLWhole(move, tickSize decimal.Decimal) bool {
	_, r := move.QuoRem(tickSize, 0)
	return r.IsZero()
}

// tickPnLTags are the compiled validate tags of TickPnLRequest.
var tickPnLTags = compileTags[TickPnLRequest]()

// Validate reports whether TickPnL accepts req, without computing: the same
// *Error (KindInvalid, one FieldError per broken rule) TickPnL returns for
// it, or nil.
func (req *TickPnLRequest) Validate() error {
	if req == nil {
		return InvalidField("", "required", "the request is missing")
	}
	var fe fieldErrors
	tickPnLTags.check(&fe, "", req)
	return fe.err()
}

package svc

import (
	"context"
	"math"

	"github.com/shopspring/decimal"
)

// StrategyGradeRequest is the input of StrategyGrade: summary statistics of
// a backtest or track record.
type StrategyGradeRequest struct {
	// Trades is the number of trades; required, a whole number ≥ 0.
	Trades Number `json:"trades" validate:"required,gte=0,integer"`
	// ProfitFactor is gross profit / gross loss; required, ≥ 0.
	ProfitFactor Number `json:"profitFactor" validate:"required,gte=0"`
	// WinRatePct is the share of winning trades in percent; required, 0–100.
	WinRatePct Number `json:"winRatePct" validate:"required,gte=0,lte=100"`
	// MaxDrawdownPct is the largest peak-to-trough equity drop in percent;
	// required, 0–100.
	MaxDrawdownPct Number `json:"maxDrawdownPct" validate:"required,gte=0,lte=100"`
	// WalkForwardPassPct is the share of walk-forward (out-of-sample)
	// windows that passed, in percent; required, 0–100.
	WalkForwardPassPct Number `json:"walkForwardPassPct" validate:"required,gte=0,lte=100"`
}

// StrategyGradeComponents holds the five score components, each on 0–100
// and rounded half-even to 1 decimal. The same shape carries the weights.
type StrategyGradeComponents struct {
	Sample      Number `json:"sample"`
	PF          Number `json:"pf"`
	WinRate     Number `json:"winRate"`
	Drawdown    Number `json:"drawdown"`
	WalkForward Number `json:"walkForward"`
}

// StrategyGradeResponse is the output of StrategyGrade.
type StrategyGradeResponse struct {
	// Score is the weighted score on 0–100, rounded half-even to 1 decimal.
	Score Number `json:"score"`
	// Grade is the letter for Score: A ≥ 85, B ≥ 70, C ≥ 55, D ≥ 40, else F.
	Grade string `json:"grade"`
	// Components are the five components, rounded to 1 decimal.
	Components StrategyGradeComponents `json:"components"`
	// Weights are the weights of the components in Score (they sum to 1).
	Weights StrategyGradeComponents `json:"weights"`
	// Warnings name weak or suspicious evidence; never null, possibly empty.
	Warnings []string `json:"warnings"`
}

// Warning texts of StrategyGrade, in the order they are reported.
const (
	strategyWarnFewTrades   = "fewer than 30 trades: the sample is too small to judge the strategy"
	strategyWarnHighPF      = "profit factor above 3 is unusually high: check for overfitting, look-ahead bias or too few trades"
	strategyWarnLosingPF    = "profit factor below 1: the strategy lost money over the sample"
	strategyWarnHighWinRate = "win rate above 90 %: check for hidden tail risk (averaging down, no stop loss)"
	strategyWarnZeroDD      = "max drawdown of 0 % is implausible for a real track record: check the input"
	strategyWarnDeepDD      = "max drawdown of 30 % or more: the drawdown component is 0"
	strategyWarnWalkForward = "walk-forward pass rate below 50 %: the edge does not hold out of sample"
)

// strategyPlaces is the fixed grid on which unrounded components are held.
// Rounding every component to the same grid keeps the score monotone in
// each input; 20 places is far below anything the 1-decimal outputs show.
const strategyPlaces = 20

// strategyWeights returns the weights of sample, pf, winRate, drawdown and
// walkForward in the score.
func strategyWeights() [5]decimal.Decimal {
	return [5]decimal.Decimal{
		decimal.New(15, -2), decimal.New(30, -2), decimal.New(10, -2), decimal.New(20, -2), decimal.New(25, -2),
	}
}

// StrategyGrade scores how far a strategy's statistics can be trusted, on
// 0–100, from five components (each clamped to 0–100):
//
//	sample      = 100·(1 − 10^(−trades/300))
//	pf          = 100·(profitFactor − 1)/0.6
//	winRate     = winRatePct
//	drawdown    = 100 − maxDrawdownPct·10/3
//	walkForward = walkForwardPassPct
//	score       = 0.15·sample + 0.30·pf + 0.10·winRate + 0.20·drawdown + 0.25·walkForward
//
// So pf reaches 100 at a profit factor of 1.6 and drawdown reaches 0 at a 30 %
// drawdown. sample is computed in float64 (it is a power of ten) and held to
// 10 places; the others are exact decimal held to 20 places. The score is
// computed from these unrounded components and rounded half-even to 1
// decimal; the components are reported rounded half-even to 1 decimal. The
// score is non-decreasing in trades, profitFactor, winRatePct and
// walkForwardPassPct and non-increasing in maxDrawdownPct.
//
// grade is A for a score ≥ 85, B ≥ 70, C ≥ 55, D ≥ 40, F below. warnings
// flag weak evidence: fewer than 30 trades, a profit factor above 3 or
// below 1, a win rate above 90 %, a max drawdown of 0 (with trades) or of
// 30 % or more, a walk-forward pass rate below 50 %.
//
// Rules: every field required; trades a whole number ≥ 0 (rules "gte",
// "integer"); profitFactor ≥ 0; the percentages in [0, 100] ("gte", "lte").
func StrategyGrade(ctx context.Context, req StrategyGradeRequest) (StrategyGradeResponse, error) {
	if err := ctx.Err(); err != nil {
		return StrategyGradeResponse{}, errorf(KindTimeout, err, "strategy_grade: %v", err)
	}
	if err := req.Validate(); err != nil {
		return StrategyGradeResponse{}, err
	}

	trades := req.Trades.Decimal()
	pf := req.ProfitFactor.Decimal()
	winRate := req.WinRatePct.Decimal()
	dd := req.MaxDrawdownPct.Decimal()
	wf := req.WalkForwardPassPct.Decimal()
	three := decimal.NewFromInt(3)

	comps := [5]decimal.Decimal{
		strategySample(trades),
		strategyClamp(pf.Sub(decimal.NewFromInt(1)).Mul(decimal.NewFromInt(500)).DivRound(three, strategyPlaces)),
		winRate,
		strategyClamp(decimal.NewFromInt(300).Sub(dd.Mul(decimal.NewFromInt(10))).DivRound(three, strategyPlaces)),
		wf,
	}
	weights := strategyWeights()
	score := decimal.Zero
	for i, c := range comps {
		score = score.Add(c.Mul(weights[i]))
	}
	score = score.RoundBank(1)

	var warnings []string
	if trades.LessThan(decimal.NewFromInt(30)) {
		warnings = append(warnings, strategyWarnFewTrades)
	}
	if pf.GreaterThan(three) {
		warnings = append(warnings, strategyWarnHighPF)
	}
	if pf.LessThan(decimal.NewFromInt(1)) {
		warnings = append(warnings, strategyWarnLosingPF)
	}
	if winRate.GreaterThan(decimal.NewFromInt(90)) {
		warnings = append(warnings, strategyWarnHighWinRate)
	}
	if dd.IsZero() && trades.IsPositive() {
		warnings = append(warnings, strategyWarnZeroDD)
	}
	if dd.GreaterThanOrEqual(decimal.NewFromInt(30)) {
		warnings = append(warnings, strategyWarnDeepDD)
	}
	if wf.LessThan(decimal.NewFromInt(50)) {
		warnings = append(warnings, strategyWarnWalkForward)
	}
	if warnings == nil {
		warnings = []string{}
	}

	round1 := func(d decimal.Decimal) Number { return NewNumber(d.RoundBank(1)) }
	return StrategyGradeResponse{
		Score: NewNumber(score),
		Grade: strategyLetter(score),
		Components: StrategyGradeComponents{
			Sample:      round1(comps[0]),
			PF:          round1(comps[1]),
			WinRate:     round1(comps[2]),
			Drawdown:    round1(comps[3]),
			WalkForward: round1(comps[4]),
		},
		Weights: StrategyGradeComponents{
			Sample:      NewNumber(weights[0]),
			PF:          NewNumber(weights[1]),
			WinRate:     NewNumber(weights[2]),
			Drawdown:    NewNumber(weights[3]),
			WalkForward: NewNumber(weights[4]),
		},
		Warnings: warnings,
	}, nil
}

// strategySample is 100·(1 − 10^(−trades/300)), computed in float64 as
// −100·expm1(−trades·ln 10/300) (accurate for few trades too) and held to
// 10 decimal places. trades ≥ 0.
func strategySample(trades decimal.Decimal) decimal.Decimal {
	t, _ := trades.Float64()
	s := -100 * math.Expm1(-t*math.Ln10/300)
	return strategyClamp(decimal.NewFromFloat(s).Round(10))
}

// strategyClamp limits d to [0, 100].
func strategyClamp(d decimal.Decimal) decimal.Decimal {
	if d.IsNegative() {
		return decimal.Zero
	}
	if hundred := decimal.NewFromInt(100); d.GreaterThan(hundred) {
		return hundred
	}
	return d
}

// strategyLetter maps a score to its letter grade.
func strategyLetter(score decimal.Decimal) string {
	switch {
	case score.GreaterThanOrEqual(decimal.NewFromInt(85)):
		return "A"
	case score.GreaterThanOrEqual(decimal.NewFromInt(70)):
		return "B"
	case score.GreaterThanOrEqual(decimal.NewFromInt(55)):
		return "C"
	case score.GreaterThanOrEqual(decimal.NewFromInt(40)):
		return "D"
	default:
		return "F"
	}
}

// strategyGradeTags are the compiled validate tags of StrategyGradeRequest.
var strategyGradeTags = compileTags[StrategyGradeRequest]()

// Validate reports whether StrategyGrade accepts req, without grading: the
// same *Error (KindInvalid, one FieldError per broken rule) StrategyGrade
// returns for it, or nil.
func (req *StrategyGradeRequest) Validate() error {
	if req == nil {
		return InvalidField("", "required", "the request is missing")
	}
	var fe fieldErrors
	strategyGradeTags.check(&fe, "", req)
	return fe.err()
}

package svc

import (
	"context"

	"github.com/shopspring/decimal"
)

// RiskLevelsRequest is the input of RiskLevels. Percentages are in percent:
// slPct 0.05 means 0.05 %, not 5 %.
type RiskLevelsRequest struct {
	// Entry is the entry price; required, > 0.
	Entry Number `json:"entry" validate:"required,gt=0"`
	// Direction is "long" or "short"; required.
	Direction Direction `json:"direction" validate:"required,oneof=long short"`
	// SlPct is the stop distance in percent of the entry; required, > 0.
	SlPct Number `json:"slPct" validate:"required,gt=0"`
	// TpPct is the target distance in percent of the entry; required, > 0.
	TpPct Number `json:"tpPct" validate:"required,gt=0"`
}

// RiskLevelsResponse is the output of RiskLevels. Stop and Target are exact;
// RiskReward is exact when the ratio terminates and rounded half-even to 8
// places otherwise.
type RiskLevelsResponse struct {
	Entry          Number    `json:"entry"`
	Direction      Direction `json:"direction"`
	Stop           Number    `json:"stop"`
	Target         Number    `json:"target"`
	RiskReward     Number    `json:"riskReward"`
	StopDistance   Number    `json:"stopDistance"`
	TargetDistance Number    `json:"targetDistance"`
	SlPct          Number    `json:"slPct"`
	TpPct          Number    `json:"tpPct"`
}

// RiskLevels computes stop and target prices from an entry, a direction and
// stop/target percentages of the entry.
//
// Long: stop = entry·(1 − slPct/100), target = entry·(1 + tpPct/100).
// Short mirrors it: stop = entry·(1 + slPct/100), target = entry·(1 − tpPct/100).
// stopDistance = entry·slPct/100 and targetDistance = entry·tpPct/100 are the
// absolute price distances; riskReward = targetDistance / stopDistance, which
// equals tpPct/slPct.
//
// Rules: entry > 0, slPct > 0, tpPct > 0 (rule "gt"), direction one of long,
// short (rule "oneof"). A level at or below zero (a long stop or a short
// target of 100 % or more) is invalid input with rule "level_positive".
// Everything is exact except riskReward, which is rounded half-even to 8
// places when the ratio does not terminate.
func RiskLevels(ctx context.Context, req RiskLevelsRequest) (RiskLevelsResponse, error) {
	if err := ctx.Err(); err != nil {
		return RiskLevelsResponse{}, errorf(KindTimeout, err, "risk_levels: %v", err)
	}
	if err := req.Validate(); err != nil {
		return RiskLevelsResponse{}, err
	}
	stopDist, targetDist, stop, target := req.levels()
	return RiskLevelsResponse{
		Entry:          req.Entry,
		Direction:      req.Direction,
		Stop:           NewNumber(stop),
		Target:         NewNumber(target),
		RiskReward:     NewNumber(quo(targetDist, stopDist)),
		StopDistance:   NewNumber(stopDist),
		TargetDistance: NewNumber(targetDist),
		SlPct:          req.SlPct,
		TpPct:          req.TpPct,
	}, nil
}

// riskLevelsTags are the compiled validate tags of RiskLevelsRequest.
var riskLevelsTags = compileTags[RiskLevelsRequest]()

// Validate reports whether RiskLevels accepts req, without computing the
// levels: the same *Error (KindInvalid, one FieldError per broken rule)
// RiskLevels returns for it, or nil.
//
// A stop or target at or below zero is the only rule that depends on more
// than one field; with entry > 0 it reduces to slPct < 100 for a long and
// tpPct < 100 for a short, so it is checked by comparison.
func (req *RiskLevelsRequest) Validate() error {
	if req == nil {
		return InvalidField("", "required", "the request is missing")
	}
	var fe fieldErrors
	riskLevelsTags.check(&fe, "", req)
	if err := fe.err(); err != nil {
		return err
	}
	// Both percentages are > 0 here: below 100 means below 10².
	if req.Direction == Long && !belowPow10(req.SlPct.Decimal(), 2) {
		_, _, stop, _ := req.levels()
		fe.add("slPct", "level_positive", "puts the stop at %s, which is not above zero", stop.String())
	}
	if req.Direction == Short && !belowPow10(req.TpPct.Decimal(), 2) {
		_, _, _, target := req.levels()
		fe.add("tpPct", "level_positive", "puts the target at %s, which is not above zero", target.String())
	}
	return fe.err()
}

// levels computes the exact distances and levels of a valid request.
func (req *RiskLevelsRequest) levels() (stopDist, targetDist, stop, target decimal.Decimal) {
	entry := req.Entry.Decimal()
	stopDist = entry.Mul(req.SlPct.Decimal()).Mul(percent) // exact
	targetDist = entry.Mul(req.TpPct.Decimal()).Mul(percent)
	s := decimal.NewFromInt(req.Direction.sign())
	return stopDist, targetDist, entry.Sub(stopDist.Mul(s)), entry.Add(targetDist.Mul(s))
}

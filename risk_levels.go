package svc

import (
	"context"

	"github.com/shopspring/decimal"
)

// RiskLevelsRequest is the input of RiskLevels. Percentages are in percent:
// slPct 0.05 means 0.05 %, not 5 %.
type RiskLevelsRequest struct {
	Entry     Number    `json:"entry" validate:"required,gt=0"`
	Direction Direction `json:"direction" validate:"required,oneof=long short"`
	SlPct     Number    `json:"slPct" validate:"required,gt=0"`
	TpPct     Number    `json:"tpPct" validate:"required,gt=0"`
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
// riskReward = |target − entry| / |entry − stop|, which equals tpPct/slPct.
// A level at or below zero (a short target of 100 % or more) is invalid input.
func RiskLevels(ctx context.Context, req RiskLevelsRequest) (RiskLevelsResponse, error) {
	if err := ctx.Err(); err != nil {
		return RiskLevelsResponse{}, errorf(KindTimeout, err, "risk_levels: %v", err)
	}
	var fe fieldErrors
	validateStruct(&fe, req)
	req.Entry.checkRange(&fe, "entry")
	req.SlPct.checkRange(&fe, "slPct")
	req.TpPct.checkRange(&fe, "tpPct")
	if err := fe.err(); err != nil {
		return RiskLevelsResponse{}, err
	}

	entry := req.Entry.Decimal()
	stopDist := entry.Mul(req.SlPct.Decimal()).Mul(percent) // exact
	targetDist := entry.Mul(req.TpPct.Decimal()).Mul(percent)
	s := decimal.NewFromInt(req.Direction.sign())
	stop := entry.Sub(stopDist.Mul(s))
	target := entry.Add(targetDist.Mul(s))
	if !stop.IsPositive() {
		fe.add("slPct", "level_positive", "puts the stop at %s, which is not above zero", stop.String())
	}
	if !target.IsPositive() {
		fe.add("tpPct", "level_positive", "puts the target at %s, which is not above zero", target.String())
	}
	if err := fe.err(); err != nil {
		return RiskLevelsResponse{}, err
	}
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

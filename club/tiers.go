package club

// Tier names, lowest first.
const (
	TierFounding = "FOUNDING"
	TierInsider  = "INSIDER"
	TierPrime    = "PRIME"
)

// Metric names used by tier qualifiers.
const (
	MetricPaidCalls      = "paidCalls"      // the wallet's settled paid calls
	MetricReferredPayers = "referredPayers" // distinct other payers whose settled calls carried the wallet's code
)

// Qualifier is one way to reach a tier: Metric at least Min.
type Qualifier struct {
	Metric string `json:"metric"`
	Min    int64  `json:"min"`
}

// Tier is a membership tier. A wallet holds a tier when it meets any one of
// its qualifiers; it is reported at the highest tier it holds. Benefits
// are recognition only.
type Tier struct {
	Name        string      `json:"name"`
	Rank        int         `json:"rank"` // 1 = lowest
	Qualifiers  []Qualifier `json:"qualifiers"`
	Description string      `json:"description"`
	Benefits    []string    `json:"benefits"`
}

// Tiers returns the tiers, lowest first (a fresh copy each call):
//
//	FOUNDING  1+ paid call
//	INSIDER   10+ paid calls, or 3+ referred payers
//	PRIME     100+ paid calls, or 20+ referred payers
func Tiers() []Tier {
	return []Tier{
		{
			Name: TierFounding, Rank: 1,
			Qualifiers:  []Qualifier{{MetricPaidCalls, 1}},
			Description: "1 or more settled paid calls",
			Benefits: []string{
				"FOUNDING recognition on /api/club/status, computed from the settlement ledger (anyone can check it)",
				"a place among the service's founding payers",
			},
		},
		{
			Name: TierInsider, Rank: 2,
			Qualifiers:  []Qualifier{{MetricPaidCalls, 10}, {MetricReferredPayers, 3}},
			Description: "10 or more settled paid calls, or 3 or more referred payers",
			Benefits: []string{
				"INSIDER recognition on /api/club/status, computed from the settlement ledger",
				"recognition as a regular user or a connector who brought other payers",
			},
		},
		{
			Name: TierPrime, Rank: 3,
			Qualifiers:  []Qualifier{{MetricPaidCalls, 100}, {MetricReferredPayers, 20}},
			Description: "100 or more settled paid calls, or 20 or more referred payers",
			Benefits: []string{
				"PRIME recognition on /api/club/status, computed from the settlement ledger",
				"the club's highest recognition",
			},
		},
	}
}

// Progress is how far a wallet is along one qualifier of a tier.
type Progress struct {
	Metric    string `json:"metric"`
	Target    int64  `json:"target"`
	Current   int64  `json:"current"`
	Remaining int64  `json:"remaining"`
}

// NextTier is the tier above a wallet's and what it needs: any one of
// AnyOf reaching its target.
type NextTier struct {
	Tier  string     `json:"tier"`
	AnyOf []Progress `json:"anyOf"`
}

// metrics are a wallet's qualifier values.
type metrics struct {
	paidCalls, referredPayers int64
}

func (m metrics) value(metric string) int64 {
	if metric == MetricReferredPayers {
		return m.referredPayers
	}
	return m.paidCalls
}

// meets reports whether m meets any qualifier of t.
func (t Tier) meets(m metrics) bool {
	for _, q := range t.Qualifiers {
		if m.value(q.Metric) >= q.Min {
			return true
		}
	}
	return false
}

// TierFor returns the highest tier that paidCalls settled calls and
// referredPayers referred payers qualify for ("" when none) and the next
// tier with what it needs (nil at the top).
func TierFor(paidCalls, referredPayers int64) (tier string, next *NextTier) {
	m := metrics{paidCalls, referredPayers}
	tiers := Tiers()
	for i := len(tiers) - 1; i >= 0; i-- {
		if tiers[i].meets(m) {
			tier = tiers[i].Name
			if i+1 < len(tiers) {
				next = nextTier(tiers[i+1], m)
			}
			return tier, next
		}
	}
	return "", nextTier(tiers[0], m)
}

func nextTier(t Tier, m metrics) *NextTier {
	n := &NextTier{Tier: t.Name, AnyOf: make([]Progress, 0, len(t.Qualifiers))}
	for _, q := range t.Qualifiers {
		cur := m.value(q.Metric)
		n.AnyOf = append(n.AnyOf, Progress{Metric: q.Metric, Target: q.Min, Current: cur, Remaining: max(0, q.Min-cur)})
	}
	return n
}

package httpserver

import (
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/ledger"
)

// TestDayChartLabelsStayInside: the first day's label starts at the left
// edge, the last one's ends at the right edge, the others are centred on
// their bars: none is cut off by the chart's box.
func TestDayChartLabelsStayInside(t *testing.T) {
	from := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	for _, days := range []int{1, 7, 30, 90} {
		c := dayChart(nil, from, from.AddDate(0, 0, days))
		if len(c.Bars) != days {
			t.Fatalf("%d days: %d bars", days, len(c.Bars))
		}
		last := c.Bars[len(c.Bars)-1]
		if last.Short == "" || last.Anchor != "end" || last.LabelX != c.Width {
			t.Fatalf("%d days: the last label %q is anchored %s at %.1f of %.1f", days, last.Short, last.Anchor, last.LabelX, c.Width)
		}
		if days > 1 && (c.Bars[0].Anchor != "start" || c.Bars[0].LabelX != 0) {
			t.Fatalf("%d days: the first label is anchored %s at %.1f", days, c.Bars[0].Anchor, c.Bars[0].LabelX)
		}
		for _, b := range c.Bars[1:max(len(c.Bars)-1, 1)] {
			if b.Anchor != "middle" || b.LabelX < b.X || b.LabelX > b.X+b.W {
				t.Fatalf("%d days: label of %s anchored %s at %.1f, its bar spans %.1f..%.1f", days, b.Label, b.Anchor, b.LabelX, b.X, b.X+b.W)
			}
		}
	}
}

// TestBarValueLabels: a bar's label prints its amounts without trailing
// zeros and leaves a zero part out.
func TestBarValueLabels(t *testing.T) {
	for _, tc := range []struct{ amount, dev, want string }{
		{"0.000000", "0.010000", "0.01 dev"},
		{"2.500000", "0.000000", "2.5"},
		{"1.000000", "0.003400", "1 + 0.0034 dev"},
		{"0.000000", "0.000000", "0"},
	} {
		if got := valueLabel(tc.amount, tc.dev); got != tc.want {
			t.Errorf("valueLabel(%s, %s) = %q, want %q", tc.amount, tc.dev, got, tc.want)
		}
	}
	c := toolChart([]ledger.Total{{Key: "risk-levels", AmountUSDC: "0.000000", DevAmountUSDC: "0.010000"}})
	if c.Bars[0].Value != "0.01 dev" || c.Bars[0].LabelX-6+toolValueW > c.Width {
		t.Fatalf("tool bar %+v in a chart %.0f wide", c.Bars[0], c.Width)
	}
}

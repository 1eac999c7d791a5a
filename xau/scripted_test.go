package xau

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Every adapter satisfies the port.
var (
	_ Terminal = (*Simulated)(nil)
	_ Terminal = (*Scripted)(nil)
	_ Terminal = Down{}
	_ Terminal = (*Switchable)(nil)
)

// scriptedBars returns n consecutive M5 bars starting at t0.
func scriptedBars(t0 time.Time, n int) []Bar {
	bars := make([]Bar, n)
	for i := range bars {
		bars[i] = mkBar(t0.Add(time.Duration(i)*5*time.Minute), "2650", "2651", "2649", "2650.5", int64(i))
	}
	return bars
}

func TestScripted(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 1, 10, 14, 0, 10, 0, time.UTC)
	s := NewScripted(func() time.Time { return now })
	q := Quote{Symbol: "XAUUSD", Bid: d("2650.10"), Ask: d("2650.30"), Last: d("2650.10"), Spread: d("0.20"), Time: now.Add(-10 * time.Second)}
	s.SetQuote(q)
	bars := scriptedBars(time.Date(2024, 1, 10, 13, 0, 0, 0, time.UTC), 12)
	s.SetBars("XAUUSD", M5, bars)
	bars[0].TickVolume = 999 // SetBars copied

	got, err := s.Quote(ctx, "XAUUSD")
	if err != nil || !got.Bid.Equal(q.Bid) || got.Source != SourceScripted || !got.Time.Equal(q.Time) {
		t.Fatalf("Quote = %+v, %v", got, err)
	}
	last3, err := s.Bars(ctx, "XAUUSD", M5, 3)
	if err != nil || len(last3) != 3 || last3[0].TickVolume != 9 || last3[2].TickVolume != 11 {
		t.Fatalf("Bars(3) = %+v, %v", last3, err)
	}
	all, err := s.Bars(ctx, "XAUUSD", M5, 500)
	if err != nil || len(all) != 12 || all[0].TickVolume != 0 {
		t.Fatalf("Bars(500) = %d bars (first volume %d), %v", len(all), all[0].TickVolume, err)
	}
	all[1].TickVolume = -5 // the caller's copy
	if again, _ := s.Bars(ctx, "XAUUSD", M5, 12); again[1].TickVolume != 1 {
		t.Fatal("Bars returned the fake's own slice")
	}
	// Shape checks only.
	if _, err := s.Bars(ctx, "XAUUSD", M5, 0); !errors.Is(err, ErrBadRequest) {
		t.Errorf("count 0: %v", err)
	}
	if _, err := s.Bars(ctx, "XAUUSD", "M3", 10); !errors.Is(err, ErrBadRequest) {
		t.Errorf("bad timeframe: %v", err)
	}
	if _, err := s.Quote(ctx, "EURUSD"); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("unknown quote symbol: %v", err)
	}
	if _, err := s.Bars(ctx, "EURUSD", M5, 10); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("unknown bars symbol: %v", err)
	}
	if _, err := s.Bars(ctx, "XAUUSD", H1, 10); !errors.Is(err, ErrUnavailable) {
		t.Errorf("known symbol, timeframe not set: %v", err)
	}
	h, err := s.Health(ctx)
	if err != nil || !h.Connected || h.Lag != 10*time.Second || h.Source != SourceScripted {
		t.Fatalf("Health = %+v, %v", h, err)
	}

	// Down and up again at run time.
	s.SetDown(true)
	if h, err := s.Health(ctx); h.Connected || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("down Health = %+v, %v", h, err)
	}
	if _, err := s.Quote(ctx, "XAUUSD"); !errors.Is(err, ErrUnavailable) || Reason(err) != "terminal disconnected" {
		t.Fatalf("down Quote: %v", err)
	}
	if _, err := s.Bars(ctx, "XAUUSD", M5, 3); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("down Bars: %v", err)
	}
	s.SetDown(false)
	if _, err := s.Quote(ctx, "XAUUSD"); err != nil {
		t.Fatalf("up again: %v", err)
	}

	// Injected failure with a healthy Health.
	boom := Unavailable("bars", "upstream sent inconsistent bars", nil)
	s.SetFailure(boom)
	if _, err := s.Bars(ctx, "XAUUSD", M5, 3); !errors.Is(err, boom) {
		t.Fatalf("failure: %v", err)
	}
	if _, err := s.Health(ctx); err != nil {
		t.Fatalf("Health during failure: %v", err)
	}
	s.SetFailure(nil)

	want := ScriptedCalls{Health: 3, Quote: 4, Bars: 9}
	if got := s.Calls(); got != want {
		t.Fatalf("Calls = %+v, want %+v", got, want)
	}
}

func TestDown(t *testing.T) {
	ctx := context.Background()
	var term Terminal = Down{}
	h, err := term.Health(ctx)
	if h.Connected || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	if _, err := term.Quote(ctx, "XAUUSD"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Quote: %v", err)
	}
	if _, err := term.Bars(ctx, "XAUUSD", M5, 10); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBadRequest) {
		t.Fatalf("Bars: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := term.Quote(cctx, "XAUUSD"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestSwitchable(t *testing.T) {
	ctx := context.Background()
	sw := NewSwitchable(newSim(t, 1, simWed))
	if sw.IsDown() {
		t.Fatal("starts down")
	}
	if _, err := sw.Quote(ctx, "XAUUSD"); err != nil {
		t.Fatal(err)
	}
	sw.SetDown(true)
	if h, err := sw.Health(ctx); h.Connected || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("down Health = %+v, %v", h, err)
	}
	if _, err := sw.Quote(ctx, "XAUUSD"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("down Quote: %v", err)
	}
	if _, err := sw.Bars(ctx, "XAUUSD", M5, 3); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("down Bars: %v", err)
	}
	sw.SetDown(false)
	h, err := sw.Health(ctx)
	if err != nil || !h.Connected || h.Source != SourceSimulated {
		t.Fatalf("up Health = %+v, %v", h, err)
	}
	if bars, err := sw.Bars(ctx, "XAUUSD", M5, 3); err != nil || len(bars) != 3 {
		t.Fatalf("up Bars: %d, %v", len(bars), err)
	}
}

package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// DefaultDays is the length of the default period: the last 30 days (UTC),
// today included.
const DefaultDays = 30

// ParsePeriod reads a period [from, to) given as dates (YYYY-MM-DD,
// midnight UTC) or RFC 3339 instants. An empty from means DefaultDays
// before to's day; an empty to means the start of tomorrow (UTC) after now.
// from must be before to.
func ParsePeriod(from, to string, now time.Time) (time.Time, time.Time, error) {
	var f, t time.Time
	var err error
	if strings.TrimSpace(to) == "" {
		y, m, d := now.UTC().Date()
		t = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	} else if t, err = parseInstant(to); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("to: %w", err)
	}
	if strings.TrimSpace(from) == "" {
		y, m, d := t.Add(-time.Nanosecond).UTC().Date()
		f = time.Date(y, m, d-(DefaultDays-1), 0, 0, 0, 0, time.UTC)
	} else if f, err = parseInstant(from); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("from: %w", err)
	}
	if !f.Before(t) {
		return time.Time{}, time.Time{}, fmt.Errorf("from (%s) must be before to (%s)", f.Format(time.RFC3339), t.Format(time.RFC3339))
	}
	return f, t, nil
}

func parseInstant(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(DayLayout, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a date (2006-01-02) nor an RFC 3339 instant (2006-01-02T15:04:05Z)", clip.Bytes(s, 40))
	}
	return t.UTC(), nil
}

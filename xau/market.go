package xau

import "time"

// WeekendClosed reports whether t falls in spot gold's weekend closure,
// from Friday 22:00 to Sunday 22:00 UTC, when no terminal receives ticks:
// the age of a last tick says then nothing of the terminal's health. (The
// simulated terminal keeps the same closure; holidays and the daily break
// are not counted.)
func WeekendClosed(t time.Time) bool {
	t = t.UTC()
	m := t.Hour()*60 + t.Minute()
	switch t.Weekday() {
	case time.Saturday:
		return true
	case time.Friday:
		return m >= 22*60
	case time.Sunday:
		return m < 22*60
	}
	return false
}

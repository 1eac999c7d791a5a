package svc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	// The tz database is embedded so that session times are right on hosts
	// without zoneinfo files (scratch containers, Windows).
	_ "time/tzdata"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// SessionHomeZone is the zone in which SessionState reports wall-clock
// times: the service's home, Europe/Vienna.
const SessionHomeZone = "Europe/Vienna"

// sessionMaxInput bounds the length of an accepted dateTime; a timestamp
// with nanoseconds and an offset has 35 characters.
const sessionMaxInput = 64

// sessionMinYear is the first year accepted. Vienna kept local mean time
// (UTC+01:05:21) until 1893; an offset with seconds has no RFC 3339 form,
// so earlier instants could not be reported faithfully.
const sessionMinYear = 1900

// sessionFormatsHelp names the accepted dateTime forms in error messages.
const sessionFormatsHelp = "use ISO 8601 with an offset: RFC 3339 (2025-03-31T09:15:00+02:00, …Z), +0200 or +02 offsets, " +
	"basic 20250331T071500Z, fractions with . or ,; YYYY-MM-DDTHH:MM[:SS] without offset is UTC, YYYY-MM-DD 00:00 UTC; years 1900–9999"

// SessionStateRequest is the input of SessionState.
type SessionStateRequest struct {
	// DateTime is the instant to evaluate; optional, empty means Now. See
	// SessionState for the accepted forms.
	DateTime string `json:"dateTime,omitempty"`
	// Now is the instant used when DateTime is empty; the zero Time means
	// time.Now(). It lets Go callers and tests pin the clock and is never
	// read from JSON.
	Now time.Time `json:"-"`
}

// SessionDefinition describes one trading session and its hours on the
// Vienna calendar date of the evaluated instant.
type SessionDefinition struct {
	// Name is the key of the session's flag in the response: london,
	// newYork or asia.
	Name string `json:"name"`
	// Zone is the session's home time zone (IANA name).
	Zone string `json:"zone"`
	// Open and Close are the session's wall-clock hours in its home zone,
	// "HH:MM"; the session is open on [Open, Close).
	Open  string `json:"open"`
	Close string `json:"close"`
	// Days names the trading days, in the home zone.
	Days string `json:"days"`
	// IsOpen reports whether the session is open at the evaluated instant
	// (the same value as the response's flag).
	IsOpen bool `json:"isOpen"`
	// TradingDay is false when the Vienna date of the instant is a Saturday
	// or Sunday in the session's home zone, so the session does not open.
	TradingDay bool `json:"tradingDay"`
	// OpenVienna and CloseVienna are the session's open and close on the
	// Vienna date of the instant, as RFC 3339 times in Vienna. They are given
	// on non-trading days too, as the hours the session would keep.
	OpenVienna  string `json:"openVienna"`
	CloseVienna string `json:"closeVienna"`
}

// SessionStateResponse is the output of SessionState.
type SessionStateResponse struct {
	// Timezone is always "Europe/Vienna".
	Timezone string `json:"timezone"`
	// London, NewYork and Asia report whether each session is open.
	London  bool `json:"london"`
	NewYork bool `json:"newYork"`
	Asia    bool `json:"asia"`
	// MinuteOfDay is the Vienna wall-clock minute, hour·60 + minute, 0–1439.
	MinuteOfDay int `json:"minuteOfDay"`
	// UTC is the evaluated instant in RFC 3339, UTC. (An instant given at
	// the very edge of the years 1900–9999 may fall in 1899 or 10000 here
	// and in Local; the year is then written with its digits as they are.)
	UTC string `json:"utc"`
	// Local is the same instant in RFC 3339 with Vienna's offset.
	Local string `json:"local"`
	// Weekday is the Vienna weekday ("Monday").
	Weekday string `json:"weekday"`
	// AssumedUTC is true when dateTime carried no offset and was read as UTC.
	AssumedUTC bool `json:"assumedUTC"`
	// Sessions are the definitions used, in the order london, newYork, asia.
	Sessions []SessionDefinition `json:"sessions"`
}

// sessionDef is one session: a name, a home zone and wall-clock hours.
type sessionDef struct {
	name              string
	zone              string
	openMin, closeMin int // minutes after local midnight
}

// sessionDefs returns the three sessions in response order.
func sessionDefs() [3]sessionDef {
	return [3]sessionDef{
		{name: "london", zone: "Europe/London", openMin: 8 * 60, closeMin: 16*60 + 30},
		{name: "newYork", zone: "America/New_York", openMin: 8 * 60, closeMin: 17 * 60},
		{name: "asia", zone: "Asia/Tokyo", openMin: 9 * 60, closeMin: 15 * 60},
	}
}

// sessionZones loads the home zone and the sessions' zones once. The
// locations are immutable and safe for concurrent use.
var sessionZones = sync.OnceValues(func() (map[string]*time.Location, error) {
	zones := map[string]*time.Location{}
	names := []string{SessionHomeZone}
	for _, d := range sessionDefs() {
		names = append(names, d.zone)
	}
	for _, name := range names {
		loc, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("load time zone %s: %w", name, err)
		}
		zones[name] = loc
	}
	return zones, nil
})

// SessionState reports which trading sessions are open at an instant, with
// the wall-clock minute in Europe/Vienna.
//
// Sessions are defined in their home zones and so follow each zone's own
// daylight-saving dates through the tz database (embedded in the binary):
//
//	london   08:00–16:30 Europe/London
//	newYork  08:00–17:00 America/New_York
//	asia     09:00–15:00 Asia/Tokyo
//
// A session is open on [open, close) of its home zone's wall clock, Monday
// to Friday in the home zone; it is closed on the home zone's Saturday and
// Sunday. Holidays are not modelled. Example: 09:15 Vienna on a weekday →
// london true, newYork false, asia false, minuteOfDay 555.
//
// dateTime accepts, after trimming surrounding spaces, the ISO 8601 forms
// of a calendar date and time of day that name an instant:
//   - the extended format with an offset, RFC 3339 and its ISO 8601
//     relatives: "2025-03-31T09:15:00+02:00", "…+0200", "…+02" or "…Z";
//     minutes without seconds ("2025-03-31T09:15Z") and fractional seconds
//     ("." or ",", truncated to nanoseconds) are accepted;
//   - the basic format with an offset: "20250331T071500Z",
//     "20250331T091500+0200", "20250331T0915+02", with fractional seconds
//     as above. Date and time are both basic or both extended; the offset
//     may take any of its forms;
//   - "YYYY-MM-DDTHH:MM" or "YYYY-MM-DDTHH:MM:SS[.fff]" without an offset,
//     read as UTC with assumedUTC true (the basic format needs an offset);
//   - a date "YYYY-MM-DD", read as 00:00:00 UTC with assumedUTC true. That
//     instant always falls on the same Vienna date, so the session hours in
//     the response are that date's.
//
// "t", "z" and a space separator are accepted too, and a space in place of
// the offset's "+" (what an unencoded "+" becomes in a URL query) is read
// as "+". Every field has exactly two digits (four for the year), an
// offset lies within ±23:59, hours run 00–23 (no 24:00) and seconds 00–59
// (no leap second). Week dates, ordinal dates and reduced precision (an
// hour alone) are not accepted.
//
// The year as written must lie in 1900–9999: the bounds apply to the
// instant given, in its own offset, so an instant near the edges may be
// reported in the year 1899 or 10000 in UTC or in Vienna. An empty
// dateTime means req.Now, or the current time when Now is zero. Any other
// input is invalid with field "dateTime" and rule "datetime".
func SessionState(ctx context.Context, req SessionStateRequest) (SessionStateResponse, error) {
	if err := ctx.Err(); err != nil {
		return SessionStateResponse{}, errorf(KindTimeout, err, "session_state: %v", err)
	}
	zones, err := sessionZones()
	if err != nil {
		return SessionStateResponse{}, errorf(KindInternal, err, "session_state: time zone data unavailable")
	}
	var t time.Time
	assumedUTC := false
	if req.DateTime == "" {
		t = req.Now
		if t.IsZero() {
			t = time.Now()
		}
	} else {
		t, assumedUTC, err = sessionParse(req.DateTime)
		if err != nil {
			return SessionStateResponse{}, InvalidField("dateTime", "datetime", "%v", err)
		}
	}
	return sessionAt(t, assumedUTC, zones), nil
}

// sessionAt evaluates the sessions at instant t.
func sessionAt(t time.Time, assumedUTC bool, zones map[string]*time.Location) SessionStateResponse {
	vienna := zones[SessionHomeZone]
	local := t.In(vienna)
	y, m, d := local.Date()
	tradingDay := sessionWeekday(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday())
	resp := SessionStateResponse{
		Timezone:    SessionHomeZone,
		MinuteOfDay: local.Hour()*60 + local.Minute(),
		UTC:         t.UTC().Format(time.RFC3339Nano),
		Local:       local.Format(time.RFC3339Nano),
		Weekday:     local.Weekday().String(),
		AssumedUTC:  assumedUTC,
	}
	for _, def := range sessionDefs() {
		home := zones[def.zone]
		open := sessionIsOpen(t.In(home), def)
		switch def.name {
		case "london":
			resp.London = open
		case "newYork":
			resp.NewYork = open
		case "asia":
			resp.Asia = open
		}
		openAt := time.Date(y, m, d, def.openMin/60, def.openMin%60, 0, 0, home)
		closeAt := time.Date(y, m, d, def.closeMin/60, def.closeMin%60, 0, 0, home)
		resp.Sessions = append(resp.Sessions, SessionDefinition{
			Name:        def.name,
			Zone:        def.zone,
			Open:        sessionClock(def.openMin),
			Close:       sessionClock(def.closeMin),
			Days:        "Monday–Friday",
			IsOpen:      open,
			TradingDay:  tradingDay,
			OpenVienna:  openAt.In(vienna).Format(time.RFC3339),
			CloseVienna: closeAt.In(vienna).Format(time.RFC3339),
		})
	}
	return resp
}

// sessionIsOpen reports whether def is open at home, a time in def's zone.
// The boundaries are whole minutes, so comparing the minute of the day is
// exact for [open, close).
func sessionIsOpen(home time.Time, def sessionDef) bool {
	if !sessionWeekday(home.Weekday()) {
		return false
	}
	m := home.Hour()*60 + home.Minute()
	return m >= def.openMin && m < def.closeMin
}

// sessionWeekday reports whether wd is Monday to Friday.
func sessionWeekday(wd time.Weekday) bool {
	return wd != time.Saturday && wd != time.Sunday
}

// sessionClock formats minutes after midnight as "HH:MM".
func sessionClock(m int) string {
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// sessionParse reads a dateTime in one of the forms SessionState accepts
// and reports whether it had no offset (and was read as UTC). Errors are
// client-safe: they quote at most a short prefix of s.
func sessionParse(s string) (time.Time, bool, error) {
	bad := func(why string) error {
		return fmt.Errorf("%q %s: %s", clip.Runes(s, 40), why, sessionFormatsHelp)
	}
	if len(s) > sessionMaxInput {
		return time.Time{}, false, bad(fmt.Sprintf("is longer than %d characters", sessionMaxInput))
	}
	f, why := sessionScan(strings.TrimSpace(s))
	if why != "" {
		return time.Time{}, false, bad(why)
	}
	// The year bounds apply to the date as written, in its own offset: an
	// instant near the edges may fall in 1899 or 10000 in UTC or Vienna.
	if f.year < sessionMinYear {
		return time.Time{}, false, bad(fmt.Sprintf("lies outside the years %d–9999", sessionMinYear))
	}
	if f.month < 1 || f.month > 12 || f.day < 1 || f.day > sessionDaysIn(f.year, f.month) {
		return time.Time{}, false, bad("names no calendar date")
	}
	if f.hour > 23 || f.min > 59 || f.sec > 59 {
		return time.Time{}, false, bad("names no time of day (hours 00–23, minutes and seconds 00–59)")
	}
	zone := time.UTC
	if f.hasOffset && f.offset != 0 {
		zone = time.FixedZone("", f.offset)
	}
	t := time.Date(f.year, time.Month(f.month), f.day, f.hour, f.min, f.sec, f.nsec, zone)
	return t, !f.hasOffset, nil
}

// sessionFields are the parts of a dateTime as written.
type sessionFields struct {
	year, month, day, hour, min, sec, nsec int
	// offset is the offset east of UTC in seconds; hasOffset says whether
	// one was given (Z counts).
	offset    int
	hasOffset bool
}

// sessionScan splits a trimmed dateTime into its fields, checking its shape
// strictly: ISO 8601 calendar date and time of day, both in extended
// (2025-03-31T07:15:00) or both in basic format (20250331T071500), two
// digits per field (four for the year), seconds and a fraction of them
// optional ('.' or ',', truncated to nanoseconds), then an offset: Z,
// ±hh:mm, ±hhmm or ±hh, within ±23:59 (a space in place of the '+', as an
// unencoded '+' arrives in a query string). "T", "t" or a space separates
// date and time. Only the extended format may leave out the offset (the
// time is then read as UTC) or the time (a date alone is 00:00 UTC).
// Value ranges (month, day, hour, ...) are left to the caller. It returns
// the reason when the shape is wrong.
func sessionScan(s string) (sessionFields, string) {
	const notTimestamp = "is not an ISO 8601 date-time"
	var f sessionFields
	i := 0
	num := func(n int) (int, bool) { // n digits at i
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		i += n
		return v, true
	}
	lit := func(c byte) bool {
		if i < len(s) && s[i] == c {
			i++
			return true
		}
		return false
	}
	var ok bool
	if f.year, ok = num(4); !ok {
		return f, notTimestamp
	}
	extended := lit('-')
	if f.month, ok = num(2); !ok {
		return f, notTimestamp
	}
	if extended && !lit('-') {
		return f, notTimestamp
	}
	if f.day, ok = num(2); !ok {
		return f, notTimestamp
	}
	if i == len(s) {
		if !extended {
			return f, "names no time and no offset (a basic-format date-time needs both: 20250331T071500Z)"
		}
		return f, ""
	}
	if c := s[i]; c != 'T' && c != 't' && c != ' ' {
		return f, notTimestamp
	}
	i++
	if f.hour, ok = num(2); !ok {
		return f, notTimestamp
	}
	if extended && !lit(':') {
		return f, notTimestamp
	}
	if f.min, ok = num(2); !ok {
		return f, notTimestamp
	}
	// Seconds: after ':' in the extended format, two more digits in the
	// basic one.
	hasSec := false
	if extended {
		hasSec = lit(':')
	} else {
		hasSec = i < len(s) && s[i] >= '0' && s[i] <= '9'
	}
	if hasSec {
		if f.sec, ok = num(2); !ok {
			return f, notTimestamp
		}
		if lit('.') || lit(',') {
			j := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if i-j < 9 {
					f.nsec = f.nsec*10 + int(s[i]-'0')
				}
				i++
			}
			if i == j {
				return f, notTimestamp
			}
			for k := i - j; k < 9; k++ {
				f.nsec *= 10
			}
		}
	}
	if i == len(s) {
		if !extended {
			return f, "has no offset (a basic-format date-time needs one: Z, ±hhmm or ±hh)"
		}
		return f, ""
	}
	f.hasOffset = true
	sign := 1
	switch s[i] {
	case 'Z', 'z':
		i++
		if i != len(s) {
			return f, notTimestamp
		}
		return f, ""
	case '+', ' ':
	case '-':
		sign = -1
	default:
		return f, notTimestamp
	}
	i++
	oh, ok := num(2)
	if !ok {
		return f, notTimestamp
	}
	om := 0
	if i < len(s) {
		lit(':')
		if om, ok = num(2); !ok {
			return f, notTimestamp
		}
	}
	if i != len(s) {
		return f, notTimestamp
	}
	if oh > 23 || om > 59 {
		return f, "has an offset outside ±23:59"
	}
	f.offset = sign * (oh*3600 + om*60)
	return f, ""
}

// sessionDaysIn returns the number of days of month m (1–12) of year y.
func sessionDaysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

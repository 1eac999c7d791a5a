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
const sessionFormatsHelp = "use RFC 3339 (2025-03-31T09:15:00+02:00 or 2025-03-31T07:15:00Z, " +
	"fractional seconds allowed), YYYY-MM-DDTHH:MM[:SS] without offset (read as UTC) " +
	"or YYYY-MM-DD (00:00 UTC)"

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
	// UTC is the evaluated instant in RFC 3339, UTC.
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
// dateTime accepts, after trimming surrounding spaces:
//   - RFC 3339 with an offset, "2025-03-31T09:15:00+02:00" or "…Z", with
//     optional fractional seconds ("." or ",", truncated to nanoseconds);
//     "t", "z" and a space separator are accepted too, minutes without
//     seconds ("2025-03-31T09:15Z") as well, and a space in place of the
//     offset's "+" (what an unencoded "+" becomes in a URL query) is read
//     as "+". Every field has exactly two digits (four for the year) and
//     an offset lies within ±23:59;
//   - "YYYY-MM-DDTHH:MM" or "YYYY-MM-DDTHH:MM:SS[.fff]" without an offset,
//     read as UTC with assumedUTC true;
//   - a date "YYYY-MM-DD", read as 00:00:00 UTC with assumedUTC true. That
//     instant always falls on the same Vienna date, so the session hours in
//     the response are that date's.
//
// The instant must lie in the years 1900–9999 (in UTC and in Vienna). An
// empty dateTime means req.Now, or the current time when Now is zero. Any
// other input is invalid with field "dateTime" and rule "datetime".
func SessionState(ctx context.Context, req SessionStateRequest) (SessionStateResponse, error) {
	if err := ctx.Err(); err != nil {
		return SessionStateResponse{}, errorf(KindTimeout, err, "session_state: %v", err)
	}
	zones, err := sessionZones()
	if err != nil {
		return SessionStateResponse{}, errorf(KindInternal, err, "session_state: time zone data unavailable")
	}
	vienna := zones[SessionHomeZone]

	var t time.Time
	assumedUTC := false
	if req.DateTime == "" {
		t = req.Now
		if t.IsZero() {
			t = time.Now()
		}
	} else {
		t, assumedUTC, err = sessionParse(req.DateTime, vienna)
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
func sessionParse(s string, vienna *time.Location) (time.Time, bool, error) {
	bad := func(why string) error {
		return fmt.Errorf("%q %s: %s", snippet(s, 40), why, sessionFormatsHelp)
	}
	if len(s) > sessionMaxInput {
		return time.Time{}, false, bad(fmt.Sprintf("is longer than %d characters", sessionMaxInput))
	}
	b := []byte(strings.TrimSpace(s))
	if len(b) > 10 && (b[10] == 't' || b[10] == ' ') {
		b[10] = 'T'
	}
	if n := len(b); n > 10 && b[n-1] == 'z' {
		b[n-1] = 'Z'
	}
	// "…T09:15:00 02:00": a query string's unencoded "+" arrived as a space.
	if n := len(b); n > 17 && b[10] == 'T' && b[n-6] == ' ' && sessionDigits(b[n-5:n-3]) &&
		b[n-3] == ':' && sessionDigits(b[n-2:]) {
		b[n-6] = '+'
	}
	in := string(b)

	layout, hasOffset, ok := sessionLayout(in)
	if !ok {
		return time.Time{}, false, bad("is not a valid timestamp")
	}
	var t time.Time
	var err error
	if hasOffset {
		t, err = time.Parse(layout, in)
	} else {
		t, err = time.ParseInLocation(layout, in, time.UTC)
	}
	if err != nil {
		// The shape was right, a value was not (February 30, hour 25).
		return time.Time{}, false, bad("is not a valid timestamp")
	}
	if y, ly := t.UTC().Year(), t.In(vienna).Year(); y < sessionMinYear || y > 9999 || ly < sessionMinYear || ly > 9999 {
		return time.Time{}, false, bad(fmt.Sprintf("lies outside the years %d–9999", sessionMinYear))
	}
	return t, !hasOffset, nil
}

// sessionLayout checks the shape of a normalised dateTime strictly (two
// digits per field, an offset of ±HH:MM within ±23:59, which time.Parse
// alone would not insist on) and returns the time.Parse layout for it and
// whether it carries an offset. Value ranges (month, day, hour, minute,
// second) are left to time.Parse.
func sessionLayout(s string) (layout string, hasOffset, ok bool) {
	digits := func(i, j int) bool { return j <= len(s) && sessionDigits([]byte(s[i:j])) }
	if len(s) < 10 || !digits(0, 4) || s[4] != '-' || !digits(5, 7) || s[7] != '-' || !digits(8, 10) {
		return "", false, false
	}
	if len(s) == 10 {
		return "2006-01-02", false, true
	}
	if len(s) < 16 || s[10] != 'T' || !digits(11, 13) || s[13] != ':' || !digits(14, 16) {
		return "", false, false
	}
	layout, i := "2006-01-02T15:04", 16
	if i < len(s) && s[i] == ':' {
		if !digits(17, 19) {
			return "", false, false
		}
		layout, i = "2006-01-02T15:04:05", 19
		if i < len(s) && (s[i] == '.' || s[i] == ',') { // fractional seconds: time.Parse reads them unasked
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				return "", false, false
			}
			i = j
		}
	}
	switch rest := s[i:]; {
	case rest == "":
		return layout, false, true
	case rest == "Z":
		return layout + "Z07:00", true, true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && digits(i+1, i+3) && rest[3] == ':' && digits(i+4, i+6):
		if rest[1:3] > "23" || rest[4:6] > "59" {
			return "", false, false
		}
		return layout + "Z07:00", true, true
	}
	return "", false, false
}

// sessionDigits reports whether b is all ASCII digits.
func sessionDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

package svc_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func sessionStateAt(t testing.TB, dateTime string) svc.SessionStateResponse {
	t.Helper()
	resp, err := svc.SessionState(context.Background(), svc.SessionStateRequest{DateTime: dateTime})
	if err != nil {
		t.Fatalf("SessionState(%q): %v", dateTime, err)
	}
	return resp
}

// sessionStateFlags renders the three flags as "L N A" with - for closed.
func sessionStateFlags(r svc.SessionStateResponse) string {
	f := func(b bool, c string) string {
		if b {
			return c
		}
		return "-"
	}
	return f(r.London, "L") + f(r.NewYork, "N") + f(r.Asia, "A")
}

// Expectations computed by hand from the zones' rules: the EU (Vienna,
// London) switches at 01:00 UTC on the last Sundays of March and October;
// the US (New York) at 02:00 local on the second Sunday of March and the
// first Sunday of November (first Sunday of April and last Sunday of
// October before 2007); Tokyo keeps UTC+9.
func TestSessionStateWallClock(t *testing.T) {
	cases := []struct {
		name, in   string
		flags      string
		minute     int
		utc, local string
		weekday    string
		assumedUTC bool
	}{
		{"published example: 09:15 Vienna on a weekday", "2025-03-31T09:15:00+02:00", "L--", 555,
			"2025-03-31T07:15:00Z", "2025-03-31T09:15:00+02:00", "Monday", false},
		{"09:15 Vienna in winter", "2025-01-15T09:15:00+01:00", "L--", 555,
			"2025-01-15T08:15:00Z", "2025-01-15T09:15:00+01:00", "Wednesday", false},
		// 2025-03-09..29: New York on EDT (UTC−4), Europe still on standard time,
		// so New York opens at 13:00 Vienna instead of 14:00.
		{"US on DST, Europe not yet: New York open at 13:30 Vienna", "2025-03-12T12:30:00Z", "LN-", 810,
			"2025-03-12T12:30:00Z", "2025-03-12T13:30:00+01:00", "Wednesday", false},
		{"a week earlier New York is still closed at 13:30", "2025-03-05T12:30:00Z", "L--", 810,
			"2025-03-05T12:30:00Z", "2025-03-05T13:30:00+01:00", "Wednesday", false},
		{"last Friday before the EU switch", "2025-03-28T13:00:00Z", "LN-", 840,
			"2025-03-28T13:00:00Z", "2025-03-28T14:00:00+01:00", "Friday", false},
		{"first Monday after the EU switch", "2025-03-31T13:00:00Z", "LN-", 900,
			"2025-03-31T13:00:00Z", "2025-03-31T15:00:00+02:00", "Monday", false},
		// 2025-10-27..31: Europe back on standard time, New York still on EDT.
		{"autumn gap week: New York open at 13:30 Vienna", "2025-10-29T12:30:00Z", "LN-", 810,
			"2025-10-29T12:30:00Z", "2025-10-29T13:30:00+01:00", "Wednesday", false},
		{"autumn gap week: New York closes at 22:00 Vienna", "2025-10-29T21:00:00Z", "---", 1320,
			"2025-10-29T21:00:00Z", "2025-10-29T22:00:00+01:00", "Wednesday", false},
		{"autumn gap week: one second before the close", "2025-10-29T20:59:59Z", "-N-", 1319,
			"2025-10-29T20:59:59Z", "2025-10-29T21:59:59+01:00", "Wednesday", false},
		{"after the US switch New York is closed at 13:30", "2025-11-05T12:30:00Z", "L--", 810,
			"2025-11-05T12:30:00Z", "2025-11-05T13:30:00+01:00", "Wednesday", false},
		{"London open until 16:29:59 local", "2025-07-01T15:29:59Z", "LN-", 1049,
			"2025-07-01T15:29:59Z", "2025-07-01T17:29:59+02:00", "Tuesday", false},
		{"London closed at 16:30 local", "2025-07-01T15:30:00Z", "-N-", 1050,
			"2025-07-01T15:30:00Z", "2025-07-01T17:30:00+02:00", "Tuesday", false},
		{"London opens at 08:00 local", "2025-07-01T07:00:00Z", "L--", 540,
			"2025-07-01T07:00:00Z", "2025-07-01T09:00:00+02:00", "Tuesday", false},
		{"Asia opens at 09:00 Tokyo = 02:00 Vienna in summer", "2025-07-01T00:00:00Z", "--A", 120,
			"2025-07-01T00:00:00Z", "2025-07-01T02:00:00+02:00", "Tuesday", false},
		{"Asia open until 14:59:59 Tokyo", "2025-07-01T05:59:59Z", "--A", 479,
			"2025-07-01T05:59:59Z", "2025-07-01T07:59:59+02:00", "Tuesday", false},
		{"Asia closed at 15:00 Tokyo", "2025-07-01T06:00:00Z", "---", 480,
			"2025-07-01T06:00:00Z", "2025-07-01T08:00:00+02:00", "Tuesday", false},
		{"Asia at 01:30 Vienna in winter", "2025-01-15T00:30:00Z", "--A", 90,
			"2025-01-15T00:30:00Z", "2025-01-15T01:30:00+01:00", "Wednesday", false},
		{"Saturday: London hours but closed", "2025-03-29T10:00:00Z", "---", 660,
			"2025-03-29T10:00:00Z", "2025-03-29T11:00:00+01:00", "Saturday", false},
		{"Saturday in Tokyo: Asia hours but closed", "2025-03-29T00:30:00Z", "---", 90,
			"2025-03-29T00:30:00Z", "2025-03-29T01:30:00+01:00", "Saturday", false},
		{"Sunday afternoon: all closed", "2025-03-30T13:00:00Z", "---", 900,
			"2025-03-30T13:00:00Z", "2025-03-30T15:00:00+02:00", "Sunday", false},
		{"Monday 00:30 Vienna: New York's Sunday, Tokyo before the open", "2025-03-30T22:30:00Z", "---", 30,
			"2025-03-30T22:30:00Z", "2025-03-31T00:30:00+02:00", "Monday", false},
		{"Monday 02:30 Vienna: Tokyo's Monday session", "2025-03-31T00:30:00Z", "--A", 150,
			"2025-03-31T00:30:00Z", "2025-03-31T02:30:00+02:00", "Monday", false},
		{"spring forward: last minute of CET", "2025-03-30T00:59:59Z", "---", 119,
			"2025-03-30T00:59:59Z", "2025-03-30T01:59:59+01:00", "Sunday", false},
		{"spring forward: 02:00 CET becomes 03:00 CEST", "2025-03-30T01:00:00Z", "---", 180,
			"2025-03-30T01:00:00Z", "2025-03-30T03:00:00+02:00", "Sunday", false},
		{"fall back: first 02:30", "2025-10-26T00:30:00Z", "---", 150,
			"2025-10-26T00:30:00Z", "2025-10-26T02:30:00+02:00", "Sunday", false},
		{"fall back: second 02:30", "2025-10-26T01:30:00Z", "---", 150,
			"2025-10-26T01:30:00Z", "2025-10-26T02:30:00+01:00", "Sunday", false},
		// 2006-03-26..04-01: Europe on summer time, the US not yet (old rule):
		// New York 08:00–17:00 EST is 15:00–24:00 Vienna.
		{"2006: EU summer, US winter: New York open at 23:30 Vienna", "2006-03-29T21:30:00Z", "-N-", 1410,
			"2006-03-29T21:30:00Z", "2006-03-29T23:30:00+02:00", "Wednesday", false},
		{"2006: New York closed at 14:30 Vienna", "2006-03-29T12:30:00Z", "L--", 870,
			"2006-03-29T12:30:00Z", "2006-03-29T14:30:00+02:00", "Wednesday", false},
		{"no offset is read as UTC", "2025-03-31T07:15:00", "L--", 555,
			"2025-03-31T07:15:00Z", "2025-03-31T09:15:00+02:00", "Monday", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sessionStateAt(t, c.in)
			if got := sessionStateFlags(r); got != c.flags {
				t.Errorf("flags %s, want %s", got, c.flags)
			}
			if r.MinuteOfDay != c.minute || r.UTC != c.utc || r.Local != c.local || r.Weekday != c.weekday ||
				r.AssumedUTC != c.assumedUTC || r.Timezone != "Europe/Vienna" {
				t.Errorf("got minute %d utc %s local %s %s assumed %v tz %s; want %d %s %s %s %v",
					r.MinuteOfDay, r.UTC, r.Local, r.Weekday, r.AssumedUTC, r.Timezone,
					c.minute, c.utc, c.local, c.weekday, c.assumedUTC)
			}
		})
	}
}

func TestSessionStateDefinitionsInVienna(t *testing.T) {
	cases := []struct {
		in      string
		windows []string // open–close in Vienna per session, london, newYork, asia
		trading bool
	}{
		{"2025-03-12T12:00:00Z", []string{
			"2025-03-12T09:00:00+01:00 2025-03-12T17:30:00+01:00",
			"2025-03-12T13:00:00+01:00 2025-03-12T22:00:00+01:00",
			"2025-03-12T01:00:00+01:00 2025-03-12T07:00:00+01:00"}, true},
		{"2025-03-31T12:00:00Z", []string{
			"2025-03-31T09:00:00+02:00 2025-03-31T17:30:00+02:00",
			"2025-03-31T14:00:00+02:00 2025-03-31T23:00:00+02:00",
			"2025-03-31T02:00:00+02:00 2025-03-31T08:00:00+02:00"}, true},
		{"2025-10-29T12:00:00Z", []string{
			"2025-10-29T09:00:00+01:00 2025-10-29T17:30:00+01:00",
			"2025-10-29T13:00:00+01:00 2025-10-29T22:00:00+01:00",
			"2025-10-29T01:00:00+01:00 2025-10-29T07:00:00+01:00"}, true},
		// New York's close falls on the next Vienna day.
		{"2006-03-29T12:00:00Z", []string{
			"2006-03-29T09:00:00+02:00 2006-03-29T17:30:00+02:00",
			"2006-03-29T15:00:00+02:00 2006-03-30T00:00:00+02:00",
			"2006-03-29T02:00:00+02:00 2006-03-29T08:00:00+02:00"}, true},
		// The day of the switch: the definitions follow each zone's date.
		{"2025-03-30T12:00:00Z", []string{
			"2025-03-30T09:00:00+02:00 2025-03-30T17:30:00+02:00",
			"2025-03-30T14:00:00+02:00 2025-03-30T23:00:00+02:00",
			// Tokyo opens at 00:00 UTC, an hour before Vienna switches at 01:00 UTC.
			"2025-03-30T01:00:00+01:00 2025-03-30T08:00:00+02:00"}, false},
	}
	wantDefs := []struct{ name, zone, open, close string }{
		{"london", "Europe/London", "08:00", "16:30"},
		{"newYork", "America/New_York", "08:00", "17:00"},
		{"asia", "Asia/Tokyo", "09:00", "15:00"},
	}
	for _, c := range cases {
		r := sessionStateAt(t, c.in)
		if len(r.Sessions) != 3 {
			t.Fatalf("%s: %d sessions", c.in, len(r.Sessions))
		}
		flags := []bool{r.London, r.NewYork, r.Asia}
		for i, s := range r.Sessions {
			w := wantDefs[i]
			if s.Name != w.name || s.Zone != w.zone || s.Open != w.open || s.Close != w.close || s.Days != "Monday–Friday" {
				t.Errorf("%s: session %d is %+v, want %+v", c.in, i, s, w)
			}
			if got := s.OpenVienna + " " + s.CloseVienna; got != c.windows[i] {
				t.Errorf("%s: %s window %s, want %s", c.in, s.Name, got, c.windows[i])
			}
			if s.TradingDay != c.trading || s.IsOpen != flags[i] {
				t.Errorf("%s: %s tradingDay %v isOpen %v, want %v %v", c.in, s.Name, s.TradingDay, s.IsOpen, c.trading, flags[i])
			}
		}
	}
}

func TestSessionStateAcceptedForms(t *testing.T) {
	cases := []struct {
		in, utc string
		assumed bool
	}{
		{"2025-03-31T07:15:00Z", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T09:15:00+02:00", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T03:15:00-04:00", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T07:15:00.123456789Z", "2025-03-31T07:15:00.123456789Z", false},
		{"2025-03-31T07:15:00.5+00:00", "2025-03-31T07:15:00.5Z", false},
		{"2025-03-31T07:15:00,25-00:00", "2025-03-31T07:15:00.25Z", false},
		{"2025-03-31T07:15:00.1234567891234Z", "2025-03-31T07:15:00.123456789Z", false}, // beyond ns: truncated
		{"2025-03-31T20:45:00+23:59", "2025-03-30T20:46:00Z", false},
		{"2025-03-31T07:15Z", "2025-03-31T07:15:00Z", false},
		{"2025-03-31t07:15:00z", "2025-03-31T07:15:00Z", false},
		{"2025-03-31 07:15:00Z", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T09:15:00 02:00", "2025-03-31T07:15:00Z", false}, // "+" decoded as a space
		{"  2025-03-31T07:15:00Z ", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T07:15:00", "2025-03-31T07:15:00Z", true},
		{"2025-03-31T07:15:00.25", "2025-03-31T07:15:00.25Z", true},
		{"2025-03-31T07:15", "2025-03-31T07:15:00Z", true},
		{"2025-03-31 07:15", "2025-03-31T07:15:00Z", true},
		{"2025-03-31", "2025-03-31T00:00:00Z", true},
		{"1900-01-01T00:00:00Z", "1900-01-01T00:00:00Z", false},
		{"9999-12-31T22:59:59.999999999Z", "9999-12-31T22:59:59.999999999Z", false},
		// ISO 8601 offsets without a colon or without minutes.
		{"2025-03-31T09:15:00+0200", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T09:15:00+02", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T01:45:00-0530", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T09:15+02", "2025-03-31T07:15:00Z", false},
		{"2025-03-31T09:15:00 0200", "2025-03-31T07:15:00Z", false}, // "+" decoded as a space
		{"2025-03-31T09:15:00 02", "2025-03-31T07:15:00Z", false},
		// The basic format, with an offset in any form.
		{"20250331T071500Z", "2025-03-31T07:15:00Z", false},
		{"20250331T091500+0200", "2025-03-31T07:15:00Z", false},
		{"20250331T091500+02:00", "2025-03-31T07:15:00Z", false},
		{"20250331T0915+02", "2025-03-31T07:15:00Z", false},
		{"20250331t071500,5z", "2025-03-31T07:15:00.5Z", false},
		{"20250331T071500.123456789-00", "2025-03-31T07:15:00.123456789Z", false},
		// The year bounds apply to the instant as given: Vienna's or UTC's
		// year may differ.
		{"1900-01-01T00:30:00+01:00", "1899-12-31T23:30:00Z", false},
		{"9999-12-31T23:30:00Z", "9999-12-31T23:30:00Z", false},
		{"9999-12-31T23:30:00-05:00", "10000-01-01T04:30:00Z", false},
	}
	for _, c := range cases {
		r := sessionStateAt(t, c.in)
		if r.UTC != c.utc || r.AssumedUTC != c.assumed {
			t.Errorf("%q: utc %s assumed %v, want %s %v", c.in, r.UTC, r.AssumedUTC, c.utc, c.assumed)
		}
	}
	// A date reads as 00:00 UTC, which is the same Vienna date.
	if r := sessionStateAt(t, "2025-03-31"); r.Local != "2025-03-31T02:00:00+02:00" || r.MinuteOfDay != 120 ||
		r.Sessions[0].OpenVienna != "2025-03-31T09:00:00+02:00" {
		t.Errorf("date-only: %+v", r)
	}
}

func TestSessionStateErrors(t *testing.T) {
	for _, in := range []string{
		"yesterday",
		"   ",
		"2025-02-30T10:00:00Z",      // no such day
		"2025-03-31T25:00:00Z",      // no such hour
		"2025-03-31T24:00:00Z",      // end-of-day 24:00 is not accepted
		"2025-03-31T07:15:00+25:00", // offset out of range
		"2025-03-31T07:15:60Z",      // leap seconds are not accepted
		"20250331T071500",           // basic format without an offset
		"20250331",                  // basic date alone
		"2025-03-31T0715Z",          // extended date, basic time
		"20250331T07:15:00Z",        // basic date, extended time
		"2025-03-31T07:15:00+2",     // one-digit offset
		"2025-03-31T07:15:00+02:0",
		"2025-03-31T07:15:00+02:",
		"2025-03-31T07:15:00+020",
		"2025-03-31T07:15.5Z",  // fraction of a minute
		"2025-W14-1T07:15:00Z", // week date
		"2025-090T07:15:00Z",   // ordinal date
		"20250229T071500Z",     // no such day
		"2025-3-31T07:15:00Z",
		"2025-03-31T7:15:00Z",       // one-digit hour
		"2025-03-31T07:15:00.Z",     // fraction without digits
		"2025-03-31T07:15:00+24:00", // offset hour beyond 23
		"2025-03-31T07:15:00+01:60", // offset minute beyond 59
		"2025-03-31T07Z",
		"20250331T07Z",
		"2025-03-31T",
		"1743405300",
		"1899-12-31T12:00:00Z",      // before 1900
		"1899-12-31T23:30:00-01:00", // 1900 in UTC, but written in 1899
		"0000-01-01T00:00:00Z",
		"10000-01-01T00:00:00Z",
		"2025-03-31T07:15:00Z trailing",
		strings.Repeat("2025-03-31T07:15:00Z", 50),
	} {
		_, err := svc.SessionState(context.Background(), svc.SessionStateRequest{DateTime: in})
		calcWantField(t, err, "dateTime", "datetime")
		var e *svc.Error
		errors.As(err, &e)
		msg := e.Fields[0].Message
		if !strings.Contains(msg, "RFC 3339") || !strings.Contains(msg, "YYYY-MM-DD") {
			t.Errorf("%q: message %q does not name the accepted formats", in, msg)
		}
		if len(msg) > 400 {
			t.Errorf("%q: message of %d bytes echoes too much input", in, len(msg))
		}
	}
}

func TestSessionStateNow(t *testing.T) {
	now := time.Date(2025, 3, 31, 7, 15, 0, 0, time.UTC)
	r, err := svc.SessionState(context.Background(), svc.SessionStateRequest{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if r.MinuteOfDay != 555 || !r.London || r.AssumedUTC || r.UTC != "2025-03-31T07:15:00Z" {
		t.Errorf("pinned Now: %+v", r)
	}
	// DateTime wins over Now.
	r, err = svc.SessionState(context.Background(), svc.SessionStateRequest{DateTime: "2025-07-01T00:00:00Z", Now: now})
	if err != nil || r.UTC != "2025-07-01T00:00:00Z" {
		t.Errorf("DateTime with Now: %+v, %v", r, err)
	}
	// Zero Now is the current time.
	before := time.Now()
	r, err = svc.SessionState(context.Background(), svc.SessionStateRequest{})
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	got, err := time.Parse(time.RFC3339Nano, r.UTC)
	if err != nil || got.Before(before.Truncate(time.Second)) || got.After(after) {
		t.Errorf("clock: utc %s not between %s and %s (%v)", r.UTC, before, after, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.SessionState(ctx, svc.SessionStateRequest{}); svc.KindOf(err) != svc.KindTimeout {
		t.Errorf("cancelled context: %v", err)
	}
}

// sessionStateInstant is the instant a generated request stands for, as the
// response reports it.
func sessionStateInstant(r svc.SessionStateResponse) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, r.UTC)
	return t, err == nil
}

func TestSessionStateProperties(t *testing.T) {
	ctx := context.Background()
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	vienna := zone("Europe/Vienna")
	homes := []*time.Location{zone("Europe/London"), zone("America/New_York"), zone("Asia/Tokyo")}
	props := gopter.NewProperties(calcParams(500))

	props.Property("minuteOfDay is the Vienna wall clock, in [0, 1439]", prop.ForAll(
		func(req svc.SessionStateRequest) bool {
			r, err := svc.SessionState(ctx, req)
			if err != nil {
				return false
			}
			at, ok := sessionStateInstant(r)
			if !ok {
				return false
			}
			if req.DateTime == "" && !at.Equal(req.Now) {
				return false
			}
			l := at.In(vienna)
			return r.MinuteOfDay >= 0 && r.MinuteOfDay <= 1439 && r.MinuteOfDay == l.Hour()*60+l.Minute() &&
				r.Local == l.Format(time.RFC3339Nano) && r.Weekday == l.Weekday().String() &&
				at.Year() >= 2000 && at.Year() <= 2100
		}, svctest.SessionStateRequest()))

	props.Property("sessions are closed on their home zone's weekend", prop.ForAll(
		func(req svc.SessionStateRequest) bool {
			r, err := svc.SessionState(ctx, req)
			at, ok := sessionStateInstant(r)
			if err != nil || !ok {
				return false
			}
			for i, open := range []bool{r.London, r.NewYork, r.Asia} {
				wd := at.In(homes[i]).Weekday()
				if open && (wd == time.Saturday || wd == time.Sunday) {
					return false
				}
			}
			return true
		}, svctest.SessionStateRequest()))

	props.Property("a flag is set iff the instant lies in that day's Vienna window on a trading day", prop.ForAll(
		func(req svc.SessionStateRequest) bool {
			r, err := svc.SessionState(ctx, req)
			at, ok := sessionStateInstant(r)
			if err != nil || !ok || len(r.Sessions) != 3 {
				return false
			}
			for i, open := range []bool{r.London, r.NewYork, r.Asia} {
				s := r.Sessions[i]
				o, err1 := time.Parse(time.RFC3339, s.OpenVienna)
				c, err2 := time.Parse(time.RFC3339, s.CloseVienna)
				if err1 != nil || err2 != nil {
					return false
				}
				in := s.TradingDay && !at.Before(o) && at.Before(c)
				// Cross-check with the home zone's wall clock.
				h := at.In(homes[i])
				m := h.Hour()*60 + h.Minute()
				openM := map[int]int{0: 480, 1: 480, 2: 540}[i]
				closeM := map[int]int{0: 990, 1: 1020, 2: 900}[i]
				home := h.Weekday() != time.Saturday && h.Weekday() != time.Sunday && m >= openM && m < closeM
				if open != in || open != home || open != s.IsOpen {
					return false
				}
			}
			return true
		}, svctest.SessionStateRequest()))

	props.Property("the normalised instant reads back to the same state", prop.ForAll(
		func(req svc.SessionStateRequest) bool {
			a, err1 := svc.SessionState(ctx, req)
			b, err2 := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: a.UTC})
			c, err3 := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: a.Local})
			if err1 != nil || err2 != nil || err3 != nil || b.AssumedUTC || c.AssumedUTC {
				return false
			}
			b.AssumedUTC, c.AssumedUTC = a.AssumedUTC, a.AssumedUTC
			return calcJSON(t, a) == calcJSON(t, b) && calcJSON(t, a) == calcJSON(t, c)
		}, svctest.SessionStateRequest()))

	props.TestingRun(t)
}

// FuzzSessionStateDateTime checks that no dateTime makes SessionState
// panic, that a rejected one yields a bounded dateTime/datetime error, that
// an accepted one normalises stably (formatting the instant and reading it
// back gives the same instant and the same state), and that every RFC 3339
// timestamp the standard library reads (years 1900–9999) is accepted as
// the same instant.
func FuzzSessionStateDateTime(f *testing.F) {
	for _, s := range []string{
		"2025-03-31T09:15:00+02:00", "2025-03-31T07:15:00Z", "2025-03-31T07:15:00.123456789Z",
		"2025-03-31T07:15:00", "2025-03-31T07:15", "2025-03-31", "2025-03-31 07:15:00 02:00",
		"2025-10-26T02:30:00+01:00", "1900-01-01T00:00:00Z", "9999-12-31T00:00:00Z", "x",
		"2025-03-31T09:15:00+0200", "2025-03-31T09:15:00+02", "20250331T071500Z", "20250331T091500,25+0200",
		"20250331T0915+02:00", "9999-12-31T23:59:59-23:59", "1900-01-01T00:00:00+23:59",
	} {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string) {
		r, err := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: s, Now: time.Unix(0, 0)})
		if s == "" {
			return
		}
		if std, e := time.Parse(time.RFC3339Nano, s); e == nil && std.Year() >= 1900 && std.Year() <= 9999 &&
			len(s) <= 64 && sessionRFC3339.MatchString(s) {
			if err != nil {
				t.Fatalf("%q: RFC 3339 refused: %v", s, err)
			}
			if r.UTC != std.UTC().Format(time.RFC3339Nano) {
				t.Fatalf("%q: instant %s, the standard library reads %s", s, r.UTC, std.UTC().Format(time.RFC3339Nano))
			}
		}
		if err != nil {
			var e *svc.Error
			if !errors.As(err, &e) || e.Kind != svc.KindInvalid || len(e.Fields) != 1 ||
				e.Fields[0].Field != "dateTime" || e.Fields[0].Rule != "datetime" {
				t.Fatalf("%q: unexpected error %#v", s, err)
			}
			if len(e.Fields[0].Message) > 600 {
				t.Fatalf("%q: message of %d bytes", s, len(e.Fields[0].Message))
			}
			return
		}
		if r.MinuteOfDay < 0 || r.MinuteOfDay > 1439 || len(r.Sessions) != 3 {
			t.Fatalf("%q: bad response %+v", s, r)
		}
		for _, again := range []string{r.UTC, r.Local} {
			if y := again[:strings.IndexByte(again, '-')]; y < "1900" || len(y) != 4 {
				continue // an instant at the edges, reported in 1899 or 10000
			}
			r2, err := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: again})
			if err != nil {
				t.Fatalf("%q: normalised %q rejected: %v", s, again, err)
			}
			if r2.UTC != r.UTC || r2.Local != r.Local || r2.MinuteOfDay != r.MinuteOfDay ||
				sessionStateFlags(r2) != sessionStateFlags(r) || r2.AssumedUTC {
				t.Fatalf("%q: unstable: %+v then %+v", s, r, r2)
			}
		}
	})
}

// sessionRFC3339 is the shape of an RFC 3339 date-time with an offset
// within ±23:59 (the standard library's parser is laxer: one-digit hours,
// offsets of +24:00 or +00:60).
var sessionRFC3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$`)

// sessionStamp is a date-time as written: its fields and its offset.
type sessionStamp struct {
	Year, Month, Day, Hour, Min, Sec int
	Frac                             string // digits of the fraction, "" for none
	OffsetMin                        int    // east of UTC, |offset| ≤ 23:59
}

// genSessionStamp generates stamps over the whole accepted range: years
// 1900–9999, every day of the month, offsets within ±23:59 (a third of
// them whole hours, a few zero).
func genSessionStamp() gopter.Gen {
	return gopter.CombineGens(
		gen.IntRange(1900, 9999), gen.IntRange(1, 12), gen.IntRange(1, 31),
		gen.IntRange(0, 23), gen.IntRange(0, 59), gen.IntRange(0, 59),
		gen.IntRange(0, 12), gen.Int64Range(0, 999999999999), gen.IntRange(-1439, 1439), gen.IntRange(0, 5),
	).Map(func(v []any) sessionStamp {
		st := sessionStamp{Year: v[0].(int), Month: v[1].(int), Hour: v[3].(int), Min: v[4].(int), Sec: v[5].(int)}
		st.Day = min(v[2].(int), time.Date(st.Year, time.Month(st.Month)+1, 0, 0, 0, 0, 0, time.UTC).Day())
		if n := v[6].(int); n > 0 {
			st.Frac = fmt.Sprintf("%012d", v[7].(int64))[:n]
		}
		st.OffsetMin = v[8].(int)
		switch v[9].(int) {
		case 0:
			st.OffsetMin = 0
		case 1, 2:
			st.OffsetMin -= st.OffsetMin % 60
		}
		return st
	})
}

// offsets renders the stamp's offset in each ISO 8601 form it has.
func (st sessionStamp) offsets() []string {
	sign, m := "+", st.OffsetMin
	if m < 0 {
		sign, m = "-", -m
	}
	out := []string{fmt.Sprintf("%s%02d:%02d", sign, m/60, m%60), fmt.Sprintf("%s%02d%02d", sign, m/60, m%60)}
	if m%60 == 0 {
		out = append(out, fmt.Sprintf("%s%02d", sign, m/60))
	}
	if m == 0 {
		out = append(out, "Z", "z", "-00:00")
	}
	return out
}

// rfc3339 renders the stamp in RFC 3339.
func (st sessionStamp) rfc3339() string {
	return st.extended("T", ".") + st.offsets()[0]
}

// extended and basic render the date and time in the two ISO 8601
// formats, with sep between them and dec before the fraction.
func (st sessionStamp) extended(sep, dec string) string {
	s := fmt.Sprintf("%04d-%02d-%02d%s%02d:%02d:%02d", st.Year, st.Month, st.Day, sep, st.Hour, st.Min, st.Sec)
	if st.Frac != "" {
		s += dec + st.Frac
	}
	return s
}

func (st sessionStamp) basic(sep, dec string) string {
	s := fmt.Sprintf("%04d%02d%02d%s%02d%02d%02d", st.Year, st.Month, st.Day, sep, st.Hour, st.Min, st.Sec)
	if st.Frac != "" {
		s += dec + st.Frac
	}
	return s
}

// forms renders the stamp in every accepted form that names its instant.
func (st sessionStamp) forms() []string {
	var out []string
	for _, off := range st.offsets() {
		for _, sep := range []string{"T", "t", " "} {
			for _, dec := range []string{".", ","} {
				out = append(out, st.extended(sep, dec)+off, st.basic(sep, dec)+off)
			}
		}
		if strings.HasPrefix(off, "+") { // an unencoded "+" in a query string
			out = append(out, st.extended("T", ".")+" "+off[1:], st.basic("T", ".")+" "+off[1:])
		}
	}
	if st.Sec == 0 && st.Frac == "" { // minutes without seconds
		out = append(out, fmt.Sprintf("%04d-%02d-%02dT%02d:%02d%s", st.Year, st.Month, st.Day, st.Hour, st.Min, st.offsets()[0]),
			fmt.Sprintf("%04d%02d%02dT%02d%02d%s", st.Year, st.Month, st.Day, st.Hour, st.Min, st.offsets()[1]))
	}
	return out
}

// TestSessionStateISO8601Forms: every accepted form of a date-time names
// the same instant as its RFC 3339 equivalent, and that instant is the
// one the fields and the offset describe, over the whole range of years
// (the bounds apply to the date as written, whatever UTC's or Vienna's
// year is).
func TestSessionStateISO8601Forms(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(300))
	props.Property("every form reads as its RFC 3339 equivalent", prop.ForAll(
		func(st sessionStamp) string {
			want, err := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: st.rfc3339()})
			if err != nil {
				return fmt.Sprintf("%s: %v", st.rfc3339(), err)
			}
			ns := 0
			if st.Frac != "" {
				ns, _ = strconv.Atoi((st.Frac + "000000000")[:9])
			}
			at := time.Date(st.Year, time.Month(st.Month), st.Day, st.Hour, st.Min, st.Sec, ns, time.FixedZone("", st.OffsetMin*60))
			if want.UTC != at.UTC().Format(time.RFC3339Nano) || want.AssumedUTC {
				return fmt.Sprintf("%s: utc %s, want %s", st.rfc3339(), want.UTC, at.UTC().Format(time.RFC3339Nano))
			}
			for _, form := range st.forms() {
				got, err := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: form})
				if err != nil {
					return fmt.Sprintf("%s: %v", form, err)
				}
				if calcJSON(t, got) != calcJSON(t, want) {
					return fmt.Sprintf("%s: %s, want %s", form, calcJSON(t, got), calcJSON(t, want))
				}
			}
			return ""
		}, genSessionStamp()))
	props.TestingRun(t)
}

func TestSessionStateConcurrentUse(t *testing.T) {
	done := make(chan string, 8)
	for i := range 8 {
		go func() {
			r, err := svc.SessionState(context.Background(), svc.SessionStateRequest{
				Now: time.Date(2025, 3, 31, 7, 15, i, 0, time.UTC),
			})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- sessionStateFlags(r)
		}()
	}
	for range 8 {
		if got := <-done; got != "L--" {
			t.Errorf("got %s", got)
		}
	}
}

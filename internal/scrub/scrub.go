// Package scrub keeps credentials out of what a program prints: it
// records the credential values of a configuration (plain values, URLs,
// headers, database URLs) and masks them in text, errors and writes.
package scrub

import (
	"io"
	"net/url"
	"sort"
	"strings"
)

// Mark replaces a credential in what is printed.
const Mark = "xxxxx"

// minSecretLen is the length from which a credential value is masked in
// every output line: shorter values (a one-letter password) are too
// common as ordinary words to be replaced everywhere, and are masked only
// where they are known to be (DisplayDSN).
const minSecretLen = 4

// Secrets is the set of credential values of a configuration. The zero
// value is empty and ready to use; a Secrets is filled before it is shared.
type Secrets struct {
	values []string // longest first, so that a secret containing another is masked whole
}

// Add records the credential values of vs (empty and short ones are
// skipped).
func (s *Secrets) Add(vs ...string) {
	for _, v := range vs {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen {
			continue
		}
		s.values = append(s.values, v)
		// A value percent-encoded in a URL may be printed decoded, and
		// the other way round.
		if d, err := url.QueryUnescape(v); err == nil && d != v && len(d) >= minSecretLen {
			s.values = append(s.values, d)
		}
		if e := url.QueryEscape(v); e != v {
			s.values = append(s.values, e)
		}
	}
	sort.Slice(s.values, func(i, j int) bool { return len(s.values[i]) > len(s.values[j]) })
}

// minQueryTokenLen is the length from which a query value of a private
// URL is taken for a credential whatever its parameter's name
// ("?network=base" is not one, "?k=9f2c…" is).
const minQueryTokenLen = 12

// AddURL records the credentials a URL may hold: its user name, password,
// the values of its credential-like query parameters (see secretParam)
// and any long query value. An unparsable URL is recorded whole.
func (s *Secrets) AddURL(raw string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		s.Add(raw)
		return
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		s.Add(u.User.Username(), pw, u.User.String())
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			if secretParam(k) || len(v) >= minQueryTokenLen {
				s.Add(v)
			}
		}
	}
}

// AddPrivateURL records a URL that is never published (a JSON-RPC
// endpoint): what AddURL records, every long path segment, where hosted
// RPC providers put the API key ("/v2/9f2c…"), and every long host label
// with a digit in it, where some put it instead ("9f2c….rpc.example"): a
// resolver's or dialer's error names the host without the rest of the URL.
func (s *Secrets) AddPrivateURL(raw string) {
	s.AddURL(raw)
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= minQueryTokenLen {
			s.Add(seg)
		}
	}
	for _, label := range strings.Split(u.Hostname(), ".") {
		if len(label) >= minQueryTokenLen && strings.ContainsAny(label, "0123456789") {
			s.Add(label)
		}
	}
}

// AddHeader records the value of a "Name: value" header and, for
// "Bearer token" style values, the token alone.
func (s *Secrets) AddHeader(h string) {
	_, v, ok := strings.Cut(h, ":")
	if !ok {
		s.Add(h)
		return
	}
	v = strings.TrimSpace(v)
	s.Add(v)
	if _, tok, ok := strings.Cut(v, " "); ok {
		s.Add(tok)
	}
}

// Scrub masks every recorded credential in text.
func (s *Secrets) Scrub(text string) string {
	for _, v := range s.values {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, Mark)
		}
	}
	return text
}

// Err returns err with every recorded credential masked in its message,
// err itself when there is none. The masked error unwraps to err, so that
// errors.Is and errors.As still see its kind (a usage error, an
// unavailable facilitator).
func (s *Secrets) Err(err error) error {
	if err == nil || len(s.values) == 0 {
		return err
	}
	msg := err.Error()
	clean := s.Scrub(msg)
	if clean == msg {
		return err
	}
	return &maskedError{msg: clean, err: err}
}

// maskedError is an error whose message has the credentials masked.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// Writer returns a writer that masks the recorded credentials in every
// write to w. Each write must hold whole lines (a log record, a banner, an
// error), so that a credential is never split across two writes.
func (s *Secrets) Writer(w io.Writer) io.Writer { return writer{w: w, s: s} }

type writer struct {
	w io.Writer
	s *Secrets
}

// Write writes p with the credentials masked; it reports len(p) written on
// success, whatever the masked length.
func (w writer) Write(p []byte) (int, error) {
	clean := w.s.Scrub(string(p))
	if _, err := io.WriteString(w.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}

// DisplayDSN shows a database location without credentials: the password
// of a URL is masked (url.URL.Redacted), and so are the query parameters
// that carry one (password, sslpassword, ...). A path (SQLite) is shown as
// is; a URL that does not parse is not shown.
func DisplayDSN(dsn string) string {
	if !strings.Contains(dsn, "://") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		scheme, _, _ := strings.Cut(dsn, "://")
		return scheme + "://(a URL that does not parse; not shown)"
	}
	q := u.Query()
	masked := false
	for k := range q {
		if secretParam(k) {
			q.Set(k, Mark)
			masked = true
		}
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// secretParam reports whether a URL query parameter carries a credential.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"pass", "secret", "token", "key", "auth", "credential", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// AddDSN records the credentials of a database URL.
func (s *Secrets) AddDSN(dsn string) {
	if !strings.Contains(dsn, "://") {
		return
	}
	u, err := url.Parse(dsn)
	if err != nil {
		s.Add(dsn)
		return
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		s.Add(pw)
	}
	for k, vs := range u.Query() {
		if secretParam(k) {
			s.Add(vs...)
		}
	}
}

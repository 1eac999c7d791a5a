package main

import (
	"errors"
	"io"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// This file keeps credentials where they belong. The rule: no credential
// given to svc — in a flag, an environment variable or a file — appears on
// a free surface, in a log line, in the banner or in an error.
//
//   - URLs that are published (--base-url, --public-facilitator-url) are
//     refused when they carry credentials or a query.
//   - The facilitator URL is private: the documents name only its scheme
//     and host, or --public-facilitator-url when it is set.
//   - A database URL is shown with its password and password parameters
//     masked (displayDSN).
//   - Errors never repeat a URL that may hold credentials.
//   - As a last line of defence, every line svc writes to stderr (logs, the
//     banner, the final error) passes through secrets.scrub, which masks
//     the credential values it was given.

// redactedMark replaces a credential in what svc prints.
const redactedMark = "xxxxx"

// minSecretLen is the length from which a credential value is masked in
// every output line: shorter values (a one-letter password) are too
// common as ordinary words to be replaced everywhere, and are masked only
// where they are known to be (displayDSN).
const minSecretLen = 4

// secrets is the set of credential values of a configuration.
type secrets struct {
	values []string // longest first, so that a secret containing another is masked whole
}

// add records the credential values of vs (empty and short ones are
// skipped).
func (s *secrets) add(vs ...string) {
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

// addURL records the credentials a URL may hold: its user name, password,
// the values of its credential-like query parameters (see secretParam)
// and any long query value. An unparsable URL is recorded whole.
func (s *secrets) addURL(raw string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		s.add(raw)
		return
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		s.add(u.User.Username(), pw, u.User.String())
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			if secretParam(k) || len(v) >= minQueryTokenLen {
				s.add(v)
			}
		}
	}
}

// addPrivateURL records a URL that is never published (a JSON-RPC
// endpoint): what addURL records, every long path segment, where hosted
// RPC providers put the API key ("/v2/9f2c…"), and every long host label
// with a digit in it, where some put it instead ("9f2c….rpc.example"): a
// resolver's or dialer's error names the host without the rest of the URL.
func (s *secrets) addPrivateURL(raw string) {
	s.addURL(raw)
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if len(seg) >= minQueryTokenLen {
			s.add(seg)
		}
	}
	for _, label := range strings.Split(u.Hostname(), ".") {
		if len(label) >= minQueryTokenLen && strings.ContainsAny(label, "0123456789") {
			s.add(label)
		}
	}
}

// addHeader records the value of a "Name: value" header and, for
// "Bearer token" style values, the token alone.
func (s *secrets) addHeader(h string) {
	_, v, ok := strings.Cut(h, ":")
	if !ok {
		s.add(h)
		return
	}
	v = strings.TrimSpace(v)
	s.add(v)
	if _, tok, ok := strings.Cut(v, " "); ok {
		s.add(tok)
	}
}

// scrub masks every recorded credential in text.
func (s *secrets) scrub(text string) string {
	for _, v := range s.values {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, redactedMark)
		}
	}
	return text
}

// scrubErr returns err with every recorded credential masked in its
// message; a usage error stays a usage error.
func (s *secrets) scrubErr(err error) error {
	if err == nil || len(s.values) == 0 {
		return err
	}
	msg := err.Error()
	clean := s.scrub(msg)
	if clean == msg {
		return err
	}
	if errors.As(err, new(usageError)) {
		return usageError(clean)
	}
	return errors.New(clean)
}

// scrubWriter masks the recorded credentials in every write. Each log
// record, the banner and the final error are written in one call, so a
// credential is never split across two writes.
type scrubWriter struct {
	w io.Writer
	s *secrets
}

// Write writes p with the credentials masked; it reports len(p) written on
// success, whatever the masked length.
func (w scrubWriter) Write(p []byte) (int, error) {
	clean := w.s.scrub(string(p))
	if _, err := io.WriteString(w.w, clean); err != nil {
		return 0, err
	}
	return len(p), nil
}

// displayDSN shows a database location without credentials: the password
// of a URL is masked (url.URL.Redacted), and so are the query parameters
// that carry one (password, sslpassword, ...). A path (SQLite) is shown as
// is; a URL that does not parse is not shown.
func displayDSN(dsn string) string {
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
			q.Set(k, redactedMark)
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

// addDSN records the credentials of a database URL.
func (s *secrets) addDSN(dsn string) {
	if !strings.Contains(dsn, "://") {
		return
	}
	u, err := url.Parse(dsn)
	if err != nil {
		s.add(dsn)
		return
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		s.add(pw)
	}
	for k, vs := range u.Query() {
		if secretParam(k) {
			s.add(vs...)
		}
	}
}

// publishedURLError checks a URL that svc publishes: an absolute http(s)
// URL with a host and no credentials, query or fragment. The message names
// the flag and never repeats the value, which may hold a credential.
func publishedURLError(flagName, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return usageError(flagName + " is not an absolute http(s) URL (the value is not repeated here: it may hold a credential)")
	case u.User != nil:
		return usageError(flagName + " must not carry credentials (user:password@): it is published on every free surface")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return usageError(flagName + " must not carry a query or a fragment: it is published on every free surface")
	}
	return nil
}

// privateURLError checks a URL that svc calls but never publishes (the
// facilitator, the MT5 bridge): an absolute http(s) URL with a host and
// no fragment. The message never repeats the value.
func privateURLError(flagName, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return usageError(flagName + " is not an absolute http(s) URL without fragment (the value is not repeated here: it may hold a credential)")
	}
	return nil
}

// originOf returns scheme://host[:port] of an http(s) URL checked by
// privateURLError: what the documents say of a facilitator by default.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// isLoopbackURL reports whether an http(s) URL names a loopback host
// (localhost, 127.0.0.0/8, ::1).
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// tokenVarWhere names, for an error, where a token was looked for: the
// variable itself when it is the default name (flagDefault), otherwise only
// the flag, so that a token given by mistake in place of a variable's name
// is never printed, whatever characters it has.
func tokenVarWhere(flag, flagDefault, name string) string {
	if name == flagDefault {
		return "$" + flagDefault
	}
	return "the variable " + flag + " names"
}

// envNameRE is the shape of an environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyLikeRE matches what looks like a private key rather than a variable
// name: 64 hex digits, 0x optional.
var keyLikeRE = regexp.MustCompile(`^(0[xX])?[0-9a-fA-F]{64}$`)

// keyEnvError checks the value of --key-env, which names an environment
// variable. A private key given instead is refused without being
// repeated.
func keyEnvError(name string) error {
	return envNameError("--key-env", "PAYER_KEY", name)
}

// envNameError checks the value of a flag that names the environment
// variable holding a private key (flag; example is a variable name to
// show). A key given instead of the name is refused without being
// repeated.
func envNameError(flag, example, name string) error {
	switch {
	case keyLikeRE.MatchString(name):
		return usageError(flag + " takes the NAME of an environment variable holding the private key, and the value given looks like a key itself " +
			"(it is not repeated here); e.g. export " + example + "=0x… then " + flag + " " + example)
	case !envNameRE.MatchString(name):
		return usageError(flag + " takes the name of an environment variable (letters, digits and _, e.g. " + example + "); the value given is not one " +
			"(it is not repeated here, in case it is a key)")
	}
	return nil
}

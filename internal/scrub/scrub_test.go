package scrub

import (
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
)

// Credentials of the database URL tests.
const (
	pgPass  = "pgpassSECRETe5"
	pgQuery = "pgqpassSECRETf6"
)

// kindError is an error kind a caller tests with errors.As.
type kindError string

func (e kindError) Error() string { return string(e) }

func TestDisplayDSN(t *testing.T) {
	for in, want := range map[string]string{
		"svc-data/svc.db": "svc-data/svc.db",
		"postgres://svc:" + pgPass + "@db.internal:5432/svc?sslmode=require":      "postgres://svc:xxxxx@db.internal:5432/svc?sslmode=require",
		"postgres://svc@db.internal/svc?password=" + pgQuery + "&sslmode=disable": "postgres://svc@db.internal/svc?password=xxxxx&sslmode=disable",
		"postgres://u:p@db/svc?sslpassword=" + pgQuery + "&application_name=svc":  "postgres://u:xxxxx@db/svc?application_name=svc&sslpassword=xxxxx",
		"postgres://u:%zz@db/svc": "postgres://(a URL that does not parse; not shown)",
	} {
		if got := DisplayDSN(in); got != want {
			t.Errorf("DisplayDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretsScrub(t *testing.T) {
	var s Secrets
	s.AddURL("https://apiuser:pw12345678@f.example/x?token=abcd&network=base&k=0123456789abcdef")
	s.AddHeader("Authorization: Bearer tok-123456")
	s.AddDSN("postgres://svc:db%2Fpass99@db/svc?sslmode=disable&password=qpass999")
	for _, leak := range []string{"apiuser", "pw12345678", "abcd", "0123456789abcdef", "Bearer tok-123456", "tok-123456", "db/pass99", "db%2Fpass99", "qpass999"} {
		line := "error=\"call failed: " + leak + "\""
		if got := s.Scrub(line); strings.Contains(got, leak) || !strings.Contains(got, Mark) {
			t.Errorf("scrub(%q) = %q", line, got)
		}
	}
	// Ordinary values of a URL's query are not credentials.
	if line := "base_url=http://127.0.0.1:8080 network=base sslmode=disable"; s.Scrub(line) != line {
		t.Errorf("scrub changed %q to %q", line, s.Scrub(line))
	}
	err := s.Err(kindError("bad qpass999"))
	if !errors.As(err, new(kindError)) || err.Error() != "bad "+Mark {
		t.Errorf("Err: %T %v", err, err)
	}
}

// TestSecretsPrivateURL: a JSON-RPC endpoint's key is masked wherever the
// provider puts it (path, host label, query), even when an error names
// only the host; ordinary host names and path words are left alone.
func TestSecretsPrivateURL(t *testing.T) {
	var s Secrets
	s.AddPrivateURL("https://base-mainnet.g.example.com/v2/9f2c7a1be0d44c55")
	s.AddPrivateURL("https://a1b2c3d4e5f60718.rpc.example.net/")
	s.AddPrivateURL("http://127.0.0.1:8545/?apikey=zz0011223344556677")
	for _, leak := range []string{"9f2c7a1be0d44c55", "a1b2c3d4e5f60718", "zz0011223344556677"} {
		line := "dial tcp: lookup " + leak + ".rpc.example.net: no such host"
		if got := s.Scrub(line); strings.Contains(got, leak) {
			t.Errorf("scrub(%q) = %q", line, got)
		}
	}
	for _, line := range []string{"host base-mainnet.g.example.com", "rpc.example.net /v2/ 127.0.0.1:8545"} {
		if got := s.Scrub(line); got != line {
			t.Errorf("scrub changed %q to %q", line, got)
		}
	}
}

// FuzzDisplayDSN checks that a database URL's password never survives
// DisplayDSN.
func FuzzDisplayDSN(f *testing.F) {
	for _, s := range []string{"svc-data/svc.db", "postgres://u:secretpw@h/db?password=other123", "postgres://u:%zz@h", "postgresql://h/db?sslpassword=abcdef12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		got := DisplayDSN(dsn)
		if !strings.Contains(dsn, "://") {
			return
		}
		u, err := url.Parse(dsn)
		if err != nil {
			return
		}
		if pw, ok := u.User.Password(); ok && len(pw) >= 3 && strings.Contains(got, pw) && !strings.Contains(Mark, pw) &&
			!strings.Contains(u.Redacted(), pw) {
			t.Fatalf("DisplayDSN(%q) = %q shows the password", dsn, got)
		}
		for k, vs := range u.Query() {
			for _, v := range vs {
				if secretParam(k) && len(v) >= 3 && strings.Contains(got, "="+url.QueryEscape(v)) && !strings.Contains(Mark, v) {
					t.Fatalf("DisplayDSN(%q) = %q shows %s", dsn, got, k)
				}
			}
		}
	})
}

// TestSecretsAddSkipsShortAndEncodes: short values are too common to mask
// everywhere; a value is masked in its percent-encoded and decoded forms
// too, and a secret containing another is masked whole.
func TestSecretsAddSkipsShortAndEncodes(t *testing.T) {
	var s Secrets
	s.Add("abc", " ", "p@ss/word", "key1", "key12345")
	for in, want := range map[string]string{
		"abc":                   "abc",
		"p@ss/word":             Mark,
		"p%40ss%2Fword":         Mark,
		"key12345 and key1":     Mark + " and " + Mark,
		"no credential in here": "no credential in here",
	} {
		if got := s.Scrub(in); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecretsErr: an error without a credential is returned as is; a
// masked one keeps its kind and its cause.
func TestSecretsErr(t *testing.T) {
	var empty Secrets
	e := kindError("x topsecret1")
	if got := empty.Err(e); got != error(e) {
		t.Errorf("no secrets: %v", got)
	}
	var s Secrets
	s.Add("topsecret1")
	if s.Err(nil) != nil {
		t.Error("Err(nil) is not nil")
	}
	plain := errors.New("nothing to hide")
	if got := s.Err(plain); got != plain {
		t.Errorf("unmasked error replaced: %v", got)
	}
	got := s.Err(e)
	if got.Error() != "x "+Mark || !errors.Is(got, e) {
		t.Errorf("masked: %q (is the cause: %v)", got, errors.Is(got, e))
	}
}

// TestSecretsHeader: a header's value and its bearer token are masked,
// the header's name is not.
func TestSecretsHeader(t *testing.T) {
	var s Secrets
	s.AddHeader("Authorization: Bearer tok-abcdef")
	s.AddHeader("just-a-token-value")
	got := s.Scrub("Authorization: Bearer tok-abcdef; tok-abcdef; just-a-token-value")
	if strings.Contains(got, "tok-abcdef") || strings.Contains(got, "just-a-token") || !strings.Contains(got, "Authorization") {
		t.Errorf("%q", got)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestWriter: every write is masked and reported whole.
func TestWriter(t *testing.T) {
	var s Secrets
	s.Add("hunter22")
	var b strings.Builder
	w := s.Writer(&b)
	p := []byte("level=INFO msg=\"password hunter22 used\"\n")
	if n, err := w.Write(p); n != len(p) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b.String() != "level=INFO msg=\"password "+Mark+" used\"\n" {
		t.Errorf("%q", b.String())
	}
	if n, err := s.Writer(failWriter{}).Write(p); n != 0 || err == nil {
		t.Errorf("failing writer: %d, %v", n, err)
	}
}

// FuzzScrub checks that a recorded credential never survives Scrub, in
// any text around it.
func FuzzScrub(f *testing.F) {
	f.Add("s3cr3t-value", "before ", " after")
	f.Add("p%40ss", "x", "")
	f.Add("aaaa", "aa", "aa")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		var s Secrets
		s.Add(secret)
		v := strings.TrimSpace(secret)
		if len(v) < minSecretLen || strings.Contains(Mark, v) {
			return
		}
		if got := s.Scrub(before + v + after); strings.Contains(got, v) && !strings.Contains(before+Mark+after, v) {
			t.Fatalf("Scrub(%q) = %q keeps %q", before+v+after, got, v)
		}
		if got := s.Err(errors.New(before + v + after)).Error(); strings.Contains(got, v) && !strings.Contains(before+Mark+after, v) {
			t.Fatalf("Err keeps %q: %q", v, got)
		}
	})
}

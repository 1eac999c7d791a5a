package envflag

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"2MiB": 2 << 20, "512KiB": 512 << 10, "2097152": 2097152, "1MB": 1000000, "64K": 64 << 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "2GiBs", "abc", "1.5MiB"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted", in)
		}
	}
}

// TestEnvDefaults: a variable sets a flag's default, the flag wins over
// it, and the usage names the variable.
func TestEnvDefaults(t *testing.T) {
	f := New("x", io.Discard, env(map[string]string{"S": " from-env ", "D": "2s", "F": "1.5", "I": "7", "B": "true", "L": "a, b,,c"}), "svc x")
	s := f.String("s", "S", "def", "a string")
	d := f.Duration("d", "D", time.Second, "a duration")
	fl := f.Float("f", "F", 0, "a float")
	i := f.Int("i", "I", 0, "an int")
	b := f.EnvBool("b", "B", false, "a bool")
	l := f.List("l", "L", "a list")
	none := f.String("none", "", "def", "no variable")
	if err := f.ParseNoArgs([]string{"--i", "9"}); err != nil {
		t.Fatal(err)
	}
	if *s != "from-env" || *d != 2*time.Second || *fl != 1.5 || *i != 9 || !*b || *none != "def" || !slices.Equal(l.Values(), []string{"a", "b", "c"}) {
		t.Fatalf("s=%q d=%v f=%v i=%d b=%v none=%q l=%v", *s, *d, *fl, *i, *b, *none, l.Values())
	}
	if u := f.Lookup("s").Usage; u != "a string (env S)" {
		t.Errorf("usage %q", u)
	}
	// Values given on the command line replace those of the variable.
	f = New("x", io.Discard, env(map[string]string{"L": "a,b"}), "svc x")
	l = f.List("l", "L", "a list")
	if err := f.Parse([]string{"--l", "c", "--l", "d"}); err != nil || !slices.Equal(l.Values(), []string{"c", "d"}) {
		t.Fatalf("%v %v", l.Values(), err)
	}
}

// TestEnvErrors: every malformed variable is reported, as a usage error.
func TestEnvErrors(t *testing.T) {
	f := New("x", io.Discard, env(map[string]string{"D": "soon", "F": "many", "I": "1.5", "B": "yes please"}), "svc x")
	f.Duration("d", "D", 0, "")
	f.Float("f", "F", 0, "")
	f.Int("i", "I", 0, "")
	f.EnvBool("b", "B", false, "")
	err := f.Parse(nil)
	var ue UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("%T %v", err, err)
	}
	for _, want := range []string{`D="soon" is not a duration`, `F="many" is not a number`, `I="1.5" is not an integer`, `B="yes please" is not a boolean`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	f = New("x", io.Discard, env(nil), "svc x")
	if err := f.Parse([]string{"--nope"}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "svc x -h lists the flags") {
		t.Errorf("unknown flag: %v", err)
	}
	if err := f.ParseNoArgs([]string{"extra"}); err == nil || err.Error() != `svc x takes no arguments, got "extra"` {
		t.Errorf("positional: %v", err)
	}
}

func TestParseInterspersed(t *testing.T) {
	f := New("call", io.Discard, env(nil), "svc call")
	u := f.String("url", "", "", "")
	q := f.List("query", "", "")
	pos, err := f.ParseInterspersed([]string{"--url", "U", "tool", "--query", "a=1", "more", "--", "--query", "x"})
	if err != nil {
		t.Fatal(err)
	}
	if *u != "U" || !slices.Equal(q.Values(), []string{"a=1"}) || !slices.Equal(pos, []string{"tool", "more", "--query", "x"}) {
		t.Fatalf("url=%q query=%v positional=%v", *u, q.Values(), pos)
	}
}

// TestHelpGroups: -h prints the synopsis and the flags by topic, the
// flags of no topic last under "Other", and returns flag.ErrHelp.
func TestHelpGroups(t *testing.T) {
	var out bytes.Buffer
	f := New("serve", &out, env(nil), "svc serve [flags]")
	f.String("addr", "SVC_ADDR", "127.0.0.1:8080", "listen address")
	f.Int("n", "", 3, "a count")
	f.Bool("v", false, "verbose")
	f.Groups = []Group{{Title: "Network", Names: []string{"addr", "missing"}}}
	if err := f.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("%v", err)
	}
	want := "Usage: svc serve [flags]\n\nA flag wins over its environment variable.\n\nNetwork:\n" +
		"  --addr string\n    \tlisten address (env SVC_ADDR) (default \"127.0.0.1:8080\")\n\nOther:\n" +
		"  --n int\n    \ta count (default 3)\n  --v\n    \tverbose\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

package csvscan

import (
	"errors"
	"slices"
	"testing"
)

// scanAll returns the records of s, unescaped, with their first lines.
func scanAll(s, delim string) (recs [][]string, lines []int, err error) {
	var sc Scanner
	sc.Init(s, delim)
	for {
		more, _ := sc.StartRecord()
		if !more {
			return recs, lines, nil
		}
		lines = append(lines, sc.RecordLine())
		var rec []string
		for {
			v, esc, last, err := sc.Field()
			if err != nil {
				return recs, lines, err
			}
			if esc {
				v = Unescape(v)
			}
			rec = append(rec, v)
			if last {
				break
			}
		}
		recs = append(recs, rec)
	}
}

func TestFields(t *testing.T) {
	in := "a,b,c\r\n\n\"x,1\",\"he said \"\"hi\"\"\",\"two\r\nlines\"\nlast,,\r"
	recs, lines, err := scanAll(in, ",")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b", "c"}, {"x,1", `he said "hi"`, "two\nlines"}, {"last", "", ""}}
	if !slices.EqualFunc(recs, want, slices.Equal) {
		t.Fatalf("records %q, want %q", recs, want)
	}
	if !slices.Equal(lines, []int{1, 3, 5}) {
		t.Fatalf("lines %v, want [1 3 5]", lines)
	}
	recs, _, err = scanAll("a::b::\"c\"\nd", "::")
	if err != nil || !slices.EqualFunc(recs, [][]string{{"a", "b", "c"}, {"d"}}, slices.Equal) {
		t.Fatalf("two-byte delimiter: %q, %v", recs, err)
	}
}

func TestQuoteErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
	}{
		{"a,b\n\"open,c\nd", 2},
		{"a,\"b\"x\n", 1},
		{"a\nb\"c\n", 2},
	} {
		_, _, err := scanAll(c.in, ",")
		var qe *QuoteError
		if !errors.As(err, &qe) || qe.Line != c.line || qe.Msg == "" {
			t.Errorf("%q: error %v, want a QuoteError on line %d", c.in, err, c.line)
		}
	}
}

func TestDetectDelimiter(t *testing.T) {
	for in, want := range map[string]string{
		"a;b;c\n1;2;3\n":           ";",
		"a\tb\n1\t2\n":             "\t",
		"a|b\n1|2\n":               "|",
		"a,b;c\n1,2;3\n4,5;6\n":    ",",
		"\"x;y\",b\n\"1;2\",3\n":   ",",
		"single\ncolumn\n":         ",",
		"a;b\n1;2\n3;4\n5,6,7,8\n": ";",
	} {
		if got := DetectDelimiter(in); got != want {
			t.Errorf("DetectDelimiter(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzScanner holds the scanner to its contract on any input: it ends
// (never more fields than bytes), record lines never go back, and a failure
// is a *QuoteError after which no record follows.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{"a,b\nc,d", "\"a\"\"b\",c\r\n", "\"x", "a\"b", "\n\n\r", "a;b|c\td", "\"a\r\nb\""} {
		f.Add(s, byte(','))
	}
	f.Fuzz(func(t *testing.T, s string, d byte) {
		if d == '"' || d == '\n' || d == '\r' || d >= 0x80 {
			d = ','
		}
		var sc Scanner
		sc.Init(s, string(d))
		prev, fields := 0, 0
		for {
			more, _ := sc.StartRecord()
			if !more {
				return
			}
			if l := sc.RecordLine(); l < prev {
				t.Fatalf("record line %d after %d", l, prev)
			} else {
				prev = l
			}
			for {
				if fields++; fields > len(s)+1 {
					t.Fatalf("more fields than bytes")
				}
				_, _, last, err := sc.Field()
				if err != nil {
					var qe *QuoteError
					if !errors.As(err, &qe) {
						t.Fatalf("error %v is not a QuoteError", err)
					}
					if more, _ := sc.StartRecord(); more {
						t.Fatalf("records after a quoting error")
					}
					return
				}
				if last {
					break
				}
			}
		}
	})
}

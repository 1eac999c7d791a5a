package evmaddr

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseRefusesAnythingElse(t *testing.T) {
	ok := "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	if a, good := Parse(ok); !good || !strings.EqualFold(a.Hex(), ok) {
		t.Fatalf("Parse(%s) = %s, %v", ok, a.Hex(), good)
	}
	for _, s := range []string{
		"", "0x", ok[2:], "0X" + ok[2:], " " + ok, ok + " ", ok[:41], ok + "0",
		"0x" + strings.Repeat("g", 40), "0x" + strings.Repeat("0", 39) + "é",
	} {
		if _, good := Parse(s); good {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

// FuzzDecodeHex: DecodeHex accepts exactly "0x" and 2n hex digits, and
// decodes them as encoding/hex does.
func FuzzDecodeHex(f *testing.F) {
	for _, s := range []string{"0x", "0x00", "0xAbCd", "0XAbCd", "0xabc", "0xzz", "abcd", "0x0g"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = max(n%80, 0)
		dst := make([]byte, n)
		ok := DecodeHex(dst, s)
		want, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
		wantOK := strings.HasPrefix(s, "0x") && len(s) == 2+2*n && err == nil
		if ok != wantOK {
			t.Fatalf("DecodeHex(%d bytes, %q) = %v, want %v", n, s, ok, wantOK)
		}
		if ok && string(dst) != string(want) {
			t.Fatalf("DecodeHex(%q) = %x, want %x", s, dst, want)
		}
	})
}

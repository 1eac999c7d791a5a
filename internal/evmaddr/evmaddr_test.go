package evmaddr

import (
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/crypto/sha3"
)

// The examples of EIP-55: mixed-case checksummed addresses, then addresses
// whose letters are all one case (EIP-55 lists them as all caps and all
// lower).
var (
	eip55Mixed = []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	}
	eip55OneCase = []string{
		"0x52908400098527886E0F7030069857D2E4169EE7",
		"0x8617E340B3D01FA5F11F306F4090FD50E238070D",
		"0xde709f2102306220921060314715629080e2fb77",
		"0x27b1fdb04752bbc536007a920d24acb045561c26",
	}
)

// reference spells 40 hex digits by the EIP-55 text: hex letter i is upper
// case when nibble i of Keccak-256 of the lower-case digits is 8 or more.
func reference(digits string) string {
	lower := strings.ToLower(digits)
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(lower))
	sum := h.Sum(nil)
	out := []byte(lower)
	for i := range out {
		n := sum[i/2]
		if i%2 == 0 {
			n >>= 4
		}
		if out[i] >= 'a' && n&0x0f >= 8 {
			out[i] -= 'a' - 'A'
		}
	}
	return "0x" + string(out)
}

// flipFirstLetter changes the case of the first hex letter of an address.
func flipFirstLetter(s string) string {
	b := []byte(s)
	for i := 2; i < len(b); i++ {
		switch {
		case b[i] >= 'a' && b[i] <= 'f':
			b[i] -= 'a' - 'A'
			return string(b)
		case b[i] >= 'A' && b[i] <= 'F':
			b[i] += 'a' - 'A'
			return string(b)
		}
	}
	return s
}

func TestChecksumEIP55Examples(t *testing.T) {
	for _, want := range eip55Mixed {
		for _, in := range []string{want, strings.ToLower(want), "0x" + strings.ToUpper(want[2:])} {
			got, ok := Checksum(in)
			if !ok || got != want {
				t.Errorf("Checksum(%s) = %q, %v; want %s", in, got, ok, want)
			}
		}
		if s := SpellingOf(want, want); s != Checksummed {
			t.Errorf("SpellingOf(%s) = %v, want Checksummed", want, s)
		}
		bad := flipFirstLetter(want)
		if s := SpellingOf(bad, want); s != BadChecksum {
			t.Errorf("SpellingOf(%s) = %v, want BadChecksum", bad, s)
		}
	}
	for _, in := range eip55OneCase {
		sum, ok := Checksum(in)
		if !ok || sum != reference(in[2:]) {
			t.Errorf("Checksum(%s) = %q, %v; want %s", in, sum, ok, reference(in[2:]))
		}
		if s := SpellingOf(in, sum); s != OneCase {
			t.Errorf("SpellingOf(%s) = %v, want OneCase", in, s)
		}
	}
}

func TestParseRefusesAnythingElse(t *testing.T) {
	ok := eip55Mixed[0]
	for _, s := range []string{
		"", "0x", ok[2:], "0X" + ok[2:], " " + ok, ok + " ", ok[:41], ok + "0",
		"0x" + strings.Repeat("g", 40), "0x" + strings.Repeat("0", 39) + "é",
	} {
		if _, good := Parse(s); good {
			t.Errorf("Parse(%q) accepted", s)
		}
		if _, good := Checksum(s); good {
			t.Errorf("Checksum(%q) accepted", s)
		}
	}
}

func TestChecksumLoose(t *testing.T) {
	want := eip55Mixed[0]
	for _, in := range []string{want, " " + strings.ToLower(want) + "\n", "0X" + strings.ToUpper(want[2:]), "\t0X" + want[2:]} {
		if got, ok := ChecksumLoose(in); !ok || got != want {
			t.Errorf("ChecksumLoose(%q) = %q, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0x", want[2:], "1x" + want[2:], want + "0", "0x" + strings.Repeat("g", 40)} {
		if got, ok := ChecksumLoose(bad); ok {
			t.Errorf("ChecksumLoose(%q) = %q, ok; want refused", bad, got)
		}
	}
}

// FuzzChecksum checks, for any input, that Checksum accepts exactly what
// Parse accepts, that its answer is the EIP-55 spelling of the same
// address (by the reference algorithm) and that it is stable.
func FuzzChecksum(f *testing.F) {
	for _, s := range append(append([]string{"", "0x", "0X" + eip55Mixed[0][2:]}, eip55Mixed...), eip55OneCase...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, parsed := Parse(s)
		sum, ok := Checksum(s)
		if parsed != ok {
			t.Fatalf("Parse ok %v, Checksum ok %v", parsed, ok)
		}
		if !ok {
			return
		}
		if want := "0x" + hex.EncodeToString(a[:]); !strings.EqualFold(sum, want) || !strings.EqualFold(s, want) {
			t.Fatalf("Checksum(%q) = %s, parsed %s", s, sum, want)
		}
		if ref := reference(s[2:]); sum != ref {
			t.Fatalf("Checksum(%q) = %s, EIP-55 says %s", s, sum, ref)
		}
		if again, _ := Checksum(sum); again != sum || SpellingOf(sum, sum) == BadChecksum {
			t.Fatalf("Checksum(%s) = %s: not stable", sum, again)
		}
	})
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

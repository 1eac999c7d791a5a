package svc

import "unicode/utf8"

// appendJSONString appends s to dst as a JSON string, escaped as
// encoding/json writes it without HTML escaping: \" \\ \b \f \n \r \t,
// \u00XX for the other control characters, \u2028 and \u2029, and \ufffd
// for each byte of invalid UTF-8. A surrogate encoded in WTF-8 (which the
// JavaScript-compatible regex engine produces for a lone surrogate) is
// written as its \uXXXX escape, as JSON.stringify writes a lone surrogate.
func appendJSONString[S ~string | ~[]byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		if c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
			u := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			dst = append(dst, '\\', 'u', hex[u>>12], hex[u>>8&15], hex[u>>4&15], hex[u&15])
			i += 3
			continue
		}
		var buf [utf8.UTFMax]byte
		n := copy(buf[:], s[i:])
		r, size := utf8.DecodeRune(buf[:n])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&15])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

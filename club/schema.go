package club

import "fmt"

// JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of the lounge's body and
// answers, for the interface description: one source with the rules the
// club applies.

// termOrEmptyPattern is TermPattern or the empty string (no role).
const termOrEmptyPattern = `^(?:|` + termRegexp + `)$`

// termDescription describes a role or interest as sent.
var termDescription = fmt.Sprintf("Free-form term, normalized before it is stored: Unicode NFC, lower case, every run of spaces, '_' and dashes "+
	"becomes one '-' (none at either end), so \"Data Scientist\" is stored as \"data-scientist\". Once normalized: 1 to %d characters, %s "+
	"(at most %d combining marks in a row). Refused: more than %d bytes as sent, control characters, bidirectional controls, '<' and '>', "+
	"invisible characters, any other punctuation or symbol. The stored form matches %s and is safe to show as is in HTML, Markdown, JSON or a terminal.",
	MaxTermChars, termRules, maxMarkRun, maxTermInputBytes, TermPattern)

// walletSchema is a wallet as sent.
func walletSchema() map[string]any {
	return map[string]any{"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$",
		"description": "Public EVM address: 0x and 40 hex digits, in one case or with a valid EIP-55 checksum; not the zero address."}
}

// CheckInSchema returns the JSON Schema of the body of POST
// /api/club/lounge/check-in.
func CheckInSchema() map[string]any {
	return map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"wallet"},
		"properties": map[string]any{
			"wallet": walletSchema(),
			"agentName": map[string]any{"type": "string",
				"description": fmt.Sprintf("Optional display name: trimmed and put in NFC, then 1 to %d visible characters without '<', '>', control characters or bidirectional controls. Plain text: escape it before rendering it as HTML or Markdown.", MaxAgentNameRunes)},
			"role": map[string]any{"type": "string", "description": "Optional role (empty or blank means none). " + termDescription},
			"interests": map[string]any{"type": "array", "maxItems": MaxInterestItems,
				"items":       map[string]any{"type": "string", "description": "An interest. " + termDescription},
				"description": fmt.Sprintf("Optional interests: at most %d items; duplicates once normalized are dropped (the first kept), and at most %d distinct interests remain.", MaxInterestItems, MaxInterests)},
		},
	}
}

// entrySchema is a lounge entry as served.
func entrySchema() map[string]any {
	term := map[string]any{"type": "string", "pattern": TermPattern, "maxLength": MaxTermChars}
	return map[string]any{
		"type":     "object",
		"required": []string{"wallet", "agentName", "role", "interests", "checkedInAt", "expiresAt", "selfDeclared"},
		"properties": map[string]any{
			"wallet":    map[string]any{"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "description": "EIP-55 checksummed; ownership not verified."},
			"agentName": map[string]any{"type": "string", "maxLength": MaxAgentNameRunes, "description": "Self-declared plain text (may be empty); escape it before rendering."},
			"role": map[string]any{"type": "string", "pattern": termOrEmptyPattern, "maxLength": MaxTermChars,
				"description": "Normalized role, or empty: letters, digits and marks of any script and '-', safe to show as is."},
			"interests":    map[string]any{"type": "array", "items": term, "maxItems": MaxInterests, "uniqueItems": true, "description": "Normalized interests, safe to show as is."},
			"checkedInAt":  map[string]any{"type": "string", "format": "date-time"},
			"expiresAt":    map[string]any{"type": "string", "format": "date-time"},
			"selfDeclared": map[string]any{"type": "boolean", "const": true},
		},
	}
}

// CheckInResultSchema returns the JSON Schema of the answer of POST
// /api/club/lounge/check-in.
func CheckInResultSchema() map[string]any {
	return map[string]any{
		"type": "object", "required": []string{"ok", "entry", "note"},
		"properties": map[string]any{
			"ok":    map[string]any{"type": "boolean"},
			"entry": entrySchema(),
			"note":  map[string]any{"type": "string"},
		},
	}
}

// LoungeListSchema returns the JSON Schema of the answer of GET
// /api/club/lounge.
func LoungeListSchema() map[string]any {
	return map[string]any{
		"type": "object", "required": []string{"ok", "count", "cap", "ttlSeconds", "entries", "note", "checkIn"},
		"properties": map[string]any{
			"ok":         map[string]any{"type": "boolean"},
			"count":      map[string]any{"type": "integer", "minimum": 0, "maximum": LoungeCap},
			"cap":        map[string]any{"type": "integer", "const": LoungeCap},
			"ttlSeconds": map[string]any{"type": "integer"},
			"entries":    map[string]any{"type": "array", "items": entrySchema(), "maxItems": LoungeCap, "description": "Newest first; self-declared."},
			"note":       map[string]any{"type": "string"},
			"checkIn": map[string]any{"type": "object", "properties": map[string]any{
				"method": map[string]any{"type": "string"}, "url": map[string]any{"type": "string", "format": "uri"},
			}},
		},
	}
}

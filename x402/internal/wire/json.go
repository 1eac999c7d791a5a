package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// IsJSONObject reports whether raw holds a JSON object (raw is already known
// to be valid JSON).
func IsJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// JSONErrorSummary names what is wrong in a JSON error without the input:
// an error of encoding/json or of the go-json-experiment decoder's
// encoding/json emulation (jsonv1).
func JSONErrorSummary(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Sprintf("field %q has the wrong type (want %s)", te.Field, te.Type)
	}
	if te, ok := errors.AsType[*jsonv1.UnmarshalTypeError](err); ok {
		return fmt.Sprintf("field %q has the wrong type (want %s)", te.Field, te.Type)
	}
	return "invalid JSON"
}

// SettleFieldsMissing says what a settlement response (a JSON object) lacks
// of its required members: "success is required", "network is required"
// (absent or empty), or "invalid JSON" with the cause; "" when nothing.
func SettleFieldsMissing(raw []byte) (string, error) {
	var presence struct {
		Success *bool   `json:"success"`
		Network *string `json:"network"`
	}
	if err := jsonv1.Unmarshal(raw, &presence); err != nil {
		return "invalid JSON", err
	}
	if presence.Success == nil {
		return "success is required", nil
	}
	if presence.Network == nil || *presence.Network == "" {
		return "network is required", nil
	}
	return "", nil
}

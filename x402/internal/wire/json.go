package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// IsJSONObject reports whether raw holds a JSON object (raw is already known
// to be valid JSON).
func IsJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// Unmarshal decodes raw into v (a non-nil pointer) with encoding/json's
// rules (names matched case-insensitively, unknown members ignored, the
// last of repeated members kept) on the go-json-experiment decoder. A
// failure is reported as encoding/json reports it, with its error types
// and wording (a mistyped member is named as the Go type spells it, not as
// the input does): raw is decoded once more by encoding/json, on that
// path only.
func Unmarshal(raw []byte, v any) error {
	err := jsonv1.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return json.Unmarshal(raw, v) // *json.InvalidUnmarshalError
	}
	if stdErr := json.Unmarshal(raw, reflect.New(rv.Type().Elem()).Interface()); stdErr != nil {
		return stdErr
	}
	return err
}

// JSONErrorSummary names what is wrong in a JSON error without the input.
func JSONErrorSummary(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
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
	if err := Unmarshal(raw, &presence); err != nil {
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

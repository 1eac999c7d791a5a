package svc

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorKind classifies an *Error. Transports map kinds to their own
// vocabulary: HTTP uses 400, 503, 504, 413 and 500 respectively.
type ErrorKind string

// The error kinds of the svc error model.
const (
	// KindInvalid marks input that breaks a documented rule; Fields says which.
	KindInvalid ErrorKind = "invalid_input"
	// KindUnavailable marks an upstream (the trading terminal) that cannot answer.
	KindUnavailable ErrorKind = "unavailable"
	// KindTimeout marks work that ran past its time limit (regex matching, upstream calls).
	KindTimeout ErrorKind = "timeout"
	// KindTooLarge marks input beyond a size limit.
	KindTooLarge ErrorKind = "too_large"
	// KindInternal marks a fault of svc itself; the message never leaks internals.
	KindInternal ErrorKind = "internal"
)

// FieldError names one broken rule: the field path in the request's JSON
// notation (for example "bars[3].high"), the rule's short name (for example
// "required", "gt", "oneof") and a human-readable message that names both.
type FieldError struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Error is the single error type returned by every tool. Use errors.As to
// get at it. Message is safe to show to a client: it never echoes more than
// a short prefix of user input and never exposes internals. Cause, when set,
// is the underlying error for logs and errors.Is/As; it is not meant for
// clients.
type Error struct {
	Kind    ErrorKind
	Message string
	Fields  []FieldError
	Cause   error
}

// Error implements the error interface. It joins the summary and the field
// messages so that a plain log line says everything.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(e.Message)
	for i, f := range e.Fields {
		if i == 0 && e.Message != "" {
			b.WriteString(": ")
		} else if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Message)
	}
	if b.Len() == 0 {
		b.WriteString(string(e.Kind))
	}
	return b.String()
}

// Unwrap returns the cause, so errors.Is and errors.As see through an *Error.
func (e *Error) Unwrap() error { return e.Cause }

// Transient reports whether the error is a passing unavailability (an
// upstream down) rather than a fault of the request: a payment engine does
// not count such a failed paid call against the payment's attempts.
func (e *Error) Transient() bool { return e.Kind == KindUnavailable }

// Timeout reports whether the error is a time limit reached (KindTimeout).
func (e *Error) Timeout() bool { return e.Kind == KindTimeout }

// Is reports whether target is an *Error of the same kind, so that
// errors.Is(err, &svc.Error{Kind: svc.KindTimeout}) works.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) || t == nil {
		return false
	}
	return t.Kind == e.Kind && t.Message == "" && len(t.Fields) == 0 && t.Cause == nil
}

// KindOf returns the kind of err if it is (or wraps) an *Error, and
// KindInternal otherwise. A nil error has no kind and yields "".
func KindOf(err error) ErrorKind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// InvalidField returns a KindInvalid error for one field and rule. The
// message is built from format and args and is prefixed with the field name
// unless it already starts with it.
func InvalidField(field, rule, format string, args ...any) *Error {
	e := &Error{Kind: KindInvalid, Message: "invalid input"}
	e.Fields = append(e.Fields, newFieldError(field, rule, fmt.Sprintf(format, args...)))
	return e
}

// fieldErrors accumulates field errors of one request, so that a client
// sees every broken rule at once instead of fixing them one by one.
type fieldErrors []FieldError

// add records a broken rule.
func (fe *fieldErrors) add(field, rule, format string, args ...any) {
	*fe = append(*fe, newFieldError(field, rule, fmt.Sprintf(format, args...)))
}

// err returns nil when nothing was recorded and a KindInvalid *Error otherwise.
func (fe fieldErrors) err() error {
	if len(fe) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Message: "invalid input", Fields: fe}
}

func newFieldError(field, rule, msg string) FieldError {
	if field != "" && !strings.HasPrefix(msg, field) {
		msg = field + ": " + msg
	}
	return FieldError{Field: field, Rule: rule, Message: msg}
}

// errorf returns an *Error of the given kind with a formatted message.
func errorf(kind ErrorKind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Cause: cause}
}

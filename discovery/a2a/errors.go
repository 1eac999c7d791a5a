package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	svc "github.com/seed1284c1d2/svc"
)

// JSON-RPC 2.0 and A2A error codes.
const (
	// CodeParseError: the body is not valid JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: the body is JSON but not a JSON-RPC 2.0 request
	// (also a batch, which A2A does not define).
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: no such method in either protocol version.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: the params break a rule of the method.
	CodeInvalidParams = -32602
	// CodeInternalError: a fault of the server.
	CodeInternalError = -32603
	// CodeTaskNotFound: no task with that id (never created, expired or evicted).
	CodeTaskNotFound = -32001
	// CodeTaskNotCancelable: the task is in a terminal state.
	CodeTaskNotCancelable = -32002
	// CodePushNotificationNotSupported: the agent sends no push notifications.
	CodePushNotificationNotSupported = -32003
	// CodeUnsupportedOperation: streaming, subscriptions, the extended card,
	// or a message to a task in a terminal state.
	CodeUnsupportedOperation = -32004
	// CodeContentTypeNotSupported: a part type or an output mode the agent
	// does not handle.
	CodeContentTypeNotSupported = -32005
	// CodeVersionNotSupported: the A2A-Version asked for is neither 1.0 nor 0.3.
	CodeVersionNotSupported = -32009
)

// errorDomain is the google.rpc.ErrorInfo domain of A2A 1.0 errors.
const errorDomain = "a2a-protocol.org"

// A2A 1.0 error reasons (google.rpc.ErrorInfo.reason), as the JS SDK names them.
var errorReasons = map[int]string{
	CodeTaskNotFound:                 "TASK_NOT_FOUND",
	CodeTaskNotCancelable:            "TASK_NOT_CANCELABLE",
	CodePushNotificationNotSupported: "PUSH_NOTIFICATION_NOT_SUPPORTED",
	CodeUnsupportedOperation:         "UNSUPPORTED_OPERATION",
	CodeContentTypeNotSupported:      "CONTENT_TYPE_NOT_SUPPORTED",
	CodeVersionNotSupported:          "VERSION_NOT_SUPPORTED",
}

// fieldViolation is one invalid field of a -32602 error.
type fieldViolation struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// rpcError is a JSON-RPC error before it is shaped for a protocol version.
type rpcError struct {
	code    int
	message string
	// info is the google.rpc.ErrorInfo metadata (1.0) and the data object (0.3).
	info map[string]string
	// fields are the invalid fields of a -32602.
	fields []fieldViolation
	// cause is what went wrong behind a -32603, for the log only.
	cause error
}

func (e *rpcError) Error() string { return fmt.Sprintf("a2a: %d %s", e.code, e.message) }

// newError builds an rpcError with a formatted message.
func newError(code int, format string, args ...any) *rpcError {
	return &rpcError{code: code, message: fmt.Sprintf(format, args...)}
}

// invalidParam is a -32602 naming one field and the rule it breaks.
func invalidParam(field, rule, format string, args ...any) *rpcError {
	msg := fmt.Sprintf(format, args...)
	return &rpcError{
		code:    CodeInvalidParams,
		message: "invalid params: " + field + ": " + msg,
		fields:  []fieldViolation{{Field: field, Rule: rule, Message: msg}},
	}
}

// with adds a metadata entry and returns e.
func (e *rpcError) with(key, value string) *rpcError {
	if e.info == nil {
		e.info = map[string]string{}
	}
	e.info[key] = value
	return e
}

// fromSurfaceError maps an error of discovery.Surfaces: invalid input is
// -32602 with its fields (prefixed by where the value came from), anything
// else -32603 with a message that leaks nothing.
func fromSurfaceError(err error, prefix string) *rpcError {
	var se *svc.Error
	if errors.As(err, &se) && se.Kind == svc.KindInvalid {
		e := &rpcError{code: CodeInvalidParams}
		var msgs []string
		for _, f := range se.Fields {
			field := f.Field
			if prefix != "" {
				field = prefix + "." + field
			}
			e.fields = append(e.fields, fieldViolation{Field: field, Rule: f.Rule, Message: f.Message})
			msgs = append(msgs, field+": "+f.Message)
		}
		if len(msgs) == 0 {
			msgs = append(msgs, se.Message)
		}
		e.message = "invalid params: " + strings.Join(msgs, "; ")
		return e
	}
	if errors.As(err, &se) && se.Kind == svc.KindTooLarge {
		field := prefix
		if field == "" {
			field = "message"
		}
		return &rpcError{code: CodeInvalidParams, message: "invalid params: " + se.Message,
			fields: []fieldViolation{{Field: field, Rule: "max_size", Message: se.Message}}}
	}
	e := newError(CodeInternalError, "internal error")
	e.cause = err
	return e
}

// rename renames a field of a -32602 (a surface's parameter name to the
// member the caller sent) and returns e.
func (e *rpcError) rename(from, to string) *rpcError {
	for i, f := range e.fields {
		if f.Field == from {
			e.fields[i].Field = to
			e.message = strings.ReplaceAll(e.message, from+":", to+":")
		}
	}
	return e
}

// errorInfo is google.rpc.ErrorInfo in its ProtoJSON form.
type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// badRequest is google.rpc.BadRequest in its ProtoJSON form.
type badRequest struct {
	Type            string           `json:"@type"`
	FieldViolations []protoViolation `json:"fieldViolations"`
}

// protoViolation is google.rpc.BadRequest.FieldViolation.
type protoViolation struct {
	Field       string `json:"field"`
	Description string `json:"description"`
	Reason      string `json:"reason,omitempty"`
}

// wireError is the JSON-RPC error object.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// shape renders e for protocol version v: in 1.0 the data is an array of
// google.rpc detail objects, in 0.3 a free-form object.
func (e *rpcError) shape(v version) wireError {
	w := wireError{Code: e.code, Message: e.message}
	if v == v10 {
		var details []any
		if reason, ok := errorReasons[e.code]; ok {
			details = append(details, errorInfo{
				Type:     "type.googleapis.com/google.rpc.ErrorInfo",
				Reason:   reason,
				Domain:   errorDomain,
				Metadata: e.info,
			})
		}
		if len(e.fields) > 0 {
			br := badRequest{Type: "type.googleapis.com/google.rpc.BadRequest"}
			for _, f := range e.fields {
				br.FieldViolations = append(br.FieldViolations, protoViolation{Field: f.Field, Description: f.Message, Reason: f.Rule})
			}
			details = append(details, br)
		}
		if len(details) > 0 {
			w.Data = details
		}
		return w
	}
	data := map[string]any{}
	for k, val := range e.info {
		data[k] = val
	}
	if len(e.fields) > 0 {
		data["errors"] = e.fields
	}
	if len(data) > 0 {
		w.Data = data
	}
	return w
}

// wireResponse is a JSON-RPC response; exactly one of Result and Error is set.
type wireResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *wireError      `json:"error,omitempty"`
}

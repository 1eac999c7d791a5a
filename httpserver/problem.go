package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/bodybudget"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/xau"
)

// Problem codes: the Code member of a Problem and the suffix of its type.
// Codes of the x402 middleware's own answers (payment header, facilitator,
// replay guard) are its Reason constants.
const (
	CodeInvalidInput     = string(svc.KindInvalid)     // 400
	CodeUnavailable      = string(svc.KindUnavailable) // 503
	CodeTimeout          = string(svc.KindTimeout)     // 504
	CodeTooLarge         = string(svc.KindTooLarge)    // 413
	CodeInternal         = string(svc.KindInternal)    // 500
	CodeNotFound         = "not_found"                 // 404
	CodeMethodNotAllowed = "method_not_allowed"        // 405
	CodeRateLimited      = "rate_limited"              // 429
	CodeBusy             = "server_busy"               // 503
	CodeRequestTimeout   = "request_timeout"           // 408
)

// Problem is an RFC 9457 problem details object. Errors lists each broken
// input rule for invalid input; Code is the machine-readable kind of the
// problem (also the end of Type); RequestID repeats the X-Request-Id header.
type Problem struct {
	Type      string           `json:"type"`
	Title     string           `json:"title"`
	Status    int              `json:"status"`
	Detail    string           `json:"detail,omitempty"`
	Instance  string           `json:"instance,omitempty"`
	Code      string           `json:"code"`
	Errors    []svc.FieldError `json:"errors,omitempty"`
	RequestID string           `json:"requestId,omitempty"`
}

// NewProblem returns a problem of the given status and code with the
// standard title of the status.
func NewProblem(status int, code, detail string) Problem {
	return Problem{Type: wire.ProblemTypePrefix + code, Title: http.StatusText(status), Status: status, Detail: detail, Code: code}
}

// ProblemFromError maps an error to its problem: *svc.Error kinds become
// 400 (with the field errors), 503, 504, 413 and 500; errors of the xau port
// become 503 (ErrUnavailable) or 400 (ErrBadRequest); a context deadline
// becomes 504; anything else is a 500 whose detail reveals nothing.
func ProblemFromError(err error) Problem {
	var se *svc.Error
	if errors.As(err, &se) && se != nil {
		switch se.Kind {
		case svc.KindInvalid:
			p := NewProblem(http.StatusBadRequest, CodeInvalidInput, problemDetail(se.Message, "invalid input"))
			p.Errors = se.Fields
			if len(p.Errors) == 0 {
				p.Errors = nil
			}
			return p
		case svc.KindUnavailable:
			return NewProblem(http.StatusServiceUnavailable, CodeUnavailable, problemDetail(se.Message, "the upstream source is unavailable; try again later"))
		case svc.KindTimeout:
			return NewProblem(http.StatusGatewayTimeout, CodeTimeout, problemDetail(se.Message, "the call ran out of time"))
		case svc.KindTooLarge:
			return NewProblem(http.StatusRequestEntityTooLarge, CodeTooLarge, problemDetail(se.Message, "the input is too large"))
		default:
			return NewProblem(http.StatusInternalServerError, CodeInternal, "internal error")
		}
	}
	switch {
	case errors.Is(err, xau.ErrUnavailable):
		return NewProblem(http.StatusServiceUnavailable, CodeUnavailable, problemDetail(xauReason(err), "the trading terminal is unavailable; try again later"))
	case errors.Is(err, xau.ErrBadRequest):
		return NewProblem(http.StatusBadRequest, CodeInvalidInput, problemDetail(xauReason(err), "invalid request"))
	case errors.Is(err, context.DeadlineExceeded):
		return NewProblem(http.StatusGatewayTimeout, CodeTimeout, "the call ran out of time")
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return NewProblem(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", mbe.Limit))
	}
	switch {
	case errors.Is(err, bodybudget.ErrBusy):
		return NewProblem(http.StatusServiceUnavailable, CodeBusy, "the server holds as many request bodies as it can; try again shortly")
	case errors.Is(err, bodybudget.ErrClientBusy):
		return NewProblem(http.StatusTooManyRequests, CodeRateLimited, "this address is sending as many request bodies at once as it may; try again shortly")
	case errors.Is(err, bodybudget.ErrTooSlow):
		return NewProblem(http.StatusRequestTimeout, CodeRequestTimeout, "the request body arrived below the minimum upload rate; send it faster")
	case errors.Is(err, bodybudget.ErrUnreadable):
		return NewProblem(http.StatusBadRequest, CodeInvalidInput, "the request body could not be read")
	}
	return NewProblem(http.StatusInternalServerError, CodeInternal, "internal error")
}

func xauReason(err error) string {
	if r := xau.Reason(err); r != "" {
		return "trading terminal: " + r
	}
	return ""
}

func problemDetail(msg, fallback string) string {
	if strings.TrimSpace(msg) == "" {
		return fallback
	}
	return msg
}

// WriteProblem writes p as application/problem+json with Cache-Control
// no-store, filling Instance (the request path) and RequestID (the request's
// id) when they are empty. Handlers mounted on the server use it so that
// every error has one shape.
func WriteProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Status < 400 || p.Status > 599 {
		p.Status = http.StatusInternalServerError
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if p.Code == "" {
		p.Code = CodeInternal
	}
	if p.Type == "" {
		p.Type = wire.ProblemTypePrefix + p.Code
	}
	if r != nil {
		if p.Instance == "" {
			p.Instance = r.URL.Path
		}
		if p.RequestID == "" {
			p.RequestID = RequestIDOf(r)
		}
	}
	b, err := json.Marshal(p)
	if err != nil { // a Problem always encodes
		b = []byte(`{"type":"` + wire.ProblemTypePrefix + CodeInternal + `","title":"Internal Server Error","status":500,"code":"internal"}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", wire.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if sw, ok := w.(*statusWriter); ok {
		sw.reason = p.Code
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError writes the problem of err (see ProblemFromError).
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	WriteProblem(w, r, ProblemFromError(err))
}

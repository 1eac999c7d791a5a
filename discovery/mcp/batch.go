package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// batchVersion is the first protocol version without JSON-RPC batches.
const batchVersion = "2025-06-18"

// isBatch reports whether a body is a JSON array (a JSON-RPC batch).
func isBatch(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// serveBatch serves a JSON-RPC batch, bounded: refused (a JSON-RPC error)
// for the protocol versions without batches, past Options.MaxBatch
// messages, when it carries a payment (a paid call goes alone in its
// POST, so that its settled answer is never cut from a batch's) or when
// the client's rate does not admit each of its messages; otherwise served
// by the SDK, whose answer is replaced by a JSON-RPC error when it is over
// Options.MaxBatchAnswerBytes.
func (h *handler) serveBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	if v := r.Header.Get(x402mcp.HeaderProtocolVersion); v >= batchVersion {
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest,
			"invalid request: JSON-RPC batches do not exist in protocol version "+batchVersion+" and later; send one message per POST")
		return
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		if !json.Valid(body) {
			writeRPCError(w, http.StatusBadRequest, nil, codeParseError, "parse error: the body is not valid JSON")
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest, "invalid request: a batch is an array of JSON-RPC messages")
		return
	}
	if len(msgs) > h.maxBatch {
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest,
			fmt.Sprintf("invalid request: a batch holds at most %d messages, this one %d; send fewer per POST", h.maxBatch, len(msgs)))
		return
	}
	for _, m := range msgs {
		if carriesPayment(m) {
			writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest,
				"invalid request: a paid tools/call (params._meta[\""+x402mcp.MetaPayment+"\"]) is sent alone in its POST, not in a batch")
			return
		}
	}
	if h.admit != nil && len(msgs) > 1 {
		if ok, wait := h.admit(r, len(msgs)-1); !ok {
			secs := int64((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
			writeRPCError(w, http.StatusTooManyRequests, nil, codeInvalidRequest,
				fmt.Sprintf("rate limited: each message of a batch counts as a request of this address; retry after %d s", max(secs, 1)))
			return
		}
	}
	r.Body = readCloser{bytes.NewReader(body)}
	r.ContentLength = int64(len(body))
	cw := &cappedWriter{header: w.Header(), limit: h.maxAnswer}
	h.sdk.ServeHTTP(cw, r)
	if cw.over {
		w.Header().Del("Content-Length")
		writeRPCError(w, http.StatusBadRequest, nil, codeInvalidRequest,
			fmt.Sprintf("invalid request: the answers to this batch are over %d bytes; send fewer messages per POST", h.maxAnswer))
		return
	}
	status := cw.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(cw.body.Bytes())
}

// carriesPayment reports whether a JSON-RPC message has a payment in
// params._meta.
func carriesPayment(m json.RawMessage) bool {
	if !bytes.Contains(m, []byte(x402mcp.MetaPayment)) {
		return false
	}
	var p struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(m, &p); err != nil {
		return true // let no undecodable payment through in a batch
	}
	_, ok := p.Params.Meta[x402mcp.MetaPayment]
	return ok
}

// readCloser is a bytes.Reader with a no-op Close.
type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// cappedWriter buffers an answer up to limit bytes; past it, it keeps
// nothing more and reports over.
type cappedWriter struct {
	header http.Header // the real writer's
	status int
	body   bytes.Buffer
	limit  int64
	over   bool
}

func (c *cappedWriter) Header() http.Header { return c.header }

func (c *cappedWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.over || int64(c.body.Len()+len(p)) > c.limit {
		c.over = true
		c.body = bytes.Buffer{}
		return 0, errAnswerTooLarge
	}
	return c.body.Write(p)
}

var errAnswerTooLarge = errors.New("mcp: the batch answer is over its limit")

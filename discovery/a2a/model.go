package a2a

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// The version-neutral model: what the store keeps. Tasks are immutable once
// stored, so readers share them without copying.

// role is the sender of a message.
type role int

const (
	roleUser role = iota + 1
	roleAgent
)

// taskState is the state of a task (only the ones this agent reaches).
type taskState int

const (
	stateCompleted taskState = iota + 1
	// stateInputRequired: a paid call waits for its payment.
	stateInputRequired
	// stateWorking: a payment is being verified, the tool run and the
	// payment settled.
	stateWorking
	// stateFailed: the paid call failed (payment refused, settlement
	// failed, tool failed) or could not start (terminal down).
	stateFailed
	// stateCanceled: the caller declined to pay.
	stateCanceled
)

// Media types of the parts this agent produces.
const (
	mediaJSON = "application/json"
	mediaText = "text/plain"
)

// part is a text part or a data part (a JSON object).
type part struct {
	text      string
	data      json.RawMessage // nil for a text part
	mediaType string
	filename  string
	metadata  json.RawMessage
}

func (p part) isData() bool { return p.data != nil }

// size approximates the memory a part holds.
func (p part) size() int64 {
	return int64(len(p.text) + len(p.data) + len(p.mediaType) + len(p.filename) + len(p.metadata) + 64)
}

// message is an A2A message.
type message struct {
	id               string
	contextID        string
	taskID           string
	role             role
	parts            []part
	metadata         json.RawMessage
	extensions       []string
	referenceTaskIDs []string
}

func (m message) size() int64 {
	n := int64(len(m.id)+len(m.contextID)+len(m.taskID)+len(m.metadata)) + 128
	for _, p := range m.parts {
		n += p.size()
	}
	for _, s := range m.extensions {
		n += int64(len(s)) + 16
	}
	for _, s := range m.referenceTaskIDs {
		n += int64(len(s)) + 16
	}
	return n
}

// artifact is a task output.
type artifact struct {
	id          string
	name        string
	description string
	parts       []part
}

// task is a unit of work. A discovery task is completed when created; a
// paid call's task goes through the payment states (see sale).
type task struct {
	id        string
	contextID string
	state     taskState
	timestamp time.Time
	// status is the agent's status message (the payment flow's metadata);
	// nil for discovery tasks.
	status    *message
	artifacts []artifact
	history   []message
	// sale is the paid call of the task; nil for discovery tasks.
	sale *sale
}

func (t *task) size() int64 {
	n := int64(len(t.id)+len(t.contextID)) + 256
	if t.status != nil {
		n += t.status.size()
	}
	if t.sale != nil {
		n += t.sale.size()
	}
	for _, a := range t.artifacts {
		n += int64(len(a.id)+len(a.name)+len(a.description)) + 64
		for _, p := range a.parts {
			n += p.size()
		}
	}
	for _, m := range t.history {
		n += m.size()
	}
	return n
}

// terminal reports whether the task can change no more.
func (t *task) terminal() bool {
	return t.state == stateCompleted || t.state == stateFailed || t.state == stateCanceled
}

// ---- Wire shapes of the output ----

// part10 is an A2A 1.0 Part: the member present is the type.
type part10 struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// part03 is an A2A 0.3 Part, tagged by kind.
type part03 struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// message10 is an A2A 1.0 Message.
type message10 struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []part10        `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// message03 is an A2A 0.3 Message.
type message03 struct {
	Kind             string          `json:"kind"`
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []part03        `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// artifact10 is an A2A 1.0 Artifact.
type artifact10 struct {
	ArtifactID  string   `json:"artifactId"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Parts       []part10 `json:"parts"`
}

// artifact03 is an A2A 0.3 Artifact.
type artifact03 struct {
	ArtifactID  string   `json:"artifactId"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Parts       []part03 `json:"parts"`
}

// status is a TaskStatus (both versions; the state names differ). Message
// is a message10 or a message03.
type status struct {
	State     string `json:"state"`
	Message   any    `json:"message,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
}

// task10 is an A2A 1.0 Task.
type task10 struct {
	ID        string       `json:"id"`
	ContextID string       `json:"contextId"`
	Status    status       `json:"status"`
	Artifacts []artifact10 `json:"artifacts,omitempty"`
	History   []message10  `json:"history,omitempty"`
}

// task03 is an A2A 0.3 Task.
type task03 struct {
	Kind      string       `json:"kind"`
	ID        string       `json:"id"`
	ContextID string       `json:"contextId"`
	Status    status       `json:"status"`
	Artifacts []artifact03 `json:"artifacts,omitempty"`
	History   []message03  `json:"history,omitempty"`
}

// timestampLayout is ISO 8601 UTC with milliseconds and Z.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// name spells the state in version v: TASK_STATE_* (1.0) or kebab case (0.3).
func (s taskState) name(v version) string {
	n10, n03 := "TASK_STATE_COMPLETED", "completed"
	switch s {
	case stateInputRequired:
		n10, n03 = "TASK_STATE_INPUT_REQUIRED", "input-required"
	case stateWorking:
		n10, n03 = "TASK_STATE_WORKING", "working"
	case stateFailed:
		n10, n03 = "TASK_STATE_FAILED", "failed"
	case stateCanceled:
		n10, n03 = "TASK_STATE_CANCELED", "canceled"
	}
	if v == v10 {
		return n10
	}
	return n03
}

func (r role) name(v version) string {
	switch {
	case v == v10 && r == roleAgent:
		return "ROLE_AGENT"
	case v == v10:
		return "ROLE_USER"
	case r == roleAgent:
		return "agent"
	}
	return "user"
}

func (p part) wire10() part10 {
	w := part10{Metadata: p.metadata, Filename: p.filename, MediaType: p.mediaType}
	if p.isData() {
		w.Data = p.data
	} else {
		text := p.text
		w.Text = &text
	}
	return w
}

func (p part) wire03() part03 {
	if p.isData() {
		return part03{Kind: "data", Data: p.data, Metadata: p.metadata}
	}
	text := p.text
	return part03{Kind: "text", Text: &text, Metadata: p.metadata}
}

func (m message) wire10() message10 {
	w := message10{MessageID: m.id, ContextID: m.contextID, TaskID: m.taskID, Role: m.role.name(v10),
		Parts: make([]part10, len(m.parts)), Metadata: m.metadata, Extensions: m.extensions, ReferenceTaskIDs: m.referenceTaskIDs}
	for i, p := range m.parts {
		w.Parts[i] = p.wire10()
	}
	return w
}

func (m message) wire03() message03 {
	w := message03{Kind: "message", MessageID: m.id, ContextID: m.contextID, TaskID: m.taskID, Role: m.role.name(v03),
		Parts: make([]part03, len(m.parts)), Metadata: m.metadata, Extensions: m.extensions, ReferenceTaskIDs: m.referenceTaskIDs}
	for i, p := range m.parts {
		w.Parts[i] = p.wire03()
	}
	return w
}

// historyTail applies historyLength: nil means all, 0 means none.
func historyTail(h []message, historyLength *int) []message {
	if historyLength == nil {
		return h
	}
	n := *historyLength
	if n <= 0 {
		return nil
	}
	if n < len(h) {
		return h[len(h)-n:]
	}
	return h
}

// render shapes t for version v, keeping the last historyLength messages.
func (t *task) render(v version, historyLength *int) any {
	st := status{State: t.state.name(v), Timestamp: t.timestamp.UTC().Format(timestampLayout)}
	hist := historyTail(t.history, historyLength)
	if v == v10 {
		if t.status != nil {
			st.Message = t.status.wire10()
		}
		w := task10{ID: t.id, ContextID: t.contextID, Status: st}
		for _, a := range t.artifacts {
			wa := artifact10{ArtifactID: a.id, Name: a.name, Description: a.description, Parts: make([]part10, len(a.parts))}
			for i, p := range a.parts {
				wa.Parts[i] = p.wire10()
			}
			w.Artifacts = append(w.Artifacts, wa)
		}
		for _, m := range hist {
			w.History = append(w.History, m.wire10())
		}
		return w
	}
	if t.status != nil {
		st.Message = t.status.wire03()
	}
	w := task03{Kind: "task", ID: t.id, ContextID: t.contextID, Status: st}
	for _, a := range t.artifacts {
		wa := artifact03{ArtifactID: a.id, Name: a.name, Description: a.description, Parts: make([]part03, len(a.parts))}
		for i, p := range a.parts {
			wa.Parts[i] = p.wire03()
		}
		w.Artifacts = append(w.Artifacts, wa)
	}
	for _, m := range hist {
		w.History = append(w.History, m.wire03())
	}
	return w
}

// ---- Input: both shapes accepted by both versions ----

// inMessage is a Message as sent, 1.0 or 0.3.
type inMessage struct {
	Kind             *string           `json:"kind"`
	MessageID        *string           `json:"messageId"`
	ContextID        string            `json:"contextId"`
	TaskID           string            `json:"taskId"`
	Role             *string           `json:"role"`
	Parts            []json.RawMessage `json:"parts"`
	Metadata         json.RawMessage   `json:"metadata"`
	Extensions       []string          `json:"extensions"`
	ReferenceTaskIDs []string          `json:"referenceTaskIds"`
}

// Bounds of an incoming message (the body limit bounds it too).
const (
	maxParts    = 64
	maxIDLength = 256
)

// decodeMessage reads and checks a message; field names in errors are
// rooted at "message".
func decodeMessage(raw json.RawMessage) (message, *rpcError) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return message{}, invalidParam("message", "required", "a message is required")
	}
	var in inMessage
	if e := decodeInto(raw, &in, "message"); e != nil {
		return message{}, e
	}
	if in.Kind != nil && *in.Kind != "message" {
		return message{}, invalidParam("message.kind", "oneof", `kind must be "message", got %q`, clip.Runes(*in.Kind, 40))
	}
	m := message{contextID: in.ContextID, taskID: in.TaskID, extensions: in.Extensions, referenceTaskIDs: in.ReferenceTaskIDs}
	if in.MessageID == nil || strings.TrimSpace(*in.MessageID) == "" {
		return message{}, invalidParam("message.messageId", "required", "messageId is required")
	}
	m.id = *in.MessageID
	for _, f := range [...]struct{ field, value string }{{"message.messageId", m.id}, {"message.contextId", m.contextID}, {"message.taskId", m.taskID}} {
		if len(f.value) > maxIDLength {
			return message{}, invalidParam(f.field, "max", "at most %d bytes", maxIDLength)
		}
	}
	if in.Role == nil || *in.Role == "" {
		return message{}, invalidParam("message.role", "required", `role is required ("user" or "ROLE_USER")`)
	}
	switch strings.ToUpper(*in.Role) {
	case "USER", "ROLE_USER":
		m.role = roleUser
	case "AGENT", "ROLE_AGENT":
		m.role = roleAgent
	default:
		return message{}, invalidParam("message.role", "oneof", `role must be "user", "agent", "ROLE_USER" or "ROLE_AGENT", got %q`, clip.Runes(*in.Role, 40))
	}
	var e *rpcError
	if m.metadata, e = objectOrNil(in.Metadata, "message.metadata"); e != nil {
		return message{}, e
	}
	if len(in.Parts) == 0 {
		return message{}, invalidParam("message.parts", "required", "parts must hold at least one part")
	}
	if len(in.Parts) > maxParts {
		return message{}, invalidParam("message.parts", "max", "at most %d parts", maxParts)
	}
	for i, rp := range in.Parts {
		p, e := decodePart(rp, fmt.Sprintf("message.parts[%d]", i))
		if e != nil {
			return message{}, e
		}
		m.parts = append(m.parts, p)
	}
	return m, nil
}

// decodePart reads a part in either shape. File parts are -32005.
func decodePart(raw json.RawMessage, field string) (part, *rpcError) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return part{}, invalidParam(field, "object", "a part must be a JSON object")
	}
	var p part
	var e *rpcError
	if p.metadata, e = objectOrNil(members["metadata"], field+".metadata"); e != nil {
		return part{}, e
	}
	for _, k := range []string{"mediaType", "filename"} {
		if v, ok := members[k]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return part{}, invalidParam(field+"."+k, "string", "%s must be a string", k)
			}
			if k == "mediaType" {
				p.mediaType = s
			} else {
				p.filename = s
			}
		}
	}
	kind := ""
	if k, ok := members["kind"]; ok {
		if json.Unmarshal(k, &kind) != nil {
			return part{}, invalidParam(field+".kind", "string", "kind must be a string")
		}
	} else {
		var present []string
		for _, k := range []string{"text", "data", "url", "raw", "file"} {
			if _, ok := members[k]; ok {
				present = append(present, k)
			}
		}
		switch len(present) {
		case 0:
			return part{}, invalidParam(field, "required", `a part needs "text" or "data"`)
		case 1:
			kind = present[0]
		default:
			return part{}, invalidParam(field, "oneof", "a part holds exactly one of text, data, url, raw; found %s", strings.Join(present, ", "))
		}
	}
	switch kind {
	case "text":
		t, ok := members["text"]
		if !ok || json.Unmarshal(t, &p.text) != nil || !isJSONString(t) {
			return part{}, invalidParam(field+".text", "string", "text must be a string")
		}
		return p, nil
	case "data":
		d, ok := members["data"]
		d = bytes.TrimSpace(d)
		if !ok || len(d) == 0 || d[0] != '{' {
			return part{}, invalidParam(field+".data", "object", "data must be a JSON object")
		}
		p.data = append(json.RawMessage(nil), d...)
		return p, nil
	case "file", "url", "raw":
		return part{}, newError(CodeContentTypeNotSupported,
			"content type not supported: %s is a file part; this agent reads text parts and data parts (application/json) only", field).
			with("part", field)
	}
	return part{}, invalidParam(field+".kind", "oneof", `kind must be "text", "data" or "file", got %q`, clip.Runes(kind, 40))
}

// objectOrNil checks an optional member that must be a JSON object.
func objectOrNil(raw json.RawMessage, field string) (json.RawMessage, *rpcError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, invalidParam(field, "object", "%s must be a JSON object", field[strings.LastIndex(field, ".")+1:])
	}
	return append(json.RawMessage(nil), raw...), nil
}

// decodeInto unmarshals raw into dst, turning a type error into -32602
// naming the field under prefix.
func decodeInto(raw json.RawMessage, dst any, prefix string) *rpcError {
	err := json.Unmarshal(raw, dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := prefix
		if te.Field != "" {
			field = prefix + "." + te.Field
		}
		rule := jsonTypeRule(te.Type.Kind().String())
		return invalidParam(field, rule, "must be a%s %s, got %s", article(rule), rule, te.Value)
	}
	return invalidParam(prefix, "json", "%v", err)
}

// jsonTypeRule names the JSON type a Go kind decodes from.
func jsonTypeRule(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	}
	return "object"
}

func article(word string) string {
	if strings.IndexByte("aeiou", word[0]) >= 0 {
		return "n"
	}
	return ""
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

package a2a

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
)

// methodSpec is a JSON-RPC method: the protocol version of its answers and
// its implementation (params is nil or a JSON object).
type methodSpec struct {
	version version
	call    func(h *handler, ctx context.Context, v version, params json.RawMessage) (any, error)
}

// lookupMethod finds a method of A2A 1.0 (PascalCase) or A2A 0.3 (slash
// names). The two sets are disjoint.
func lookupMethod(name string) (methodSpec, bool) {
	switch name {
	// A2A 1.0
	case "SendMessage":
		return methodSpec{v10, (*handler).sendMessage}, true
	case "GetTask":
		return methodSpec{v10, (*handler).getTask}, true
	case "CancelTask":
		return methodSpec{v10, (*handler).cancelTask}, true
	case "ListTasks":
		return methodSpec{v10, (*handler).listTasks}, true
	case "SendStreamingMessage", "SubscribeToTask":
		return methodSpec{v10, unsupportedStreaming}, true
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		return methodSpec{v10, unsupportedPush}, true
	case "GetExtendedAgentCard":
		return methodSpec{v10, unsupportedExtendedCard}, true
	// A2A 0.3
	case "message/send":
		return methodSpec{v03, (*handler).sendMessage}, true
	case "tasks/get":
		return methodSpec{v03, (*handler).getTask}, true
	case "tasks/cancel":
		return methodSpec{v03, (*handler).cancelTask}, true
	case "message/stream", "tasks/resubscribe":
		return methodSpec{v03, unsupportedStreaming}, true
	case "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		return methodSpec{v03, unsupportedPush}, true
	case "agent/getAuthenticatedExtendedCard":
		return methodSpec{v03, unsupportedExtendedCard}, true
	}
	return methodSpec{}, false
}

func unsupportedStreaming(*handler, context.Context, version, json.RawMessage) (any, error) {
	return nil, newError(CodeUnsupportedOperation,
		"unsupported operation: this agent does not stream (capabilities.streaming is false); use SendMessage or message/send, which answer with the completed task")
}

func unsupportedPush(*handler, context.Context, version, json.RawMessage) (any, error) {
	return nil, newError(CodePushNotificationNotSupported,
		"push notifications are not supported (capabilities.pushNotifications is false): tasks complete before the reply")
}

func unsupportedExtendedCard(*handler, context.Context, version, json.RawMessage) (any, error) {
	return nil, newError(CodeUnsupportedOperation,
		"unsupported operation: there is no extended agent card; the public card at /.well-known/agent-card.json is complete")
}

// sendParams are the params of SendMessage / message/send (both shapes).
type sendParams struct {
	Message       json.RawMessage `json:"message"`
	Configuration *struct {
		AcceptedOutputModes []string `json:"acceptedOutputModes"`
		HistoryLength       *int     `json:"historyLength"`
		// ReturnImmediately (1.0) and Blocking (0.3) change nothing: the
		// task is complete when the reply is sent.
		ReturnImmediately          *bool           `json:"returnImmediately"`
		Blocking                   *bool           `json:"blocking"`
		TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig"`
		PushNotificationConfig     json.RawMessage `json:"pushNotificationConfig"`
	} `json:"configuration"`
	Metadata json.RawMessage `json:"metadata"`
	Tenant   string          `json:"tenant"`
}

// sendMessage answers a message with a task: a discovery task, completed;
// the task of a paid call, in the state its payment reached.
func (h *handler) sendMessage(ctx context.Context, v version, params json.RawMessage) (any, error) {
	if params == nil {
		return nil, invalidParam("params", "required", "params with a message are required")
	}
	var p sendParams
	if e := decodeInto(params, &p, "params"); e != nil {
		return nil, e
	}
	if _, e := objectOrNil(p.Metadata, "params.metadata"); e != nil {
		return nil, e
	}
	msg, e := decodeMessage(p.Message)
	if e != nil {
		return nil, e
	}
	var historyLength *int
	modes := outputModes{}
	if c := p.Configuration; c != nil {
		for _, f := range [...]struct {
			name string
			raw  json.RawMessage
		}{{"taskPushNotificationConfig", c.TaskPushNotificationConfig}, {"pushNotificationConfig", c.PushNotificationConfig}} {
			if !isNull(f.raw) {
				return nil, newError(CodePushNotificationNotSupported,
					"push notifications are not supported (capabilities.pushNotifications is false): drop configuration.%s; the reply carries the completed task", f.name)
			}
		}
		if c.HistoryLength != nil && *c.HistoryLength < 0 {
			return nil, invalidParam("params.configuration.historyLength", "min", "historyLength must be 0 or more")
		}
		historyLength = c.HistoryLength
		modes = outputModes(c.AcceptedOutputModes)
	}
	if !modes.acceptsAny() {
		return nil, newError(CodeContentTypeNotSupported,
			"content type not supported: none of acceptedOutputModes (%s) is produced; this agent answers %s and %s",
			clip.Runes(strings.Join(modes, ", "), 120), mediaJSON, mediaText)
	}
	var t *task
	var err error
	if msg.taskID != "" {
		found, ok := h.store.get(msg.taskID)
		if !ok {
			return nil, newError(CodeTaskNotFound, "task not found: %q (unknown or expired); send the message without taskId to start a new task", clip.Runes(msg.taskID, 80)).
				with("taskId", clip.Runes(msg.taskID, 80))
		}
		switch {
		case found.sale != nil:
			if t, err = h.continueSale(ctx, found, msg, modes); err != nil {
				return nil, err
			}
		case found.terminal():
			return nil, newError(CodeUnsupportedOperation,
				"unsupported operation: task %q is already completed and takes no more messages; send a new message without taskId", clip.Runes(msg.taskID, 80)).
				with("taskId", clip.Runes(msg.taskID, 80))
		}
	}
	if t == nil {
		if t, err = h.newTask(ctx, msg, modes); err != nil {
			return nil, err
		}
	}
	rendered := t.render(v, historyLength)
	if v == v10 {
		return struct {
			Task any `json:"task"`
		}{rendered}, nil
	}
	return rendered, nil
}

// newTask answers a message that starts a task: a paid call (a data part
// naming a tool) or a discovery request, completed at once.
func (h *handler) newTask(ctx context.Context, msg message, modes outputModes) (*task, error) {
	req, e := parseRequest(msg)
	if e != nil {
		return nil, e
	}
	if req.isSale() {
		return h.startSale(ctx, msg, req, modes)
	}
	arts, e := h.answer(ctx, req)
	if e != nil {
		return nil, e
	}
	t := &task{id: h.newID(), contextID: msg.contextID, state: stateCompleted, timestamp: h.now()}
	if t.contextID == "" {
		t.contextID = h.newID()
	}
	for i := range arts {
		arts[i].parts = modes.filter(arts[i].parts)
	}
	t.artifacts = arts
	msg.taskID, msg.contextID = t.id, t.contextID
	t.history = []message{msg}
	h.store.put(t)
	return t, nil
}

// taskIDParams are the params of GetTask, CancelTask and their 0.3 names.
type taskIDParams struct {
	ID            *string         `json:"id"`
	HistoryLength *int            `json:"historyLength"`
	Metadata      json.RawMessage `json:"metadata"`
	Tenant        string          `json:"tenant"`
}

// findTask decodes a task-id request and looks the task up.
func (h *handler) findTask(params json.RawMessage) (*task, taskIDParams, error) {
	var p taskIDParams
	if params == nil {
		return nil, p, invalidParam("params", "required", "params with the task id are required")
	}
	if e := decodeInto(params, &p, "params"); e != nil {
		return nil, p, e
	}
	if p.ID == nil || *p.ID == "" {
		return nil, p, invalidParam("params.id", "required", "id (the task id) is required")
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, p, invalidParam("params.historyLength", "min", "historyLength must be 0 or more")
	}
	if _, e := objectOrNil(p.Metadata, "params.metadata"); e != nil {
		return nil, p, e
	}
	t, ok := h.store.get(*p.ID)
	if !ok {
		return nil, p, newError(CodeTaskNotFound, "task not found: %q (unknown, or older than the store keeps)", clip.Runes(*p.ID, 80)).
			with("taskId", clip.Runes(*p.ID, 80))
	}
	return t, p, nil
}

// getTask returns a stored task (a bare Task in both versions).
func (h *handler) getTask(_ context.Context, v version, params json.RawMessage) (any, error) {
	t, p, err := h.findTask(params)
	if err != nil {
		return nil, err
	}
	return t.render(v, p.HistoryLength), nil
}

// cancelTask cancels a paid call waiting for its payment (the payment is
// declined); every other task is complete, failed, canceled or being paid,
// so not cancelable.
func (h *handler) cancelTask(_ context.Context, v version, params json.RawMessage) (any, error) {
	t, p, err := h.findTask(params)
	if err != nil {
		return nil, err
	}
	if t.state == stateInputRequired && t.sale != nil {
		next := *t
		next.timestamp = h.now()
		next.history = append(slices.Clone(t.history), *t.status)
		next.state = stateCanceled
		next.status = h.agentMessage(&next, &x402a2a.Metadata{Status: x402a2a.StatusPaymentRejected, Receipts: t.sale.receipts}, "Canceled by the client; nothing was charged.")
		if h.store.swap(t, &next) {
			return next.render(v, p.HistoryLength), nil
		}
		if t, err = h.current(t); err != nil {
			return nil, err
		}
	}
	what := "already " + t.state.name(v03)
	if t.state == stateWorking {
		what = "being paid"
	}
	return nil, newError(CodeTaskNotCancelable, "task not cancelable: task %q is %s", clip.Runes(t.id, 80), what).with("taskId", clip.Runes(t.id, 80))
}

// listParams are the params of ListTasks (1.0).
type listParams struct {
	ContextID            string          `json:"contextId"`
	Status               *string         `json:"status"`
	PageSize             *int            `json:"pageSize"`
	PageToken            string          `json:"pageToken"`
	HistoryLength        *int            `json:"historyLength"`
	StatusTimestampAfter *string         `json:"statusTimestampAfter"`
	IncludeArtifacts     *bool           `json:"includeArtifacts"`
	Tenant               string          `json:"tenant"`
	Metadata             json.RawMessage `json:"metadata"`
}

// listPage is the ListTasks result; all four members are required.
type listPage struct {
	Tasks         []task10 `json:"tasks"`
	NextPageToken string   `json:"nextPageToken"`
	PageSize      int      `json:"pageSize"`
	TotalSize     int      `json:"totalSize"`
}

// Page sizes of ListTasks (A2A 1.0: 1–100, 50 when unset).
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// validStates are the 1.0 task state names a ListTasks filter may use.
func validState(s string) bool {
	switch s {
	case "TASK_STATE_UNSPECIFIED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED",
		"TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED":
		return true
	}
	return false
}

// listTasks answers an empty, complete page after checking the params:
// requests carry no caller identity, and A2A requires a list to show only
// the caller's own tasks, so none can be listed. A task is read by its id.
func (h *handler) listTasks(_ context.Context, _ version, params json.RawMessage) (any, error) {
	var p listParams
	if params != nil {
		if e := decodeInto(params, &p, "params"); e != nil {
			return nil, e
		}
	}
	size := defaultPageSize
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > maxPageSize {
			return nil, invalidParam("params.pageSize", "range", "pageSize must be between 1 and %d", maxPageSize)
		}
		size = *p.PageSize
	}
	if p.PageToken != "" {
		return nil, invalidParam("params.pageToken", "token", "pageToken %q was not issued by this server", clip.Runes(p.PageToken, 40))
	}
	if p.Status != nil && !validState(*p.Status) {
		return nil, invalidParam("params.status", "oneof", "status must be a TASK_STATE_* name, got %q", clip.Runes(*p.Status, 40))
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, invalidParam("params.historyLength", "min", "historyLength must be 0 or more")
	}
	if p.StatusTimestampAfter != nil {
		if _, err := time.Parse(time.RFC3339Nano, *p.StatusTimestampAfter); err != nil {
			return nil, invalidParam("params.statusTimestampAfter", "datetime", "statusTimestampAfter must be an ISO 8601 timestamp such as 2026-01-02T03:04:05Z")
		}
	}
	if _, e := objectOrNil(p.Metadata, "params.metadata"); e != nil {
		return nil, e
	}
	return listPage{Tasks: []task10{}, PageSize: size}, nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

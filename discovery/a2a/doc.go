// Package a2a serves svc's free discovery surface over the Agent2Agent
// protocol: JSON-RPC 2.0 at POST /a2a, speaking A2A 1.0 and A2A 0.3 on the
// same endpoint, hand-written on the standard library.
//
// # Versions
//
// The method name picks the protocol version of the answer: the 1.0 methods
// are PascalCase (SendMessage, GetTask, CancelTask, ListTasks, ...), the 0.3
// methods are slash-separated (message/send, tasks/get, tasks/cancel, ...);
// the two sets are disjoint. Each method is answered in its version's
// shapes: task states TASK_STATE_COMPLETED or completed, roles ROLE_USER or
// user, parts without or with a "kind" tag, SendMessage's result wrapped as
// {"task": ...} in 1.0 and a bare task tagged "kind":"task" in 0.3, error
// data as an array of google.rpc.ErrorInfo / BadRequest objects in 1.0 and a
// plain object in 0.3.
//
// The A2A-Version request header (or the A2A-Version query parameter) is
// read as Major.Minor, the patch ignored; missing or empty means 0.3, as
// A2A 1.0 requires. A version other than 0.3 or 1.0 is refused with -32009
// (VersionNotSupported). A supported version that disagrees with the
// method's family is tolerated: the method name decides.
//
// Both handlers accept both input shapes: roles "user" or "ROLE_USER";
// parts {"kind":"text","text":...} or {"text":...}, {"kind":"data",...} or
// {"data":...}. File parts (0.3 kind "file", 1.0 "url" or "raw") are refused
// with -32005 (ContentTypeNotSupported).
//
// # What the agent does
//
// A message is answered synchronously with a completed task:
//
//   - text parts describing a need ("Find a tool to profile CSV data"), or a
//     data part {"query": "...", "input": {...}}, yield an artifact named
//     "call-plan" holding the route plan of discovery.Surfaces.Route as a
//     data part (a JSON object) and a one-line text summary: the best tool,
//     its price, its URL and how to pay (HTTP 402, then x402 v2);
//   - a message asking for the catalog ("catalog", "list tools", "what tools
//     do you have?"), or a data part {"action": "catalog", "q", "category",
//     "offset", "limit"}, yields an artifact named "catalog" holding a
//     catalog page; "show the gold tools" lists the tools tagged gold (or,
//     when no tool carries the tag, those the finder relates to the word);
//   - a data part {"action": "find", "query", "limit"} yields the ranked
//     matches (artifact "matches"), and {"action": "tool", "key"} the
//     catalog item of one tool (artifact "tool").
//
// The task gets a new UUID; its contextId is the message's contextId when
// given, else a new UUID. The history holds the caller's message (its
// taskId and contextId filled in); historyLength 0 leaves it out.
//
// A data part allows only those members (a typo is -32602 naming it), and
// a message holds at most one. A text part that is a JSON object is read as
// a data part, for clients that can only send text (the agent card's own
// examples include one). Every artifact is a JSON object in a data part
// (mediaType application/json in 1.0) followed by a text part (text/plain);
// configuration.acceptedOutputModes, when not empty, keeps only the parts
// it accepts (wildcards such as application/* work) and is -32005 when it
// accepts neither.
//
// Tasks are kept in a bounded in-memory store (by default 1000 tasks,
// 64 MiB, one hour, least recently used evicted first) for GetTask and
// tasks/get; an unknown or expired task is -32001 (TaskNotFound). A task is
// complete when it is created, so CancelTask is -32002 (TaskNotCancelable)
// and a message naming an existing task is -32004 (UnsupportedOperation).
// ListTasks answers an empty, complete page: calls carry no identity, so no
// caller may list another's tasks (a task id is the capability to read it).
// Streaming (message/stream, SendStreamingMessage, tasks/resubscribe,
// SubscribeToTask) and the extended agent card are -32004, push
// notification configuration is -32003; the agent card says
// capabilities.streaming and pushNotifications are false.
//
// # Transport rules
//
// Only POST is served (405 otherwise). The body must be JSON
// (Content-Type application/json, any application/*+json, or none; 415
// otherwise) and at most Options.MaxBodyBytes (1 MiB by default; 413 past
// it, with a -32600 body). Malformed JSON is -32700; a batch (JSON array),
// a missing "jsonrpc":"2.0", method or id, or an id that is not a string,
// number or null is -32600; an unknown method is -32601; bad params are
// -32602 with the offending field named. JSON-RPC errors are sent with HTTP
// 200 and Content-Type application/json; the request id is echoed byte for
// byte.
//
// The agent card itself (/.well-known/agent-card.json) is served by package
// discovery; this package only answers /a2a.
package a2a

// Package a2a serves svc's discovery surface over the Agent2Agent
// protocol, and sells the paid tools there with the A2A x402 payments
// extension: JSON-RPC 2.0 at POST /a2a, speaking A2A 1.0 and A2A 0.3 on the
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
// A discovery message is answered synchronously with a completed task (a
// paid call, a data part {"tool", "input"}, is described under "Selling the
// tools"):
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
// tasks/get; an unknown or expired task is -32001 (TaskNotFound). A
// discovery task is complete when it is created, so CancelTask is -32002
// (TaskNotCancelable) and a message naming it is -32004
// (UnsupportedOperation).
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
// # Selling the tools: the x402 extension
//
// With Options.Engine (the payment engine shared with HTTP and MCP), every
// tool of Options.Shop is sold through the A2A x402 payments extension
// v0.2 (github.com/google-agentic-commerce/a2a-x402, spec/v0.2/spec.md),
// standalone flow, x402 v2 exact payments in USDC. The agent card
// (package discovery's, from the tool descriptors) declares ExtensionURI in
// capabilities.extensions with required false (the discovery skills are
// free) and has one skill per tool, whose id is the tool key. A client
// activates the extension by listing ExtensionURI in the A2A-Extensions
// header (X-A2A-Extensions in 0.3); the answer then carries both headers
// with the URI. Activation is not required: a paid call works without it.
//
// A paid call is one data part naming the tool (its key, or its operation
// id) and holding its input, the members of the tool's input schema (GET
// tools' query parameters included):
//
//	{"tool": "risk-levels", "input": {"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04}}
//
// The steps, the same in 1.0 and 0.3 (state names in each version's
// spelling):
//
//  1. The input is decoded and validated with the tool's own rules: a
//     broken rule is -32602 naming the field under
//     message.parts[i].data.input (message.parts[i].data.tool for an unknown
//     tool); no task is created and no payment is asked for.
//  2. For the terminal-backed tools, the terminal's availability
//     (the shop's sell.Shop.Check): down, the task is failed, with a text saying
//     that no payment was asked for, and no x402 metadata. Then the symbol
//     the call names (the same check): one the terminal does not serve
//     is -32602 naming message.parts[i].data.input.symbol (rule
//     unknown_symbol), as in step 1.
//  3. Without payment: the task is input-required; its status message (role
//     agent) carries x402.payment.status "payment-required" and
//     x402.payment.required, the engine's x402 v2 PaymentRequired (the
//     same terms as over HTTP; the resource is ResourceURL, the A2A
//     endpoint with the tool key as fragment). The task keeps the tool and
//     the decoded input, so the paying message needs only the payment.
//  4. The client sends a message on that task (taskId) whose metadata holds
//     x402.payment.payload, the signed x402 PaymentPayload (an object, or
//     the base64 of its JSON), and x402.payment.status "payment-submitted"
//     (optional). The payment engine checks it, reserves the
//     authorization, runs the tool, journals the answer and settles: the
//     task is completed, with the tool's output as the artifact named after
//     the tool (a data part, then the same JSON as text) and a status
//     message with x402.payment.status "payment-completed" and
//     x402.payment.receipts (every x402 SettleResponse of the task, failed
//     attempts included).
//
// The engine's fingerprint of the call (Fingerprint, seller.Fingerprint of
// "a2a", the tool key and the canonical JSON of the decoded input of the
// first message): an authorization used over HTTP or MCP, or for another
// tool or input, is refused here (the same input formatted otherwise is
// the same call), and journal rows say transport "a2a".
// The first message may carry the payment already (paying up front): the
// call is then paid at once. x402.payment.status "payment-rejected" on the
// waiting task, or CancelTask, cancels it (canceled; nothing is charged).
//
// Failures set x402.payment.status "payment-failed", x402.payment.error (a
// PaymentError* code) and a failed receipt, with the reason in the status
// message's text:
//
//   - refused payments (bad signature or payload: INVALID_SIGNATURE; out of
//     its time window: EXPIRED_PAYMENT; used already, for another call or
//     transport, or failed too often: DUPLICATE_NONCE; another network:
//     NETWORK_MISMATCH; another amount: INVALID_AMOUNT; other terms:
//     INVALID_PAYMENT), a refused settlement (SETTLEMENT_FAILED,
//     INSUFFICIENT_FUNDS) and a failed tool (SERVICE_FAILED) leave the task
//     failed: start a new task;
//   - what the same payment may get later leaves the task input-required,
//     with x402.payment.required again: the payment in progress elsewhere
//     (PAYMENT_IN_PROGRESS), the journal or facilitator not answering
//     (PAYMENT_UNAVAILABLE), a settlement not yet recorded
//     (SETTLEMENT_PENDING), a payer whose paid calls kept running for
//     nothing lately, or who has too many running, throttled by the engine
//     (PAYMENT_UNAVAILABLE, reason payer_throttled), the terminal or the
//     tool unavailable (SERVICE_UNAVAILABLE). Nothing was charged; send the same payment on
//     the same task again.
//
// The same payment sent again to the completed task gets the task as it
// is; sent on a new task for the same call, it gets the recorded answer
// (the engine replays it, no second settlement). While a payment is being
// processed the task is working and another message gets it as it stands;
// CancelTask is then -32002. Kept tasks hold no payment signature: the
// payload is dropped from the history.
//
// The agent card served at /.well-known/agent-card.json and
// /.well-known/agent.json is discovery's (AgentCardHandler): it declares the
// extension and a skill per paid tool, and discovery's catalog, OpenAPI
// document, skill.md and manifests say how each tool is bought over HTTP,
// MCP and A2A.
package a2a

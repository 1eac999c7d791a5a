// Buys svc's tools over A2A with the x402 extension (a2a-x402 v0.2,
// standalone flow) and prints one JSON report on stdout (the Go test in
// discovery/a2a checks it).
//
//   E2E_PRIVATE_KEY=0x… node a2a-pay.mjs <mode> <baseURL> <scenario>
//
// mode:     v1   @a2a-js/sdk 1.3.0 client (SendMessage, GetTask; A2A-Version 1.0),
//                the extension activated with the A2A-Extensions header
//           v03  raw A2A 0.3 JSON-RPC over fetch (message/send, tasks/get; no
//                A2A-Version header), the extension activated with X-A2A-Extensions
// scenario: pay   the card; a paid call (payment required, then paid); the same
//                 payment again to the task, to a new task for the same call and
//                 to a call with another input; tampered payments; invalid input
//           down  a gold tool while the server's terminal is down
//
// Payloads are built by the official x402 client (@x402/core x402Client with
// @x402/evm's exact scheme and a viem local account) from the task's
// x402.payment.required; nothing touches a chain. The key is never printed.
import * as v1 from '@a2a-js/sdk';
import * as v1client from '@a2a-js/sdk/client';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { privateKeyToAccount } from 'viem/accounts';

const EXTENSION = 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2';
const STATUS = 'x402.payment.status';
const REQUIRED = 'x402.payment.required';
const PAYLOAD = 'x402.payment.payload';
const RECEIPTS = 'x402.payment.receipts';
const ERROR = 'x402.payment.error';

const [mode, baseURL, scenario] = process.argv.slice(2);

function die(err) {
  process.stdout.write(JSON.stringify({ error: String(err?.stack || err) }) + '\n');
  process.exit(1);
}

if (!['v1', 'v03'].includes(mode) || !baseURL || !['pay', 'down'].includes(scenario)) {
  die('usage: E2E_PRIVATE_KEY=0x... node a2a-pay.mjs <v1|v03> <baseURL> <pay|down>');
}
const key = process.env.E2E_PRIVATE_KEY;
if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key)) die('E2E_PRIVATE_KEY must be 0x followed by 64 hex digits');

let counter = 0;
const nextId = () => `pay-${mode}-${++counter}`;

// ---- The A2A side: one client per mode, with the same four operations. ----

// normTask reads a task in either shape as {id, state, text, metadata, artifacts}.
function normTask(r) {
  let state = r.status?.state;
  if (typeof state === 'number') state = v1.TaskState[state] ?? String(state);
  const message = r.status?.message;
  const text = (message?.parts || []).map((p) => (p.content ? p.content.value : p.text)).join(' ');
  return {
    id: r.id,
    contextId: r.contextId,
    state,
    text,
    metadata: message?.metadata ?? null,
    artifacts: (r.artifacts || []).map((a) => ({
      name: a.name,
      parts: (a.parts || []).map((p) =>
        p.content ? { kind: p.content.$case, value: p.content.value } : { kind: p.kind, value: p.kind === 'data' ? p.data : p.text },
      ),
    })),
  };
}

// rpcError reads a JSON-RPC error thrown by the SDK or returned raw.
function rpcError(err) {
  return {
    code: err?.envelopeCode ?? err?.code ?? err?.errorResponse?.error?.code ?? null,
    message: String(err?.message ?? err),
    data: err?.data ?? err?.errorResponse?.error?.data ?? null,
  };
}

class RawError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.code;
    this.data = error.data ?? null;
  }
}

async function makeA2A() {
  if (mode === 'v1') {
    const client = await new v1client.ClientFactory().createFromUrl(baseURL);
    const options = { serviceParameters: v1client.ServiceParameters.createFrom(undefined, v1client.withA2AExtensions(EXTENSION)) };
    const toPart = (p) => (p.data !== undefined ? { content: { $case: 'data', value: p.data } } : { content: { $case: 'text', value: p.text } });
    return {
      protocolVersion: client.protocolVersion ?? null,
      async send({ parts, taskId, metadata }) {
        const message = { messageId: nextId(), role: v1.Role.ROLE_USER, parts: parts.map(toPart) };
        if (taskId) message.taskId = taskId;
        if (metadata) message.metadata = metadata;
        const res = await client.sendMessage({ message }, options);
        return normTask(res);
      },
      async get(id) {
        return normTask(await client.getTask({ id }, options));
      },
    };
  }
  // Raw A2A 0.3 JSON-RPC, as a hand-written 0.3 agent would send it.
  let rpcId = 0;
  async function call(method, params) {
    const id = ++rpcId;
    const res = await fetch(`${baseURL}/a2a`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-A2A-Extensions': EXTENSION },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    });
    const body = await res.json();
    if (body.jsonrpc !== '2.0' || body.id !== id) throw new Error(`bad envelope ${JSON.stringify(body)}`);
    if (body.error) throw new RawError(body.error);
    return { result: body.result, activated: res.headers.get('x-a2a-extensions') };
  }
  const toPart = (p) => (p.data !== undefined ? { kind: 'data', data: p.data } : { kind: 'text', text: p.text });
  return {
    protocolVersion: '0.3',
    async send({ parts, taskId, metadata }) {
      const message = { kind: 'message', messageId: nextId(), role: 'user', parts: parts.map(toPart) };
      if (taskId) message.taskId = taskId;
      if (metadata) message.metadata = metadata;
      const { result, activated } = await call('message/send', { message, configuration: { blocking: true } });
      if (result.kind !== 'task') throw new Error(`not a task: ${JSON.stringify(result)}`);
      return { ...normTask(result), activated };
    },
    async get(id) {
      return normTask((await call('tasks/get', { id })).result);
    },
  };
}

// ---- The x402 side: the official client signs what the task asks for. ----

const account = privateKeyToAccount(key);
const payer = new x402Client();
payer.register('eip155:*', new ExactEvmScheme(account));

async function sign(task) {
  const required = task.metadata?.[REQUIRED];
  if (!required) throw new Error(`task ${task.id} carries no ${REQUIRED}: ${JSON.stringify(task)}`);
  return payer.createPaymentPayload(required);
}

const paying = (taskId, payload) => ({
  taskId,
  parts: [{ text: 'Here is the payment authorization.' }],
  metadata: { [STATUS]: 'payment-submitted', [PAYLOAD]: payload },
});

// summary keeps what the Go test checks of a task.
function summary(t) {
  const m = t.metadata || {};
  const data = t.artifacts?.[0]?.parts?.find((p) => p.kind === 'data');
  return {
    id: t.id,
    state: t.state,
    text: t.text,
    status: m[STATUS] ?? null,
    error: m[ERROR] ?? null,
    required: m[REQUIRED] ?? null,
    receipts: m[RECEIPTS] ?? null,
    artifact: t.artifacts?.[0]?.name ?? null,
    output: data?.value ?? null,
    activated: t.activated ?? null,
  };
}

async function expectError(fn) {
  try {
    const t = await fn();
    return { unexpectedTask: summary(t) };
  } catch (err) {
    return rpcError(err);
  }
}

const riskInput = { entry: 3500, direction: 'long', slPct: 0.05, tpPct: 0.04 };
const otherInput = { entry: 3600, direction: 'short', slPct: 0.05, tpPct: 0.04 };
const ask = (tool, input) => ({ parts: [{ data: { tool, input } }] });

async function pay(a2a) {
  const report = { mode, scenario, protocolVersion: a2a.protocolVersion };
  const card = await (await fetch(`${baseURL}/.well-known/agent-card.json`)).json();
  report.card = {
    extensions: card.capabilities?.extensions ?? [],
    skills: (card.skills || []).map((s) => s.id),
  };

  const first = await a2a.send(ask('risk-levels', riskInput));
  report.first = summary(first);
  const payload = await sign(first);
  report.payloadVersion = payload.x402Version;
  const paid = await a2a.send(paying(first.id, payload));
  report.paid = summary(paid);
  report.got = summary(await a2a.get(first.id));

  // The same payment: to the completed task, to a new task for the same
  // call, to a call with another input.
  report.replaySameTask = summary(await a2a.send(paying(first.id, payload)));
  const second = await a2a.send(ask('risk-levels', riskInput));
  report.replayNewTask = summary(await a2a.send(paying(second.id, payload)));
  const other = await a2a.send(ask('risk-levels', otherInput));
  report.reuse = summary(await a2a.send(paying(other.id, payload)));

  // Tampered payments, each on a task of its own.
  const tampered = async (edit) => {
    const t = await a2a.send(ask('risk-levels', riskInput));
    const p = await sign(t);
    edit(p);
    return summary(await a2a.send(paying(t.id, p)));
  };
  report.tamperValue = await tampered((p) => {
    p.payload.authorization.value = (BigInt(p.payload.authorization.value) - 1n).toString();
  });
  report.tamperSignature = await tampered((p) => {
    const s = p.payload.signature;
    p.payload.signature = s.slice(0, 10) + (s[10] === 'a' ? 'b' : 'a') + s.slice(11);
  });
  report.tamperAccepted = await tampered((p) => {
    p.accepted = { ...p.accepted, amount: '1' };
  });

  // Invalid input: an error naming the field, no payment requirement.
  report.invalid = await expectError(() => a2a.send(ask('risk-levels', { ...riskInput, direction: 'sideways' })));
  report.unknownMember = await expectError(() => a2a.send(ask('risk-levels', { ...riskInput, leverage: 10 })));
  return report;
}

async function down(a2a) {
  const report = { mode, scenario };
  report.down = summary(await a2a.send(ask('xau-quote', {})));
  return report;
}

async function main() {
  const a2a = await makeA2A();
  const report = scenario === 'pay' ? await pay(a2a) : await down(a2a);
  process.stdout.write(JSON.stringify(report) + '\n');
}

main().catch(die);

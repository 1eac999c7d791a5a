// Drives svc's A2A endpoint with an official A2A JavaScript client and prints
// one JSON report on stdout (the Go test in discovery/a2a checks it).
//
//   node a2a-client.mjs <mode> <baseURL> [cardPath]
//
// mode: v1        @a2a-js/sdk 1.3.0, default ClientFactory
//       v1-legacy @a2a-js/sdk 1.3.0 with legacyCompat enabled (card resolver and JSON-RPC transport)
//       v03       @a2a-js/sdk 0.3.14 (npm alias a2a-sdk-03), default ClientFactory
//
// Steps: fetch the agent card (createFromUrl), send a text message describing a
// need, get the task back, send a data part asking for the catalog, and get an
// unknown task (expects TaskNotFound).
import * as v1 from '@a2a-js/sdk';
import * as v1client from '@a2a-js/sdk/client';
import * as v03client from 'a2a-sdk-03/client';

const [mode, baseURL, cardPath] = process.argv.slice(2);

function die(err) {
  process.stdout.write(JSON.stringify({ error: String(err?.stack || err) }) + '\n');
  process.exit(1);
}

if (!mode || !baseURL) die('usage: node a2a-client.mjs <v1|v1-legacy|v03> <baseURL> [cardPath]');

let counter = 0;
const nextId = () => `e2e-${mode}-${++counter}`;

// Parts in the SDK's own shapes.
function textPart(text) {
  return mode === 'v03' ? { kind: 'text', text } : { content: { $case: 'text', value: text } };
}
function dataPart(data) {
  return mode === 'v03' ? { kind: 'data', data } : { content: { $case: 'data', value: data } };
}
function userMessage(parts) {
  const message = { messageId: nextId(), parts };
  if (mode === 'v03') {
    message.kind = 'message';
    message.role = 'user';
  } else {
    message.role = v1.Role.ROLE_USER;
  }
  return message;
}

// normPart reads a part in either SDK shape as {kind, value}.
function normPart(p) {
  if (p?.content) return { kind: p.content.$case, value: p.content.value, mediaType: p.mediaType || '' };
  if (p?.kind === 'text') return { kind: 'text', value: p.text };
  if (p?.kind === 'data') return { kind: 'data', value: p.data };
  return { kind: 'unknown', value: p };
}

// normResult reads a Task (or Message) in either SDK shape.
function normResult(r) {
  if (!r || typeof r !== 'object') return { kind: typeof r };
  const isTask = r.kind === 'task' || (r.status !== undefined && r.id !== undefined);
  if (!isTask) return { kind: r.kind || 'message', raw: r };
  let state = r.status?.state;
  if (typeof state === 'number') state = v1.TaskState[state] ?? String(state);
  return {
    kind: 'task',
    id: r.id,
    contextId: r.contextId,
    state,
    timestamp: r.status?.timestamp ?? null,
    artifacts: (r.artifacts || []).map((a) => ({
      artifactId: a.artifactId,
      name: a.name,
      parts: (a.parts || []).map(normPart),
    })),
    history: (r.history || []).map((m) => ({
      messageId: m.messageId,
      taskId: m.taskId,
      contextId: m.contextId,
      role: typeof m.role === 'number' ? v1.Role[m.role] ?? String(m.role) : m.role,
      parts: (m.parts || []).map(normPart),
    })),
  };
}

async function makeClient() {
  if (mode === 'v03') {
    return new v03client.ClientFactory().createFromUrl(baseURL, cardPath);
  }
  if (mode === 'v1') {
    return new v1client.ClientFactory().createFromUrl(baseURL, cardPath);
  }
  if (mode === 'v1-legacy') {
    const legacyCompat = { enabled: true };
    const options = v1client.ClientFactoryOptions.createFrom(v1client.ClientFactoryOptions.default, {
      transports: [new v1client.JsonRpcTransportFactory({ legacyCompat })],
      cardResolver: new v1client.DefaultAgentCardResolver({ legacyCompat }),
    });
    return new v1client.ClientFactory(options).createFromUrl(baseURL, cardPath);
  }
  throw new Error(`unknown mode ${mode}`);
}

async function main() {
  const client = await makeClient();
  const report = { mode, sdkProtocolVersion: client.protocolVersion ?? null };

  const sent = await client.sendMessage({ message: userMessage([textPart('Find a tool to profile CSV data')]) });
  report.send = normResult(sent);

  const got = await client.getTask({ id: report.send.id });
  report.get = normResult(got);

  const catalog = await client.sendMessage({ message: userMessage([dataPart({ action: 'catalog', limit: 3 })]) });
  report.catalog = normResult(catalog);

  try {
    await client.getTask({ id: 'no-such-task' });
    report.notFound = { name: 'none', message: 'getTask of an unknown task did not throw' };
  } catch (err) {
    report.notFound = {
      name: err?.name ?? null,
      className: err?.constructor?.name ?? null,
      code: err?.envelopeCode ?? err?.code ?? err?.errorResponse?.error?.code ?? null,
      message: String(err?.message ?? err),
    };
  }
  process.stdout.write(JSON.stringify(report) + '\n');
}

main().catch(die);

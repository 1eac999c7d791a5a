// Buys svc's paid tools over MCP (POST /mcp) with real x402 MCP clients and
// prints one JSON report on stdout for the Go test (discovery/mcp) to check.
//
//   E2E_PRIVATE_KEY=0x… node pay.mjs <client> <url> <plan.json>
//
// <client> is one of
//   v2-pin      @modelcontextprotocol/client pinned to 2026-07-28; the
//               tool-result binding, payloads built with @x402/core + @x402/evm
//   v2-ext      the same client advertising the org.x402/payment extension:
//               the extension binding (resultType payment_required)
//   v2-legacy   @modelcontextprotocol/client in its legacy mode (initialize)
//   v1          @modelcontextprotocol/sdk 1.x (initialize, 2025-11-25)
//   cf-v2       Cloudflare's agents/x402 withX402Client around the v2 client
//               (2026-07-28): it reads _meta["x402/error"] and pays with a
//               base64 _meta["x402/payment"]
//   cf-v1       withX402Client around the v1 client (legacy era)
//
// <plan.json> is {"steps": [{kind, name, arguments}, ...]}; kinds:
//   pay     call without payment, pay the requirement, call again
//   replay  send the last payment again, as it was sent, with these arguments
//   tamper  sign a fresh payment, lower authorization.value, call (not cf-*)
//   unpaid  one call without payment (invalid arguments, terminal down)
//
// The report: {client, era, protocolVersion, capabilities, tools (the
// tools/list result as the client presents it), steps: [{kind, name,
// arguments, unpaid, paid, error}], http: [{jsonrpc, name, status,
// hasPayment, paymentType}]} or {error}. unpaid is the answer to the call
// without payment (for v2-ext the raw payment_required result the client
// refuses to decode), paid the answer to the call with payment.
import { readFile } from 'node:fs/promises';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';

const [clientKind, url, planFile] = process.argv.slice(2);
const NETWORK = 'eip155:8453';

// Every HTTP exchange; the raw tools/call answers are kept for v2-ext, whose
// client refuses to decode a payment_required result.
const http = [];
let lastToolAnswer;
let lastPaymentSent;
const recordingFetch = async (input, init = {}) => {
  let msg;
  if (typeof init.body === 'string') {
    try {
      msg = JSON.parse(init.body);
    } catch {
      msg = undefined;
    }
  }
  const res = await fetch(input, init);
  const payment = msg?.params?._meta?.['x402/payment'];
  if (payment !== undefined) {
    lastPaymentSent = payment;
  }
  http.push({
    jsonrpc: msg?.method,
    name: msg?.params?.name,
    status: res.status,
    hasPayment: payment !== undefined,
    paymentType: payment === undefined ? '' : typeof payment,
  });
  if (msg?.method === 'tools/call') {
    lastToolAnswer = await res.clone().json().catch(() => undefined);
  }
  return res;
};

async function connect() {
  const clientInfo = { name: `svc-e2e-pay-${clientKind}`, version: '1.0.0' };
  if (clientKind === 'v1' || clientKind === 'cf-v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client(clientInfo);
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
    await client.connect(transport);
    return { client, era: 'legacy', protocolVersion: transport.protocolVersion };
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const modes = { 'v2-pin': { pin: '2026-07-28' }, 'v2-ext': { pin: '2026-07-28' }, 'v2-legacy': 'legacy', 'cf-v2': { pin: '2026-07-28' } };
  if (!(clientKind in modes)) {
    throw new Error(`unknown client ${clientKind}`);
  }
  const options = { versionNegotiation: { mode: modes[clientKind] } };
  if (clientKind === 'v2-ext') {
    options.capabilities = { extensions: { 'org.x402/payment': {} } };
  }
  const client = new Client(clientInfo, options);
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
  await client.connect(transport);
  return { client, era: client.getProtocolEra(), protocolVersion: client.getNegotiatedProtocolVersion() };
}

// The payment requirement of an unpaid answer, per the x402 MCP transport:
// structuredContent first, content[0].text second, or the extension
// binding's paymentRequired.
function requirementOf(result) {
  if (result?.resultType === 'payment_required') {
    return result.paymentRequired;
  }
  if (!result?.isError) {
    return undefined;
  }
  const sc = result.structuredContent;
  if (sc && typeof sc === 'object' && 'x402Version' in sc && 'accepts' in sc) {
    return sc;
  }
  try {
    const parsed = JSON.parse(result.content?.[0]?.text ?? '');
    return parsed && 'x402Version' in parsed && 'accepts' in parsed ? parsed : undefined;
  } catch {
    return undefined;
  }
}

async function main() {
  const key = process.env.E2E_PRIVATE_KEY;
  if (!key) {
    throw new Error('E2E_PRIVATE_KEY is not set');
  }
  const account = privateKeyToAccount(key);
  const payer = new x402Client();
  payer.register(NETWORK, new ExactEvmScheme(account));

  const plan = JSON.parse(await readFile(planFile, 'utf8'));
  const conn = await connect();
  let { client } = conn;
  // withX402Client replaces the client's own callTool: keep the original.
  const rawCallTool = conn.client.callTool.bind(conn.client);
  const cloudflare = clientKind.startsWith('cf-');
  if (cloudflare) {
    const { withX402Client } = await import('agents/x402');
    client = withX402Client(client, { account, network: NETWORK });
  }
  const report = {
    client: clientKind,
    era: conn.era,
    protocolVersion: conn.protocolVersion,
    capabilities: conn.client.getServerCapabilities(),
  };
  report.tools = await client.listTools();

  // One tools/call (through Cloudflare's wrapper unless raw); a
  // payment_required answer (v2-ext) is read off the wire.
  const call = async (name, args, meta, raw = false) => {
    const params = { name, arguments: args };
    if (meta) {
      params._meta = meta;
    }
    try {
      return cloudflare && !raw ? await client.callTool(null, params) : await rawCallTool(params);
    } catch (err) {
      if (clientKind === 'v2-ext' && String(err?.message ?? '').includes('payment_required')) {
        return lastToolAnswer?.result;
      }
      throw err;
    }
  };

  let lastPayment;
  report.steps = [];
  for (const step of plan.steps) {
    const out = { kind: step.kind, name: step.name, arguments: step.arguments };
    report.steps.push(out);
    try {
      switch (step.kind) {
        case 'unpaid':
          out.unpaid = await call(step.name, step.arguments);
          break;
        case 'pay':
        case 'tamper': {
          if (cloudflare && step.kind === 'tamper') {
            throw new Error("Cloudflare's client builds its payments itself: nothing to tamper with");
          }
          if (cloudflare) {
            out.paid = await call(step.name, step.arguments); // pays by itself
            break;
          }
          out.unpaid = await call(step.name, step.arguments);
          const required = requirementOf(out.unpaid);
          if (!required) {
            throw new Error('no payment requirement in the unpaid answer');
          }
          const payment = await payer.createPaymentPayload(required);
          if (step.kind === 'tamper') {
            payment.payload.authorization.value = '1';
          } else {
            lastPayment = payment;
          }
          out.paid = await call(step.name, step.arguments, { 'x402/payment': payment });
          break;
        }
        case 'replay': {
          // The payment last sent as it was sent: the object built here, or
          // the base64 token Cloudflare's wrapper built (sent without the
          // wrapper, which would pay anew when refused).
          const payment = cloudflare ? lastPaymentSent : lastPayment;
          if (!payment) {
            throw new Error('replay before any payment');
          }
          out.paid = await call(step.name, step.arguments, { 'x402/payment': payment }, true);
          break;
        }
        default:
          throw new Error(`unknown step ${step.kind}`);
      }
    } catch (err) {
      out.error = String(err?.message ?? err);
    }
  }
  await conn.client.close();
  report.http = http;
  return report;
}

main().then(
  (report) => {
    process.stdout.write(JSON.stringify(report));
  },
  (err) => {
    process.stdout.write(JSON.stringify({ error: String(err?.stack ?? err), http }));
    process.exitCode = 1;
  },
);

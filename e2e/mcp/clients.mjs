// Drives the svc MCP endpoint with an official TypeScript MCP client and
// prints one JSON report on stdout for the Go test (discovery/mcp) to check.
//
//   node clients.mjs <client> <url> <calls.json>
//
// <client> is one of
//   v2-pin     @modelcontextprotocol/client, versionNegotiation {pin: '2026-07-28'}
//   v2-auto    @modelcontextprotocol/client, versionNegotiation 'auto' (probes server/discover)
//   v2-legacy  @modelcontextprotocol/client, default mode (plain initialize)
//   v1         @modelcontextprotocol/sdk 1.x (initialize, 2025-11-25 at most)
// <calls.json> is a file holding [{name, arguments}, ...]: the tools to call.
//
// The report: {client, era, protocolVersion, serverInfo, instructions,
// tools (the tools/list result), calls [{name, arguments, result | error}],
// http [{method, jsonrpc, status, protocolVersionHeader, mcpMethodHeader,
// sessionId}]} or {error}.
import { readFile } from 'node:fs/promises';

const [clientKind, url, callsFile] = process.argv.slice(2);

// Every HTTP exchange, to show which era was spoken on the wire.
const http = [];
const recordingFetch = async (input, init = {}) => {
  const headers = new Headers(init.headers ?? {});
  let jsonrpc;
  if (typeof init.body === 'string') {
    try {
      jsonrpc = JSON.parse(init.body).method;
    } catch {
      jsonrpc = undefined;
    }
  }
  const res = await fetch(input, init);
  http.push({
    method: init.method ?? 'GET',
    jsonrpc,
    status: res.status,
    protocolVersionHeader: headers.get('mcp-protocol-version') ?? '',
    mcpMethodHeader: headers.get('mcp-method') ?? '',
    sessionId: res.headers.get('mcp-session-id') ?? '',
  });
  return res;
};

async function connect() {
  const clientInfo = { name: `svc-e2e-${clientKind}`, version: '1.0.0' };
  if (clientKind === 'v1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client(clientInfo);
    const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
    await client.connect(transport);
    return {
      client,
      era: 'legacy',
      protocolVersion: transport.protocolVersion,
      sessionId: transport.sessionId ?? '',
    };
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const modes = { 'v2-pin': { pin: '2026-07-28' }, 'v2-auto': 'auto', 'v2-legacy': 'legacy' };
  if (!(clientKind in modes)) {
    throw new Error(`unknown client ${clientKind}`);
  }
  const client = new Client(clientInfo, { versionNegotiation: { mode: modes[clientKind] } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
  await client.connect(transport);
  return {
    client,
    era: client.getProtocolEra(),
    protocolVersion: client.getNegotiatedProtocolVersion(),
    sessionId: transport.sessionId ?? '',
  };
}

async function main() {
  const calls = JSON.parse(await readFile(callsFile, 'utf8'));
  const { client, era, protocolVersion, sessionId } = await connect();
  const report = {
    client: clientKind,
    era,
    protocolVersion,
    sessionId,
    serverInfo: client.getServerVersion(),
    instructions: client.getInstructions() ?? '',
    capabilities: client.getServerCapabilities(),
  };
  report.tools = await client.listTools();
  report.calls = [];
  for (const call of calls) {
    try {
      report.calls.push({ ...call, result: await client.callTool(call) });
    } catch (err) {
      report.calls.push({ ...call, error: String(err?.message ?? err), code: err?.code });
    }
  }
  await client.close();
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

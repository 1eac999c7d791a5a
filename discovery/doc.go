// Package discovery implements the free surfaces of svc, all generated from
// the tools catalog so nothing is written twice:
//
//   - a natural-language finder (GET /api/find, the index of
//     discovery/finder) that ranks the paid tools for a need written in
//     plain words ("stop loss for a long at 3500", "is the london market
//     open", "chek my etherium adress", "prix de l'or") with tokenisation,
//     Snowball stemming, the finder's own synonyms of each tool (in several
//     languages), field weights and typo tolerance, scoring down the words
//     of a need a tool does not explain;
//   - a router (POST /api/route) returning a machine-ready call plan, with the
//     input validated by the tool's own rules before anyone pays; it (and
//     /api/try) picks the finder's best match only from MinMatchScore up
//     (MinCorrectedScore for a match through typo corrections alone), so
//     that an off-topic need ("order a pizza", "book a flight to London")
//     gets "no match" and near misses rather than a paid call;
//   - the paginated catalog (GET /api/catalog) and a free preview (GET /api/try);
//   - documents built once at start-up (discovery/documents): /openapi.json
//     (OpenAPI 3.1.0 with x-payment-info and x-transports), /skill.md, the
//     x402 payment manifest, the router, distribution and magnet
//     manifests, the A2A agent card (the A2A x402 extension and one skill
//     per paid tool), and the entry documents: a landing page at / (HTML
//     for a browser, the llms.txt Markdown or JSON for other clients, by
//     Accept), /llms.txt, /robots.txt and /server.json, the MCP registry's
//     description of the remote MCP endpoint. They declare the free routes
//     of the other components as each describes them (Config.FreeRoutes,
//     discovery/routedoc);
//   - aggregate, privacy-safe statistics (discovery/stats), read from the
//     same counters as the server's Prometheus metrics.
//
// Every paid tool is sold on the same x402 terms over three transports:
// HTTP (its REST route), MCP (POST /mcp, tools/call with its operation id)
// and A2A (POST /a2a, a data part {"tool": key, "input": {...}} with the
// A2A x402 extension). documents.Transports, derived from the tool
// descriptors alone, says so in every catalog item, route plan and
// document.
//
// Service implements Surfaces, the interface the protocol adapters in
// discovery/mcp (POST /mcp) and discovery/a2a (POST /a2a) answer through.
// Every absolute URL comes from Config.BaseURL, never from a request.
package discovery

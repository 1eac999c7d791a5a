package discovery

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/wire"
	"golang.org/x/net/html"
)

// discGet sends GET base+path with an Accept header and returns the answer
// and its body.
func discGet(t *testing.T, base, path, accept string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// htmlLinks returns the href of every <a> of a page.
func htmlLinks(t *testing.T, page string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatalf("the landing page does not parse: %v", err)
	}
	var links []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "a" {
			for _, a := range n.Attr {
				if a.Key == "href" {
					links = append(links, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return links
}

func TestLandingPageForBrowsers(t *testing.T) {
	s, base := discServe(t, nil, nil)
	resp, page := discGet(t, base, "/", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Vary") != "Accept" {
		t.Fatalf("GET / for a browser: %d %q vary %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Vary"))
	}
	links := htmlLinks(t, page)
	for _, want := range []string{"/api/catalog", "/openapi.json", "/skill.md", "/mcp", "/.well-known/agent-card.json", "/llms.txt", "/server.json", "/.well-known/x402"} {
		found := false
		for _, l := range links {
			if l == base+want {
				found = true
			}
		}
		if !found {
			t.Errorf("the landing page does not link %s: %v", want, links)
		}
	}
	// Every linked document this package serves answers 200.
	for _, l := range links {
		path := strings.TrimPrefix(l, base)
		if path == wire.PathMCP || path == wire.PathA2A {
			continue // POST endpoints, served by discovery/mcp and discovery/a2a
		}
		if r, _ := discGet(t, base, path, ""); r.StatusCode != 200 {
			t.Errorf("link %s: %d", l, r.StatusCode)
		}
	}
	for _, tl := range s.tools {
		if !strings.Contains(page, tl.Name) || !strings.Contains(page, base+tl.Path) {
			t.Errorf("the landing page lacks tool %s", tl.Key)
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "https://cdn") {
		t.Error("the landing page loads scripts or external resources")
	}
	if !strings.Contains(page, "Dev mode.") {
		t.Error("the dev-mode landing page does not say so")
	}
}

func TestLandingPageForProgramsAndText(t *testing.T) {
	s, base := discServe(t, func(c *Config) { c.Facilitator = "https://facilitator.example"; c.DevMode = false }, nil)
	for _, accept := range []string{"", "*/*", "application/json", "text/html;q=0.1, application/json"} {
		resp, body := discGet(t, base, "/", accept)
		var l documents.Landing
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != jsonContentType {
			t.Fatalf("Accept %q: %d %q", accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatalf("Accept %q: %v", accept, err)
		}
		if l.Name != "svc" || l.DevMode || len(l.Tools) != len(s.tools) || l.Links["openapi"] != base+documents.PathOpenAPI || l.Links["mcpServer"] != base+documents.PathMCPServer {
			t.Fatalf("Accept %q: %+v", accept, l)
		}
		for i, tl := range l.Tools {
			if tl.Key != s.tools[i].Key || tl.PriceUSD != s.tools[i].Price || tl.URL != base+s.tools[i].Path || tl.Summary == "" {
				t.Errorf("tool %d: %+v", i, tl)
			}
		}
	}
	resp, body := discGet(t, base, "/", "text/markdown")
	llms, _ := s.Document(documents.PathLLMs)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/markdown") || body != string(llms) {
		t.Fatalf("Accept text/markdown: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The root pattern is the root alone.
	if r, _ := discGet(t, base, "/no-such-page", ""); r.StatusCode != 404 {
		t.Fatalf("GET /no-such-page: %d", r.StatusCode)
	}
	// 304 on a matching ETag, per variant.
	r1, _ := discGet(t, base, "/", "text/html")
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.Header.Set("Accept", "text/html")
	req.Header.Set("If-None-Match", r1.Header.Get("ETag"))
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", r2.StatusCode)
	}
}

func TestLLMsTxtAndRobots(t *testing.T) {
	s, base := discServe(t, nil, nil)
	resp, llms := discGet(t, base, documents.PathLLMs, "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("llms.txt: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := strings.Split(llms, "\n")
	if lines[0] != "# svc" || !strings.HasPrefix(lines[2], "> ") {
		t.Fatalf("llms.txt does not open with a title and a summary:\n%s", llms)
	}
	linkRE := regexp.MustCompile(`^- \[[^\]]+\]\((https?://[^)]+)\)`)
	links := map[string]bool{}
	for _, l := range lines {
		if m := linkRE.FindStringSubmatch(l); m != nil {
			links[strings.SplitN(m[1], "?", 2)[0]] = true
		}
	}
	for _, tl := range s.tools {
		if !links[base+tl.Path] {
			t.Errorf("llms.txt does not link %s", tl.Path)
		}
	}
	for _, p := range []string{documents.PathSkill, documents.PathOpenAPI, "/api/catalog", wire.PathMCP, wire.PathAgentCard, documents.PathMCPServer} {
		if !links[base+p] {
			t.Errorf("llms.txt does not link %s", p)
		}
	}

	resp, robots := discGet(t, base, documents.PathRobots, "")
	if resp.StatusCode != 200 || !strings.Contains(robots, "User-agent: *\nAllow: /\n") {
		t.Fatalf("robots.txt: %d\n%s", resp.StatusCode, robots)
	}
	for _, tl := range s.tools {
		if !strings.Contains(robots, "\nDisallow: "+tl.Path+"\n") {
			t.Errorf("robots.txt does not keep crawlers off %s", tl.Path)
		}
	}
	for _, p := range []string{"/api/catalog", documents.PathOpenAPI, documents.PathSkill, documents.PathLLMs} {
		if strings.Contains(robots, "Disallow: "+p+"\n") {
			t.Errorf("robots.txt disallows %s", p)
		}
	}
}

func TestMCPServerJSON(t *testing.T) {
	_, base := discServe(t, nil, nil)
	resp, body := discGet(t, base, documents.PathMCPServer, "")
	if resp.StatusCode != 200 {
		t.Fatalf("server.json: %d", resp.StatusCode)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	// The registry schema's constraints (server.schema.json).
	name, _ := doc["name"].(string)
	desc, _ := doc["description"].(string)
	if doc["$schema"] != documents.MCPServerSchema || !regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`).MatchString(name) ||
		len(name) < 3 || len(name) > 200 || desc == "" || len(desc) > 100 || doc["version"] != DefaultVersion {
		t.Fatalf("server.json breaks the registry schema: %s", body)
	}
	remotes, _ := doc["remotes"].([]any)
	if len(remotes) != 1 {
		t.Fatalf("remotes: %v", doc["remotes"])
	}
	r := remotes[0].(map[string]any)
	if r["type"] != "streamable-http" || r["url"] != base+wire.PathMCP {
		t.Fatalf("remote: %v", r)
	}
	repo := doc["repository"].(map[string]any)
	if repo["url"] != documents.RepositoryURL || repo["source"] != "github" {
		t.Fatalf("repository: %v", repo)
	}

}

package discovery

import (
	"net/http"
)

// Document returns the bytes of a static document by path
// (documents.PathOpenAPI, PathSkill, PathX402Manifest, ...) and whether it
// exists. The bytes are a copy.
func (s *Service) Document(path string) ([]byte, bool) { return s.docs.Document(path) }

// AgentCard returns the bytes of the agent card served at
// /.well-known/agent-card.json and /.well-known/agent.json (a copy), for the
// A2A surface to reuse.
func (s *Service) AgentCard() []byte { return s.docs.AgentCard() }

// AgentCardETag returns the strong ETag of the agent card.
func (s *Service) AgentCardETag() string { return s.docs.AgentCardETag() }

// AgentCardHandler serves the agent card with Cache-Control, ETag and
// If-None-Match (the handler of both well-known paths).
func (s *Service) AgentCardHandler() http.Handler { return s.docs.AgentCardHandler() }

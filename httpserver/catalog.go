package httpserver

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/tools"
)

// Bounds of the catalog listing's paging parameters.
const (
	catalogDefaultLimit = 50
	catalogMaxLimit     = 100
)

// CatalogPage is the body of GET /api/catalog (interface specification,
// section 4): the tools from Offset, at most Limit of them, out of Total.
type CatalogPage struct {
	OK     bool         `json:"ok"`
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	Limit  int          `json:"limit"`
	Items  []tools.Item `json:"items"`
}

// catalog answers GET /api/catalog?offset=&limit= (offset ≥ 0, default 0;
// limit 1–100, default 50).
func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, limit := 0, catalogDefaultLimit
	var fields []svc.FieldError
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			fields = append(fields, svc.FieldError{Field: "offset", Rule: "integer", Message: "offset: must be an integer"})
		case n < 0:
			fields = append(fields, svc.FieldError{Field: "offset", Rule: "min", Message: "offset: must be at least 0"})
		default:
			offset = n
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			fields = append(fields, svc.FieldError{Field: "limit", Rule: "integer", Message: "limit: must be an integer"})
		case n < 1 || n > catalogMaxLimit:
			fields = append(fields, svc.FieldError{Field: "limit", Rule: "range", Message: "limit: must be between 1 and " + strconv.Itoa(catalogMaxLimit)})
		default:
			limit = n
		}
	}
	if len(fields) > 0 {
		p := NewProblem(http.StatusBadRequest, CodeInvalidInput, "invalid input")
		p.Errors = fields
		WriteProblem(w, r, p)
		return
	}
	page := CatalogPage{OK: true, Total: len(s.paid), Offset: offset, Limit: limit, Items: []tools.Item{}}
	for i := offset; i < len(s.paid) && i < offset+limit; i++ {
		page.Items = append(page.Items, s.paid[i].tool.Item())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=60")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(page)
}

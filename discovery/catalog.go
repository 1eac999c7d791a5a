package discovery

import (
	"context"
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/tools"
)

// Catalog returns a page of the catalog: the tools in catalog order (that
// of the tools package's descriptor table) or, when q is given, in the finder's
// rank order for q (tools sharing nothing with q are left out). category,
// when given, keeps the tools carrying that tag (case is ignored). Total
// counts the tools after filtering; Items holds at most limit of them from
// offset on.
//
// offset ≥ 0; limit 1–100, 0 meaning DefaultCatalogLimit (50); q at most
// 500 characters; category at most 64. A broken bound is a KindInvalid
// *svc.Error naming the field.
func (s *Service) Catalog(ctx context.Context, q, category string, offset, limit int) (CatalogPage, error) {
	if err := ctx.Err(); err != nil {
		return CatalogPage{}, err
	}
	var errs []svc.FieldError
	if offset < 0 {
		errs = append(errs, svc.FieldError{Field: "offset", Rule: "min", Message: fmt.Sprintf("offset: must be at least 0, got %d", offset)})
	}
	if limit == 0 {
		limit = DefaultCatalogLimit
	}
	if limit < 1 || limit > MaxCatalogLimit {
		errs = append(errs, svc.FieldError{Field: "limit", Rule: "range", Message: fmt.Sprintf("limit: must be between 1 and %d, got %d", MaxCatalogLimit, limit)})
	}
	if n := len([]rune(q)); n > MaxQueryLen {
		errs = append(errs, svc.FieldError{Field: "q", Rule: "max", Message: fmt.Sprintf("q: must be at most %d characters, got %d", MaxQueryLen, n)})
	}
	if n := len([]rune(category)); n > MaxCategoryLen {
		errs = append(errs, svc.FieldError{Field: "category", Rule: "max", Message: fmt.Sprintf("category: must be at most %d characters, got %d", MaxCategoryLen, n)})
	}
	if len(errs) > 0 {
		return CatalogPage{}, &svc.Error{Kind: svc.KindInvalid, Message: "invalid input", Fields: errs}
	}

	var order []int
	if strings.TrimSpace(q) == "" {
		order = make([]int, len(s.tools))
		for i := range order {
			order[i] = i
		}
	} else {
		for _, m := range s.finder.Find(q, 0) {
			if i, ok := s.index[m.Key]; ok {
				order = append(order, i)
			}
		}
	}
	category = strings.ToLower(strings.TrimSpace(category))
	if category != "" {
		kept := order[:0:0]
		for _, i := range order {
			for _, tag := range s.tools[i].Tags {
				if strings.ToLower(tag) == category {
					kept = append(kept, i)
					break
				}
			}
		}
		order = kept
	}
	page := CatalogPage{OK: true, Total: len(order), Offset: offset, Limit: limit, Items: []CatalogItem{}}
	for j := offset; j < len(order) && j < offset+limit; j++ {
		page.Items = append(page.Items, s.catalogItem(order[j]))
	}
	return page, nil
}

// Categories returns the tags tools can be filtered by, sorted.
func (s *Service) Categories() []string { return s.cfg.Catalog.Categories() }

// catalogGroup is a group of tools in previews, the agent card and
// skill.md: the tools whose first tag is Tag, in catalog order.
type catalogGroup struct {
	Tag   string
	Title string
	Tools []int
}

// catalogGroupTitle names a group of tools (trading, gold, data,
// utility, crypto) by the first tag of its tools.
func catalogGroupTitle(tag string) string {
	switch tag {
	case "trading":
		return "Trading sessions and calculators (session state, risk levels, strategy grade, tick P&L, OHLCV statistics)"
	case "gold":
		return "Gold (XAUUSD) quote, bars and market state from a read-only trading terminal"
	case "data":
		return "Local data profiling of supplied CSV text and JSON (nothing retained, no external call)"
	case "utility":
		return "Utilities (JWT decoding without verification, JavaScript regular expressions)"
	case "crypto":
		return "Crypto utilities (EVM address syntax and EIP-55 checksum)"
	}
	return "Tools tagged " + tag
}

// groups returns the tool groups, in the order their first tool appears.
func (s *Service) groups() []catalogGroup {
	var out []catalogGroup
	at := map[string]int{}
	for i, t := range s.tools {
		tag := "other"
		if len(t.Tags) > 0 {
			tag = strings.ToLower(t.Tags[0])
		}
		j, ok := at[tag]
		if !ok {
			j = len(out)
			at[tag] = j
			out = append(out, catalogGroup{Tag: tag, Title: catalogGroupTitle(tag)})
		}
		out[j].Tools = append(out[j].Tools, i)
	}
	return out
}

// CatalogItem is a tool in the catalog and the finder's answers: the
// catalog view plus how to buy it over HTTP, MCP and A2A.
type CatalogItem struct {
	tools.Item
	Transports documents.Transports `json:"transports"`
}

// buildTransports derives the transports of every tool, in catalog order.
func (s *Service) buildTransports() error {
	s.buy = make([]documents.Transports, len(s.tools))
	for i, t := range s.tools {
		tr, err := documents.NewTransports(s.base, t, s.terms(i))
		if err != nil {
			return err
		}
		s.buy[i] = tr
	}
	return nil
}

// catalogItem returns the catalog item of tool i with its transports (a
// copy the caller may keep).
func (s *Service) catalogItem(i int) CatalogItem {
	return CatalogItem{Item: s.item(i), Transports: s.buy[i].Clone()}
}

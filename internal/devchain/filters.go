package devchain

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rpc"
)

// filterTimeout is how long a filter nobody polls lives (go-ethereum's
// default).
const filterTimeout = 5 * time.Minute

// maxFilters bounds the filters installed at once.
const maxFilters = 1024

// errFilterNotFound is the answer for an unknown or expired filter, in
// go-ethereum's words.
var errFilterNotFound = errors.New("filter not found")

// filter is a polled filter: of logs (crit) or of new blocks.
type filter struct {
	blocks bool
	crit   filterArgs
	last   uint64 // the last block polled
	polled time.Time
}

// filters are the installed filters of eth_newFilter and
// eth_newBlockFilter.
type filters struct {
	mu sync.Mutex
	m  map[rpc.ID]*filter
}

// install adds f, dropping the filters nobody polled for filterTimeout.
func (fs *filters) install(f *filter) (rpc.ID, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[rpc.ID]*filter{}
	}
	for id, old := range fs.m {
		if time.Since(old.polled) > filterTimeout {
			delete(fs.m, id)
		}
	}
	if len(fs.m) >= maxFilters {
		return "", errors.New("too many filters installed: uninstall some (eth_uninstallFilter)")
	}
	id := rpc.NewID()
	f.polled = time.Now()
	fs.m[id] = f
	return id, nil
}

// take returns the filter id and, with mark, marks it polled up to head;
// ok is false when there is no such filter.
func (fs *filters) take(id rpc.ID, head uint64, mark bool) (f filter, ok bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p, ok := fs.m[id]
	if !ok || time.Since(p.polled) > filterTimeout {
		delete(fs.m, id)
		return filter{}, false
	}
	f = *p
	p.polled = time.Now()
	if mark {
		p.last = head
	}
	return f, true
}

// NewFilter is eth_newFilter: a filter of the logs of the blocks sealed
// from now on that crit matches.
func (a *ethAPI) NewFilter(crit filterArgs) (rpc.ID, error) {
	if crit.BlockHash != nil {
		return "", errors.New("invalid argument: a filter takes fromBlock/toBlock, not blockHash")
	}
	return a.c.filters.install(&filter{crit: crit, last: a.c.bc.CurrentBlock().Number.Uint64()})
}

// NewBlockFilter is eth_newBlockFilter: a filter of the blocks sealed from
// now on.
func (a *ethAPI) NewBlockFilter() (rpc.ID, error) {
	return a.c.filters.install(&filter{blocks: true, last: a.c.bc.CurrentBlock().Number.Uint64()})
}

// UninstallFilter is eth_uninstallFilter.
func (a *ethAPI) UninstallFilter(id rpc.ID) bool {
	fs := &a.c.filters
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, ok := fs.m[id]
	delete(fs.m, id)
	return ok
}

// GetFilterChanges is eth_getFilterChanges: the hashes of the blocks, or
// the logs, since the last poll.
func (a *ethAPI) GetFilterChanges(ctx context.Context, id rpc.ID) (any, error) {
	head := a.c.bc.CurrentBlock().Number.Uint64()
	f, ok := a.c.filters.take(id, head, true)
	if !ok {
		return nil, errFilterNotFound
	}
	if f.blocks {
		hashes := []common.Hash{}
		for n := f.last + 1; n <= head; n++ {
			hashes = append(hashes, a.c.bc.GetCanonicalHash(n))
		}
		return hashes, nil
	}
	from, to := a.c.logRange(f.crit)
	if f.crit.FromBlock == nil || from <= f.last {
		from = f.last + 1
	}
	if f.crit.ToBlock == nil || to > head {
		to = head
	}
	if from > to {
		return []any{}, nil
	}
	return a.c.logs(ctx, f.crit, from, to)
}

// GetFilterLogs is eth_getFilterLogs: every log the filter's criteria
// match.
func (a *ethAPI) GetFilterLogs(ctx context.Context, id rpc.ID) (any, error) {
	f, ok := a.c.filters.take(id, 0, false)
	if !ok || f.blocks {
		return nil, errFilterNotFound
	}
	return a.GetLogs(ctx, f.crit)
}

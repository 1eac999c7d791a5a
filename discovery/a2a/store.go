package a2a

import (
	"container/list"
	"sync"
	"time"
)

// taskStore keeps recent tasks for GetTask / tasks/get: at most maxTasks
// tasks and about maxBytes of them, each for ttl after its creation; when
// full, the least recently used task is evicted. Safe for concurrent use.
type taskStore struct {
	maxTasks int
	maxBytes int64
	ttl      time.Duration
	now      func() time.Time

	mu        sync.Mutex
	lru       *list.List // of *storeEntry, most recently used at the front
	byID      map[string]*list.Element
	bytes     int64
	lastSweep time.Time
}

type storeEntry struct {
	t       *task
	expires time.Time
	size    int64
}

func newTaskStore(maxTasks int, maxBytes int64, ttl time.Duration, now func() time.Time) *taskStore {
	return &taskStore{maxTasks: maxTasks, maxBytes: maxBytes, ttl: ttl, now: now, lru: list.New(), byID: map[string]*list.Element{}}
}

// put stores t (replacing a task with the same id) and evicts what no
// longer fits. A task larger than the whole budget is not kept.
func (s *taskStore) put(t *task) {
	size := t.size()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[t.id]; ok {
		s.remove(el)
	}
	if size > s.maxBytes {
		return
	}
	s.sweep(now)
	s.byID[t.id] = s.lru.PushFront(&storeEntry{t: t, expires: now.Add(s.ttl), size: size})
	s.bytes += size
	for s.lru.Len() > s.maxTasks || s.bytes > s.maxBytes {
		s.remove(s.lru.Back())
	}
}

// get returns the task with that id unless it expired, and marks it used.
func (s *taskStore) get(id string) (*task, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	e := el.Value.(*storeEntry)
	if !now.Before(e.expires) {
		s.remove(el)
		return nil, false
	}
	s.lru.MoveToFront(el)
	return e.t, true
}

// swap replaces the stored task old (the same pointer, unexpired) with
// next, keeping its expiry, and reports whether it did: a caller that read
// old moves the task on only if nobody else did meanwhile.
func (s *taskStore) swap(old, next *task) bool {
	size := next.size()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[old.id]
	if !ok || next.id != old.id {
		return false
	}
	e := el.Value.(*storeEntry)
	if e.t != old || !now.Before(e.expires) {
		return false
	}
	s.bytes += size - e.size
	e.t, e.size = next, size
	s.lru.MoveToFront(el)
	for s.bytes > s.maxBytes && s.lru.Len() > 1 {
		s.remove(s.lru.Back())
	}
	return true
}

// len is the number of tasks held (expired ones included until swept).
func (s *taskStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// sweep drops expired tasks, at most once per tenth of the TTL (O(n), n
// bounded by maxTasks). Callers hold mu.
func (s *taskStore) sweep(now time.Time) {
	if now.Sub(s.lastSweep) < s.ttl/10 {
		return
	}
	s.lastSweep = now
	for el := s.lru.Front(); el != nil; {
		next := el.Next()
		if !now.Before(el.Value.(*storeEntry).expires) {
			s.remove(el)
		}
		el = next
	}
}

// remove drops an element. Callers hold mu.
func (s *taskStore) remove(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.lru.Remove(el)
	delete(s.byID, e.t.id)
	s.bytes -= e.size
}

package a2a

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func storeTask(id string, textBytes int) *task {
	return &task{id: id, contextID: "c", state: stateCompleted, history: []message{{id: "m", role: roleUser, parts: []part{{text: strings.Repeat("x", textBytes)}}}}}
}

func TestStoreTTL(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := newTaskStore(10, 1<<20, time.Hour, clock.now)
	s.put(storeTask("a", 1))
	clock.advance(59 * time.Minute)
	if _, ok := s.get("a"); !ok {
		t.Fatal("task gone before its TTL")
	}
	s.put(storeTask("b", 1))
	clock.advance(time.Minute) // a is exactly one hour old
	if _, ok := s.get("a"); ok {
		t.Fatal("task kept past its TTL (reading does not extend it)")
	}
	if _, ok := s.get("b"); !ok {
		t.Fatal("b expired early")
	}
	// A put sweeps the expired tasks.
	clock.advance(2 * time.Hour)
	s.put(storeTask("c", 1))
	if n := s.len(); n != 1 {
		t.Fatalf("%d tasks after the sweep, want 1", n)
	}
}

func TestStoreLRU(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	s := newTaskStore(3, 1<<20, time.Hour, clock.now)
	for _, id := range []string{"a", "b", "c"} {
		s.put(storeTask(id, 1))
	}
	s.get("a") // a is now the most recently used; b the least
	s.put(storeTask("d", 1))
	for id, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := s.get(id); ok != want {
			t.Fatalf("%s kept = %v, want %v", id, ok, want)
		}
	}
	// Replacing a task keeps one entry.
	s.put(storeTask("d", 2))
	if n := s.len(); n != 3 {
		t.Fatalf("%d tasks", n)
	}
}

func TestStoreByteBudget(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	one := storeTask("t0", 1000).size()
	s := newTaskStore(1000, 3*one, time.Hour, clock.now)
	for i := range 5 {
		s.put(storeTask(fmt.Sprintf("t%d", i), 1000))
	}
	if n := s.len(); n != 3 {
		t.Fatalf("%d tasks in a budget of 3", n)
	}
	if _, ok := s.get("t1"); ok {
		t.Fatal("the oldest tasks were not evicted")
	}
	if s.bytes > 3*one {
		t.Fatalf("store holds %d bytes, budget %d", s.bytes, 3*one)
	}
	// A task larger than the whole budget is not kept, and evicts nothing.
	s.put(storeTask("huge", 10000))
	if _, ok := s.get("huge"); ok {
		t.Fatal("a task over the budget was kept")
	}
	if n := s.len(); n != 3 {
		t.Fatalf("%d tasks", n)
	}
}

func TestHandlerStoreOptions(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)}
	env := newTestEnv(t, Options{MaxTasks: 2, TaskTTL: time.Minute, Now: clock.now})
	var ids []string
	for i := range 3 {
		task := decodeTask(t, v03, env.call(t, "-", "message/send", obj{"message": textMessage(v03, fmt.Sprint(i), "decode a JWT")}), true)
		if task.Status.Timestamp != "2026-05-06T07:08:09.123Z" {
			t.Fatalf("timestamp %q", task.Status.Timestamp)
		}
		ids = append(ids, task.ID)
	}
	env.callErr(t, "-", "tasks/get", obj{"id": ids[0]}, CodeTaskNotFound) // evicted (MaxTasks 2)
	env.call(t, "1.0", "GetTask", obj{"id": ids[2]})
	clock.advance(time.Minute)
	env.callErr(t, "1.0", "GetTask", obj{"id": ids[2]}, CodeTaskNotFound) // expired
	// Defaults.
	d := newTestEnv(t, Options{})
	if d.h.store.maxTasks != DefaultMaxTasks || d.h.store.ttl != time.Hour || d.h.store.maxBytes != DefaultMaxStoreBytes {
		t.Fatalf("defaults: %d tasks, %s, %d bytes", d.h.store.maxTasks, d.h.store.ttl, d.h.store.maxBytes)
	}
}

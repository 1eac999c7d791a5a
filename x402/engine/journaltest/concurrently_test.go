package journaltest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestConcurrentlyCallsEveryIndexOnceAndCollectsErrors(t *testing.T) {
	var seen [50]atomic.Int32
	errs := Concurrently(50, time.Minute, func(i int) error {
		seen[i].Add(1)
		if i%10 == 0 {
			return fmt.Errorf("call %d", i)
		}
		return nil
	})
	for i := range seen {
		if seen[i].Load() != 1 {
			t.Fatalf("index %d called %d times", i, seen[i].Load())
		}
	}
	if len(errs) != 5 {
		t.Fatalf("%d errors, want 5: %v", len(errs), errs)
	}
}

func TestConcurrentlyIsBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	errs := Concurrently(2, 10*time.Millisecond, func(int) error { <-release; return errors.New("late") })
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one saying the calls still run", errs)
	}
}

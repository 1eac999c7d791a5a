package journaltest

import (
	"fmt"
	"sync"
	"time"
)

// Concurrently runs f(0..n-1) concurrently, released together, and
// returns the non-nil errors, or one error if the calls take longer than
// waitFor (they are left running). It is how the suite runs its
// concurrent cases; the suites of stores that hold a journal use it for
// theirs.
func Concurrently(n int, waitFor time.Duration, f func(i int) error) []error {
	var wg sync.WaitGroup
	start := make(chan struct{})
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := f(i); err != nil {
				errc <- err
			}
		}()
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitFor):
		return []error{fmt.Errorf("%d concurrent calls still running after %v", n, waitFor)}
	}
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errs
}

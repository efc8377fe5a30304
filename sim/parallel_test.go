package sim

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelNamesTheFirstError: of several failing calls, parallel
// returns the error of the lowest index, however the calls were scheduled,
// and a call that stops because of the first error's cancellation does not
// hide the real one.
func TestParallelNamesTheFirstError(t *testing.T) {
	cases := []struct {
		name    string
		workers int
		fail    map[int]time.Duration // index: how long before it fails
		want    int
	}{
		{"the later fault fails first", 4, map[int]time.Duration{5: 20 * time.Millisecond, 6: 0, 7: 0}, 5},
		{"one worker", 1, map[int]time.Duration{9: 0, 3: 0}, 3},
		{"many workers", 16, map[int]time.Duration{40: 0, 12: 15 * time.Millisecond, 30: 0}, 12},
		{"the last index alone", 3, map[int]time.Duration{49: 0}, 49},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 20 {
				err := parallel(context.Background(), c.workers, 50, func(i int) error {
					d, ok := c.fail[i]
					if !ok {
						return nil
					}
					time.Sleep(d)
					return fmt.Errorf("series %d: bad line", i)
				})
				if want := fmt.Sprintf("series %d: bad line", c.want); err == nil || err.Error() != want {
					t.Fatalf("parallel returned %v; want %s", err, want)
				}
			}
		})
	}

	t.Run("a call stopped by the cancellation gives way", func(t *testing.T) {
		failed := make(chan struct{})
		err := parallel(context.Background(), 2, 10, func(i int) error {
			switch i {
			case 0:
				<-failed // stops once the other call has failed
				return fmt.Errorf("series 0: %w", context.Canceled)
			case 1:
				defer close(failed)
				return errors.New("series 1: bad line")
			}
			return nil
		})
		if err == nil || err.Error() != "series 1: bad line" {
			t.Fatalf("parallel returned %v; want series 1's error", err)
		}
	})

	t.Run("no new calls after an error", func(t *testing.T) {
		var calls atomic.Int32
		err := parallel(context.Background(), 1, 1000, func(i int) error {
			calls.Add(1)
			if i == 2 {
				return errors.New("stop")
			}
			return nil
		})
		if err == nil || calls.Load() > 4 {
			t.Fatalf("parallel returned %v after %d calls; want an error after at most 4", err, calls.Load())
		}
	})

	t.Run("a cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := parallel(ctx, 2, 10, func(int) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("parallel returned %v; want context.Canceled", err)
		}
	})
}

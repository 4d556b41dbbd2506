package roomserver

import "sync"

// drainQueue is a queue that one goroutine at a time drains: push says
// when the caller is to start that goroutine, which takes items (next, or
// all at once) until none is left; taking from an empty queue marks it
// idle, so the next push starts a goroutine again. A seat's world actions
// and the transfers to complete use it.
type drainQueue[T any] struct {
	mu      sync.Mutex
	pending []T
	running bool // a goroutine is taking items off pending
}

// push queues v, unless limit items wait already (limit <= 0: no limit).
// start says the caller must start the goroutine that drains the queue.
func (q *drainQueue[T]) push(v T, limit int) (queued, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if limit > 0 && len(q.pending) >= limit {
		return false, false
	}
	q.pending = append(q.pending, v)
	start = !q.running
	q.running = true
	return true, start
}

// next takes the oldest item; false, and the queue marked idle, when none
// is left.
func (q *drainQueue[T]) next() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.running = false
		var none T
		return none, false
	}
	v := q.pending[0]
	q.pending = q.pending[1:]
	return v, true
}

// all takes every item waiting; false, and the queue marked idle, when
// none is left.
func (q *drainQueue[T]) all() ([]T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.pending
	q.pending = nil
	q.running = len(items) > 0
	return items, q.running
}

package prometheus

// arena hands out zeroed elements of T carved from backing arrays of
// chunk elements, so that a scrape makes a few dozen allocations instead
// of some for every probe. A backing array lives as long as anything
// points into it. An arena belongs to one scrape and is not safe for
// concurrent use.
type arena[T any] struct {
	chunk int
	free  []T
}

// newArena returns an arena that allocates chunk elements at a time.
func newArena[T any](chunk int) *arena[T] {
	return &arena[T]{chunk: chunk}
}

// take returns n elements. The slice's capacity ends with it, so that
// appending to it cannot reach the elements handed out next.
func (a *arena[T]) take(n int) []T {
	if len(a.free) < n {
		a.free = make([]T, max(n, a.chunk))
	}
	s := a.free[:n:n]
	a.free = a.free[n:]
	return s
}

// one returns a single element.
func (a *arena[T]) one() *T {
	return &a.take(1)[0]
}

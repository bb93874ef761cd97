package prober

import (
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// shapeOf is the structural shape of a decoded JSON body (SPEC §5), kept
// behind one function so the operation does not depend on how results/shape
// spells it.
func shapeOf(v any) *results.Shape {
	s := shape.Of(v)
	return &results.Shape{Fingerprint: s.Fingerprint(), Canonical: s.String(), Structure: s}
}

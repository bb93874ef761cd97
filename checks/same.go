package checks

import (
	"crypto/tls"
	"reflect"

	"github.com/toolpulse/toolpulse/consumers"
)

// Same reports whether q is p as loaded again, unchanged: what a reload
// compares to keep a probe's job and schedule. Compiled consumers compare
// by name, version and rule hash, and TLS configurations by what a probe
// sets in them (SameTLS): both are rebuilt on every load, and their
// internals (programs, certificate pools) are not comparable with
// reflect.DeepEqual.
func (p *Probe) Same(q *Probe) bool {
	if !SameTLS(p.TLS, q.TLS) || !sameSteps(p.Steps, q.Steps) {
		return false
	}
	x, y := *p, *q
	x.TLS, y.TLS = nil, nil
	x.Steps, y.Steps = nil, nil
	return reflect.DeepEqual(x, y)
}

// sameSteps compares steps with their consumers by ref and their rules
// by text.
func sameSteps(a, b []Step) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Consumer.Ref() != y.Consumer.Ref() || ruleText(x.Until) != ruleText(y.Until) || len(x.Capture) != len(y.Capture) {
			return false
		}
		for j := range x.Capture {
			cx, cy := x.Capture[j], y.Capture[j]
			if cx.Name != cy.Name || cx.Secret != cy.Secret || ruleText(cx.Rule) != ruleText(cy.Rule) {
				return false
			}
		}
		x.Consumer, y.Consumer, x.Until, y.Until, x.Capture, y.Capture = nil, nil, nil, nil, nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func ruleText(x *consumers.Expression) string {
	if x == nil {
		return ""
	}
	return x.Text
}

// SameTLS reports whether two TLS configs a probe loaded set the same two
// things checks sets in them: the CA pool and InsecureSkipVerify.
func SameTLS(a, b *tls.Config) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.InsecureSkipVerify != b.InsecureSkipVerify {
		return false
	}
	if a.RootCAs == nil || b.RootCAs == nil {
		return a.RootCAs == b.RootCAs
	}
	return a.RootCAs.Equal(b.RootCAs)
}

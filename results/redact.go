package results

import (
	"sort"
	"strings"
)

// Redacted is what a secret is replaced with wherever it would be shown.
const Redacted = "<redacted>"

// minSecretLen is the shortest value the Redactor scrubs: shorter values
// (a "1", an "en") would turn ordinary text into noise without protecting
// anything worth protecting.
const minSecretLen = 4

// Redactor scrubs known secret values from text that leaves toolpulse:
// stored response samples, messages, API output and alerts. The zero value
// scrubs nothing. A Redactor is immutable and safe for concurrent use.
type Redactor struct {
	replacer *strings.Replacer
	secrets  []string // what it scrubs, for With
}

// NewRedactor returns a Redactor for the given secret values. Longer values
// are replaced first, so a secret that contains another is scrubbed whole.
func NewRedactor(secrets ...string) *Redactor {
	uniq := map[string]bool{}
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			uniq[s] = true
		}
	}
	if len(uniq) == 0 {
		return &Redactor{}
	}
	values := make([]string, 0, len(uniq))
	for s := range uniq {
		values = append(values, s)
	}
	sort.Slice(values, func(i, j int) bool {
		if len(values[i]) != len(values[j]) {
			return len(values[i]) > len(values[j])
		}
		return values[i] < values[j]
	})
	pairs := make([]string, 0, 2*len(values))
	for _, s := range values {
		pairs = append(pairs, s, Redacted)
	}
	return &Redactor{replacer: strings.NewReplacer(pairs...), secrets: values}
}

// With returns a Redactor that scrubs r's secrets and more: a run's own,
// such as a token a step captured (SPEC §11). r is not changed.
func (r *Redactor) With(more ...string) *Redactor {
	if len(more) == 0 {
		return r
	}
	var all []string
	if r != nil {
		all = append(all, r.secrets...)
	}
	return NewRedactor(append(all, more...)...)
}

// Redact returns s with every known secret replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if r == nil || r.replacer == nil {
		return s
	}
	return r.replacer.Replace(s)
}

// RedactResult scrubs every free-text field of res in place: the error
// message, each attempt's and each step's message and the response sample.
func (r *Redactor) RedactResult(res *Result) {
	if res.Error != nil {
		res.Error.Message = r.Redact(res.Error.Message)
	}
	for i := range res.Attempts {
		res.Attempts[i].Message = r.Redact(res.Attempts[i].Message)
	}
	res.ResponseSample = r.Redact(res.ResponseSample)
	for i := range res.Steps {
		if e := res.Steps[i].Error; e != nil {
			e.Message = r.Redact(e.Message)
		}
	}
}

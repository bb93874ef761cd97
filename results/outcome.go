// Package results is toolpulse's domain: the outcome of one probe run, its
// stable codes, its attempts and the JSON envelope operators and scripts read.
// It imports nothing but the standard library; every other package speaks in
// these types.
package results

import "fmt"

// Outcome is how one operation ended. Exactly three exist (SPEC §1).
type Outcome string

const (
	// Pass means a response arrived, the consumer rule ran cleanly and at
	// least min_results items were selected and validated.
	Pass Outcome = "pass"
	// ContractError means a response arrived but the caller could not use it.
	// It is never retried.
	ContractError Outcome = "contract_error"
	// Unavailable means no usable HTTP exchange happened, after bounded retries.
	Unavailable Outcome = "unavailable"
)

// Outcomes lists every outcome in a stable order.
var Outcomes = []Outcome{Pass, ContractError, Unavailable}

// Valid reports whether o is one of the three outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case Pass, ContractError, Unavailable:
		return true
	}
	return false
}

// ParseOutcome returns the outcome named s, or an error naming the valid ones.
func ParseOutcome(s string) (Outcome, error) {
	o := Outcome(s)
	if !o.Valid() {
		return "", fmt.Errorf("unknown outcome %q (want pass, contract_error or unavailable)", s)
	}
	return o, nil
}

package main

import (
	"fmt"
	"strconv"
	"strings"
)

// benchMix is the share of runs the provider answers with each outcome,
// as relative weights: pass=90,contract_error=5,unavailable=5 and
// pass=18,contract_error=1,unavailable=1 are the same mix.
type benchMix struct {
	Pass          int `json:"pass"`
	ContractError int `json:"contract_error"`
	Unavailable   int `json:"unavailable"`
}

// parseMix reads NAME=WEIGHT pairs separated by commas; names left out
// weigh 0.
func parseMix(s string) (benchMix, error) {
	var m benchMix
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return m, fmt.Errorf("--mix: %q is not NAME=WEIGHT", part)
		}
		if seen[name] {
			return m, fmt.Errorf("--mix: %s given twice", name)
		}
		seen[name] = true
		w, err := strconv.Atoi(value)
		if err != nil || w < 0 {
			return m, fmt.Errorf("--mix: %s=%s: the weight must be a whole number, 0 or more", name, value)
		}
		switch name {
		case "pass":
			m.Pass = w
		case "contract_error":
			m.ContractError = w
		case "unavailable":
			m.Unavailable = w
		default:
			return m, fmt.Errorf("--mix: unknown outcome %q; use pass, contract_error and unavailable", name)
		}
	}
	if m.total() == 0 {
		return m, fmt.Errorf("--mix: the weights add up to 0")
	}
	return m, nil
}

func (m benchMix) total() int { return m.Pass + m.ContractError + m.Unavailable }

// String is the mix in percent, as --mix takes it.
func (m benchMix) String() string {
	t := float64(m.total())
	pct := func(w int) string { return strconv.FormatFloat(100*float64(w)/t, 'f', -1, 64) }
	return "pass=" + pct(m.Pass) + ",contract_error=" + pct(m.ContractError) + ",unavailable=" + pct(m.Unavailable)
}

// Answers the provider gives. Two of each failure, so that both ways a
// contract breaks and both ways a provider is down are exercised.
const (
	answerPass        = iota // the list layout
	answerPassItems          // {"results": {"items": [...]}}: passes, but drifts
	answerResultsMap         // results is a map without items: unsupported_results_container
	answerStringScore        // scores are strings: rule_error
	answer503                // 503: server_error
	answerClose              // the connection closed without an answer
	answerKinds
)

// pick chooses the answer to the seq-th request of probe from the mix. It
// is a hash of both, not a random draw, so that a run is reproducible and
// the shares hold closely even over few runs.
func (m benchMix) pick(probe int, seq uint64) int {
	h := splitmix64(uint64(probe)<<40 ^ seq)
	u := int(h % uint64(m.total()))
	alt := h>>32&1 == 1
	switch {
	case u < m.Pass:
		return answerPass
	case u < m.Pass+m.ContractError:
		if alt {
			return answerStringScore
		}
		return answerResultsMap
	default:
		if alt {
			return answerClose
		}
		return answer503
	}
}

// splitmix64 is a fast, well-mixed 64-bit hash.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

package checks

import "strings"

// setsTraceparent reports whether a header of one of steps' calls sets
// traceparent: the probe carries a trace context of its own, which toolpulse
// then neither replaces nor adds to (SPEC §10.1).
func setsTraceparent(steps []Step) bool {
	for _, s := range steps {
		headers := s.Request.Headers
		if s.MCP != nil {
			headers = s.MCP.Headers
		}
		for name := range headers {
			if strings.EqualFold(name, "traceparent") {
				return true
			}
		}
	}
	return false
}

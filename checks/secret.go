package checks

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/toolpulse/toolpulse/results"
)

// Secret is a configuration value that must never be shown: header values,
// tokens, webhook URLs. It prints, marshals and logs as results.Redacted;
// only Reveal gives the value, at the one place that sends it.
type Secret string

const redacted = results.Redacted

// Reveal returns the secret's value. Call it only to use the value.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer, so %#v hides the value too.
func (s Secret) GoString() string { return redacted }

// Format implements fmt.Formatter. String alone is not enough: for a verb
// that does not fit a string (%d, %x on some paths) fmt reports the bad verb
// by printing the underlying value, secret included.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, strconv.Quote(redacted))
		return
	}
	_, _ = io.WriteString(f, redacted)
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText implements encoding.TextMarshaler (JSON, YAML, map keys).
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

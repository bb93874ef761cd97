package main

import (
	"os"

	"github.com/toolpulse/toolpulse/results"
)

// useColour reports whether stdout is a terminal that wants colour: a
// character device, and NO_COLOR (no-color.org) unset.
func useColour(e *env) bool {
	if v, ok := e.lookupEnv("NO_COLOR"); ok && v != "" {
		return false
	}
	f, ok := e.stdout.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Every escape sequence used here has the same length, so tabwriter, which
// counts bytes, still aligns the columns of coloured and plain cells.
const (
	ansiGreen   = "\x1b[32m"
	ansiRed     = "\x1b[31m"
	ansiYellow  = "\x1b[33m"
	ansiDefault = "\x1b[39m"
	ansiReset   = "\x1b[0m"
)

// paint colours text by outcome (or leaves it, for a header, in the
// default colour) when colour is on. The outcome word is always there:
// colour is never the only signal.
func paint(text string, o results.Outcome, colour bool) string {
	if !colour {
		return text
	}
	code := ansiDefault
	switch o {
	case results.Pass:
		code = ansiGreen
	case results.ContractError:
		code = ansiRed
	case results.Unavailable:
		code = ansiYellow
	}
	return code + text + ansiReset
}

package sqlite

import (
	"io/fs"
	"strings"
)

// ProbeHoursBackfill is the statement of migration 0005 that sums every
// stored result up into probe_hours, which must be empty: for tests that
// write results rows directly, faster than RecordRun would.
func ProbeHoursBackfill() string {
	text, err := fs.ReadFile(embedded, "0005_probe_hours.sql")
	if err != nil {
		panic(err) // a constant, embedded path
	}
	_, insert, ok := strings.Cut(string(text), "\nINSERT INTO probe_hours")
	if !ok {
		panic("0005_probe_hours.sql has no INSERT INTO probe_hours")
	}
	return "INSERT INTO probe_hours" + insert
}

package testkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update is -update, shared by every test binary that imports this
// package: `go test ./PKG -update` rewrites PKG's golden files from what
// its tests produce, to be reviewed as a diff.
var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// Update reports whether the test binary was asked to rewrite golden
// files, for a test that compares its golden file its own way.
func Update() bool { return *update }

// Golden compares got with the golden file at path, or, with -update,
// writes got there (creating its folder). A mismatch names the file, the
// first line that differs and both texts.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update creates it)", err, t.Name())
	}
	if bytes.Equal(got, want) {
		return
	}
	t.Errorf("%s differs from the golden file at line %d (go test -update rewrites it)\ngot:\n%s\nwant:\n%s",
		path, firstDifference(string(want), string(got)), got, want)
}

// firstDifference is the number of the first line where a and b differ.
func firstDifference(a, b string) int {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(as), len(bs)) {
		if as[i] != bs[i] {
			return i + 1
		}
	}
	return min(len(as), len(bs)) + 1
}

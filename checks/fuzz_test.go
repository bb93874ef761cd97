package checks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader: it must never panic, and
// every error it returns must carry a position (line and column ≥ 1).
// The testdata configs are the seed corpus; the fuzzed file lives in
// testdata/ so that its consumer and CA file references resolve.
func FuzzParse(f *testing.F) {
	addFileSeeds(f, "testdata/*.yaml", "../checks.yaml")
	addFileSeeds(f, "testdata/maintenance/*.yaml")
	env := mapEnv(map[string]string{"TP_TOKEN": "t0ken-value", "SEARCH_TOKEN": "s3arch", "SLACK_BOT_TOKEN": "xoxb-1"})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data, "testdata", env)
		if err == nil {
			if cfg == nil {
				t.Fatal("no config and no error")
			}
			return
		}
		if cfg != nil {
			t.Fatal("a config along with an error")
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error %v (%T) is not a non-empty ErrorList", err, err)
		}
		for _, e := range list {
			if e.Line < 1 || e.Column < 1 || e.File == "" || e.Message == "" {
				t.Fatalf("error without a position, file or message: %#v", e)
			}
		}
	})
}

// addFileSeeds adds every file matching pattern, and the extra files, to
// f's seed corpus.
func addFileSeeds(f *testing.F, pattern string, extra ...string) {
	f.Helper()
	seeds, err := filepath.Glob(pattern)
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range append(seeds, extra...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

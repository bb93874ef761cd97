package checks

import "testing"

// TestFollowRedirects: request.follow_redirects defaults to true, and
// false reaches Request.NoRedirects of a probe and of a step alike.
func TestFollowRedirects(t *testing.T) {
	cfg, err := Parse("checks.yaml", []byte(`version: 1
consumers: [{name: c, select: response.items}]
probes:
  - {name: default, request: {url: "http://h/a"}, consumer: c}
  - {name: follow, request: {url: "http://h/a", follow_redirects: true}, consumer: c}
  - {name: stop, request: {url: "http://h/a", follow_redirects: false}, consumer: c}
  - name: steps
    steps:
      - {name: a, request: {url: "http://h/a", follow_redirects: false}}
      - {name: b, request: {url: "http://h/b"}}
`), t.TempDir(), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, false, true} {
		if got := cfg.Probes[i].Steps[0].Request.NoRedirects; got != want {
			t.Errorf("probe %s: NoRedirects = %v, want %v", cfg.Probes[i].Name, got, want)
		}
	}
	steps := cfg.Probes[3].Steps
	if !steps[0].Request.NoRedirects || steps[1].Request.NoRedirects {
		t.Errorf("steps: NoRedirects = %v, %v; want true, false", steps[0].Request.NoRedirects, steps[1].Request.NoRedirects)
	}
}

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// searchGroup is a group of two alerts: a probe failing and another
// resolved.
func searchGroup() results.AlertGroup {
	other := resolved()
	other.ID, other.Probe = 45, "internal_search"
	return results.AlertGroup{Key: `routes[0]/webhook{team="search"}`, Labels: map[string]string{"team": "search"},
		Alerts: []results.Alert{firing(), other}}
}

// TestGroupBody pins the JSON a group posts: the contract with receivers.
func TestGroupBody(t *testing.T) {
	n, err := New(Config{URL: "https://hooks.example.com" + hookPath, Secret: secret, BaseURL: "https://toolpulse.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := n.GroupBody(searchGroup())
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	indented.WriteByte('\n')
	testkit.Golden(t, filepath.Join("testdata", "group.golden"), indented.Bytes())

	// Each alert of the list is the body of that alert posted alone.
	var got struct{ Alerts []json.RawMessage }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	for i, a := range searchGroup().Alerts {
		alone, err := n.Body(a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Alerts[i], alone) {
			t.Errorf("alerts[%d] = %s, want the alert's own body %s", i, got.Alerts[i], alone)
		}
	}
}

// TestSendGroupPostsOnceSigned: one signed post for the whole group.
func TestSendGroupPostsOnceSigned(t *testing.T) {
	srv, got := receiver(t, respond(http.StatusNoContent, ""))
	n, err := New(Config{URL: srv.URL + hookPath, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if retry, after, err := n.SendGroup(context.Background(), searchGroup()); err != nil || retry || after != 0 {
		t.Fatalf("SendGroup = %v, %v, %v; want delivered", retry, after, err)
	}
	req := <-got
	if sig, want := req.header.Get(SignatureHeader), "sha256="+hmacHex(secret, req.body); sig != want {
		t.Errorf("%s = %q, want %q", SignatureHeader, sig, want)
	}
	want, _ := n.GroupBody(searchGroup())
	if !bytes.Equal(req.body, want) {
		t.Errorf("posted %s, want %s", req.body, want)
	}
	select {
	case extra := <-got:
		t.Errorf("a second post for one group: %s", extra.body)
	default:
	}
}

// Package tooldef is what toolpulse watches of an MCP tool's definition,
// its entry in the server's tools/list answer (SPEC §10): a fingerprint
// of the parts that tell an agent what the tool does and takes, and the
// lines that say what changed between two definitions. A tool whose
// description changes silently is how a compromised server re-instructs
// the agents that call it, so the description is watched word for word.
//
// Only Fields count: the name is what finds the tool, and a server's
// _meta or title may change without changing what the tool is.
//
// A probe's definition also covers the server itself (server.go, SPEC
// §10.1): its instructions, name and version, and the prompts and
// resources listings a probe watches, each a part beside the tool's
// Fields.
package tooldef

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fields are the keys of a tools/list entry whose change is a definition
// drift.
// execution (taskSupport) is one: a tool that turns to requiring tasks
// fails every plain call.
var Fields = []string{"description", "inputSchema", "outputSchema", "annotations", "execution"}

// MaxValueRunes caps each value a diff line shows.
const MaxValueRunes = 120

// Definition is the watched part of one tools/list entry, decoded.
type Definition map[string]any

// Parse reads a tools/list entry (a JSON object) and keeps its Fields.
func Parse(entry []byte) (Definition, error) {
	var all map[string]any
	dec := json.NewDecoder(bytes.NewReader(entry))
	dec.UseNumber()
	if err := dec.Decode(&all); err != nil {
		return nil, fmt.Errorf("tooldef: the tool's entry is not a JSON object: %w", err)
	}
	if all == nil {
		return nil, errors.New("tooldef: the tool's entry is null, not an object")
	}
	d := Definition{}
	for _, k := range Fields {
		if v, ok := all[k]; ok {
			d[k] = v
		}
	}
	return d, nil
}

// Canonical is the definition's canonical JSON: object keys sorted, no
// space, numbers as the server wrote them. Equal definitions have equal
// text whatever the key order on the wire.
func (d Definition) Canonical() string {
	b, err := json.Marshal(map[string]any(d))
	if err != nil {
		// Only values Parse decoded are here, and all of them marshal.
		panic(fmt.Sprintf("tooldef: canonical form: %v", err))
	}
	return string(b)
}

// MaxStoredBytes caps the canonical form of what Stored keeps of a
// definition: one row of tool_definitions, and the baseline the next run
// is compared with.
const MaxStoredBytes = 64 << 10

// maxStoredString is the longest string Stored keeps whole in a
// definition over MaxStoredBytes.
const maxStoredString = 1 << 10

// Stored is what toolpulse keeps of d, to store and to compare the next
// definition with: d itself when its canonical form is at most
// MaxStoredBytes, as every real tool's is. Otherwise each string longer
// than 1 KiB is cut to its start and a marker, "… [cut: N bytes, sha256
// H]", and if that is not enough, each field whose canonical form is over
// its share of MaxStoredBytes is the marker of its canonical form: a
// server cannot grow the database by a megabyte a run. Markers carry a
// hash, so values that differ stay different, and Diff still says which
// part changed; the fingerprint is d's own, computed on the whole.
func (d Definition) Stored() Definition {
	if len(d.Canonical()) <= MaxStoredBytes {
		return d
	}
	out := Definition{}
	for k, v := range d {
		out[k] = cutStrings(v)
	}
	if len(out.Canonical()) <= MaxStoredBytes {
		return out
	}
	// Keys, quotes and commas take the rest.
	share := (MaxStoredBytes - 256) / len(out)
	for k, v := range out {
		if b, _ := json.Marshal(v); len(b) > share {
			out[k] = cutMarker("", b)
		}
	}
	return out
}

// cutStrings returns v with every string longer than maxStoredString cut
// to its start and a marker.
func cutStrings(v any) any {
	switch v := v.(type) {
	case string:
		if len(v) <= maxStoredString {
			return v
		}
		cut := maxStoredString
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return cutMarker(v[:cut], []byte(v))
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cutStrings(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cutStrings(e)
		}
		return out
	}
	return v
}

// cutMarker is start followed by the marker of whole: its length and the
// first 16 hex digits of its SHA-256.
func cutMarker(start string, whole []byte) string {
	sum := sha256.Sum256(whole)
	return fmt.Sprintf("%s… [cut: %d bytes, sha256 %s]", start, len(whole), hex.EncodeToString(sum[:8]))
}

// Fingerprint is 16 lowercase hex characters of the canonical form's
// SHA-256, as shape fingerprints are.
func (d Definition) Fingerprint() string {
	sum := sha256.Sum256([]byte(d.Canonical()))
	return hex.EncodeToString(sum[:8])
}

// Diff returns one line per changed JSON path from was to now, sorted by
// path:
//
//	description: changed
//	inputSchema.required: ["query"] -> ["query","lang"]
//	inputSchema.properties.lang: added ({"type":"string"})
//	annotations.destructiveHint: removed (false)
//
// Objects are compared key by key; anything else (lists included) is
// compared whole, so that a changed required list is one line. The
// description is only said to have changed: its old and new text are long
// and are shown whole elsewhere (DescriptionChange). No line for equal
// definitions.
func Diff(was, now Definition) []string {
	var lines []string
	diffValue(&lines, "", map[string]any(was), map[string]any(now))
	slices.Sort(lines)
	return lines
}

// Comparable returns was and now without what only one of them watched,
// so that Diff says what changed on the server and not in what toolpulse
// reads: a listing a probe started or stopped watching, and, where either
// was recorded before the server was watched (one without a server part:
// an earlier toolpulse, or an earlier node of a fleet during an upgrade),
// every part and the execution field, which those did not cover.
func Comparable(was, now Definition) (Definition, Definition) {
	w, n := maps.Clone(was), maps.Clone(now)
	_, wasWatched := was[PartServer]
	_, nowWatched := now[PartServer]
	watchedServer := wasWatched && nowWatched
	for _, k := range []string{PartServer, PartPrompts, PartResources} {
		_, inWas := w[k]
		_, inNow := n[k]
		if inWas != inNow {
			delete(w, k)
			delete(n, k)
		}
	}
	if !watchedServer {
		delete(w, "execution")
		delete(n, "execution")
	}
	return w, n
}

// DescriptionChange returns the old and new description, each capped at
// maxRunes, and whether the description changed.
func DescriptionChange(was, now Definition, maxRunes int) (before, after string, changed bool) {
	b, _ := was["description"].(string)
	a, _ := now["description"].(string)
	if b == a && (was["description"] == nil) == (now["description"] == nil) {
		return "", "", false
	}
	return capRunes(b, maxRunes), capRunes(a, maxRunes), true
}

func diffValue(lines *[]string, path string, was, now any) {
	wm, wasObject := was.(map[string]any)
	nm, nowObject := now.(map[string]any)
	if wasObject && nowObject {
		keys := make([]string, 0, len(wm)+len(nm))
		for k := range wm {
			keys = append(keys, k)
		}
		for k := range nm {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			p := join(path, k)
			w, inWas := wm[k]
			n, inNow := nm[k]
			switch {
			case !inWas:
				*lines = append(*lines, p+": added ("+show(n)+")")
			case !inNow:
				*lines = append(*lines, p+": removed ("+show(w)+")")
			default:
				diffValue(lines, p, w, n)
			}
		}
		return
	}
	if same(was, now) {
		return
	}
	if path == "description" || path == PartServer+".instructions" {
		*lines = append(*lines, path+": changed")
		return
	}
	*lines = append(*lines, path+": "+show(was)+" -> "+show(now))
}

func same(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// join appends key to a dotted path; a key that is not a plain name is
// quoted in brackets, so that a path reads back unambiguously.
func join(path, key string) string {
	if path == PartPrompts || path == PartResources {
		// An entry of a listing, by its name or URI: prompts[summarize].
		return path + "[" + key + "]"
	}
	if plain(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func plain(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if !(r == '_' || r == '-' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// show is v as compact JSON, capped at MaxValueRunes.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return capRunes(string(b), MaxValueRunes)
}

// capRunes cuts s to n runes, "…" included, trimming the spaces before the
// mark (which results.Clip keeps); n <= 0 does not cut.
func capRunes(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

package shape_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results/shape"
)

var profileT0 = time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)

// answers is a recorded pattern: the body of answer i.
type answers func(i int, rnd *rand.Rand) string

// observe has p judge and learn the bodies, one a minute from at, and
// returns the report of each.
func observe(t *testing.T, p *shape.Profile, at time.Time, bodies []string) []shape.Report {
	t.Helper()
	out := make([]shape.Report, len(bodies))
	for i, b := range bodies {
		out[i], _ = p.Observe(shape.Of(decode(t, []byte(b))), at.Add(time.Duration(i)*time.Minute))
	}
	return out
}

func play(t *testing.T, n int, gen answers) []string {
	t.Helper()
	rnd := rand.New(rand.NewPCG(16, 5))
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = gen(i, rnd)
	}
	return bodies
}

func hexID(rnd *rand.Rand) string {
	for {
		s := fmt.Sprintf("%08x", rnd.Uint32())
		if strings.ContainsAny(s, "abcdef") && strings.ContainsAny(s, "0123456789") {
			return s
		}
	}
}

func result(i int) string {
	return fmt.Sprintf(`{"id":"doc_%d","title":"API migration guide, part %d","score":0.9%d}`, i, i, i%10)
}

// Real APIs vary within their contract. Each of these patterns, 30 answers
// long, must never alert (no novel drift), and must have settled into no
// drift at all by its last 10 answers.
var silentPatterns = []struct {
	name string
	gen  answers
}{
	{"pagination: next_cursor a string, null on the last page", func(i int, _ *rand.Rand) string {
		cursor := fmt.Sprintf(`"c_%d"`, i)
		if i%5 == 4 {
			cursor = "null"
		}
		return fmt.Sprintf(`{"results":[%s,%s],"next_cursor":%s}`, result(i), result(i+1), cursor)
	}},
	{"a search that sometimes finds nothing", func(i int, _ *rand.Rand) string {
		if i%4 == 3 {
			return `{"results":[],"next_cursor":null}`
		}
		return fmt.Sprintf(`{"results":[%s],"next_cursor":null}`, result(i))
	}},
	{"a search that finds nothing at first", func(i int, _ *rand.Rand) string {
		if i < 8 {
			return `{"results":[],"next_cursor":null}`
		}
		return fmt.Sprintf(`{"results":[%s],"next_cursor":null}`, result(i))
	}},
	{"optional and nullable fields", func(i int, _ *rand.Rand) string {
		extra := ""
		if i%3 == 0 {
			extra = `,"author":"Ann"`
		}
		summary := `"a summary"`
		if i%2 == 1 {
			summary = "null"
		}
		return fmt.Sprintf(`{"results":[{"id":"doc_%d","title":"t","summary":%s%s}],"took_ms":12}`, i, summary, extra)
	}},
	{"id-keyed map, new keys every answer", func(i int, rnd *rand.Rand) string {
		var facets []string
		for range 1 + rnd.IntN(3) {
			facets = append(facets, fmt.Sprintf(`"%s":{"label":"docs","count":%d}`, hexID(rnd), rnd.IntN(50)))
		}
		return fmt.Sprintf(`{"results":[%s],"facets":{%s}}`, result(i), strings.Join(facets, ","))
	}},
	{"map keyed by ids of no known form", func(i int, rnd *rand.Rand) string {
		var docs []string
		for range 1 + rnd.IntN(3) {
			docs = append(docs, fmt.Sprintf(`"doc_%d":{"title":"t","score":%d}`, rnd.IntN(1e6), rnd.IntN(9)))
		}
		return fmt.Sprintf(`{"by_id":{%s},"total":%d}`, strings.Join(docs, ","), i)
	}},
	{"map keyed by ids of no known form, a field of the values that comes and goes", func(i int, rnd *rand.Rand) string {
		var docs []string
		for j := range 2 + rnd.IntN(3) {
			author := ""
			if j == 0 {
				author = `,"author":"Ann"`
			}
			docs = append(docs, fmt.Sprintf(`"doc_%d":{"title":"t"%s}`, rnd.IntN(1e6), author))
		}
		if i >= 10 && i%3 == 0 {
			docs = []string{fmt.Sprintf(`"doc_%d":{"title":"t"}`, rnd.IntN(1e6))}
		}
		return fmt.Sprintf(`{"by_id":{%s},"total":%d}`, strings.Join(docs, ","), i)
	}},
	{"date-keyed map", func(i int, _ *rand.Rand) string {
		day := profileT0.AddDate(0, 0, i)
		return fmt.Sprintf(`{"series":{"%s":{"runs":%d},"%s":{"runs":%d,"p95_ms":41.5}}}`,
			day.Format("2006-01-02"), i, day.AddDate(0, 0, 1).Format("2006-01-02"), i+1)
	}},
	{"lists of mixed objects", func(i int, _ *rand.Rand) string {
		doc := `{"type":"doc","title":"t","score":0.5}`
		video := `{"type":"video","duration_s":31,"score":1}`
		return [...]string{`{"items":[` + doc + `,` + video + `]}`, `{"items":[` + doc + `]}`, `{"items":[` + video + `]}`}[i%3]
	}},
	{"optional fields on list items", func(i int, _ *rand.Rand) string {
		// Every warm-up answer has an item with a snippet and one without;
		// later answers sometimes have only the one without.
		plain := fmt.Sprintf(`{"id":"doc_%d","title":"t"}`, i)
		if i >= 10 && i%3 == 0 {
			return `{"items":[` + plain + `]}`
		}
		return `{"items":[` + plain + `,{"id":"doc_0","title":"t","snippet":"s"}]}`
	}},
	{"nested lists of objects with optional fields", func(i int, _ *rand.Rand) string {
		authors := `[{"name":"Ann"},{"name":"Bo","affiliation":"ACME"}]`
		if i >= 10 && i%2 == 0 {
			authors = `[{"name":"Ann"}]`
		}
		return fmt.Sprintf(`{"items":[{"id":"doc_%d","authors":%s},{"id":"doc_1","authors":[]}]}`, i, authors)
	}},
	{"a field present in some elements of every answer", func(i int, rnd *rand.Rand) string {
		// A search API's answers: 1-10 items whose snippet and author
		// each come and go, and id-keyed facets whose label comes and goes.
		n := 1 + rnd.IntN(10)
		items := make([]string, n)
		for j := range items {
			item := fmt.Sprintf(`"id":"doc_%d","title":"t"`, rnd.IntN(1e6))
			if j == 0 || rnd.IntN(3) > 0 {
				item += `,"snippet":"s"`
			}
			if j == 1 || rnd.IntN(2) == 0 {
				item += `,"author":"a"`
			}
			items[j] = "{" + item + "}"
		}
		var facets []string
		for j := range 1 + rnd.IntN(3) {
			label := ""
			if j > 0 || rnd.IntN(2) == 0 {
				label = `,"label":"docs"`
			}
			facets = append(facets, fmt.Sprintf(`"%s":{"count":%d%s}`, hexID(rnd), rnd.IntN(50), label))
		}
		return fmt.Sprintf(`{"items":[%s],"facets":{%s}}`, strings.Join(items, ","), strings.Join(facets, ","))
	}},
	{"numbers sometimes int, sometimes float", func(i int, _ *rand.Rand) string {
		if i%2 == 0 {
			return fmt.Sprintf(`{"score":%d,"total":%d}`, i, i*3)
		}
		return fmt.Sprintf(`{"score":%d.5,"total":%d}`, i, i*3)
	}},
}

func TestProfileSilentOnRealVariation(t *testing.T) {
	for _, tt := range silentPatterns {
		t.Run(tt.name, func(t *testing.T) {
			var p shape.Profile
			reports := observe(t, &p, profileT0, play(t, 30, tt.gen))
			for i, r := range reports {
				if r.Novel {
					t.Errorf("answer %d alerted: %q", i+1, r.Lines)
				}
				if i >= 20 && r.Lines != nil {
					t.Errorf("answer %d still drifts: %q", i+1, r.Lines)
				}
			}
		})
	}
}

// stableSearch is the baseline of the real-change cases: paginated search
// answers with an optional field.
func stableSearch(i int, _ *rand.Rand) string {
	cursor := fmt.Sprintf(`"c_%d"`, i)
	if i%3 == 2 {
		cursor = "null"
	}
	return fmt.Sprintf(`{"results":[%s,%s],"next_cursor":%s}`, result(i), result(i+1), cursor)
}

// Real changes: after 12 answers of stableSearch, the provider changes its
// answer for good. The first changed answer drifts, with the lines of
// testdata/profile/<case>.golden, and is novel (alerted); the next is not
// novel, and from the third on the new shape is learned.
var realChanges = []struct {
	name, changed string
}{
	{"seed000_wrap", `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`},
	{"score_retyped", `{"results":[{"id":"doc_784","title":"API migration guide","score":"0.93"}],"next_cursor":"c_9"}`},
	{"key_renamed", `{"results":[{"id":"doc_784","name":"API migration guide","score":0.93}],"next_cursor":"c_9"}`},
	{"list_became_object", `{"results":{"id":"doc_784","title":"API migration guide","score":0.93},"next_cursor":"c_9"}`},
	{"field_removed", `{"results":[{"id":"doc_784","score":0.93}],"next_cursor":"c_9"}`},
	{"field_added", `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93,"url":"https://x"}],"next_cursor":"c_9"}`},
	{"cursor_retyped", `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":9}`},
	{"map_value_retyped", `{"results":[],"next_cursor":null,"facets":{"f3a9c1":{"count":"12"}}}`},
}

func TestProfileRealChangesAlertOnce(t *testing.T) {
	for _, tt := range realChanges {
		t.Run(tt.name, func(t *testing.T) {
			gen := stableSearch
			if tt.name == "map_value_retyped" {
				gen = func(i int, rnd *rand.Rand) string {
					return fmt.Sprintf(`{"results":[],"next_cursor":null,"facets":{"%s":{"count":%d}}}`, hexID(rnd), i)
				}
			}
			var p shape.Profile
			for i, r := range observe(t, &p, profileT0, play(t, 12, gen)) {
				if r.Novel || i >= 9 && r.Lines != nil {
					t.Fatalf("baseline answer %d drifted: %+v", i+1, r)
				}
			}
			changed := make([]string, 4)
			for i := range changed {
				changed[i] = tt.changed
			}
			reports := observe(t, &p, profileT0.Add(time.Hour), changed)
			first := reports[0]
			if !first.Novel || first.Lines == nil {
				t.Fatalf("first changed answer: %+v, want novel drift lines", first)
			}
			checkGolden(t, filepath.Join("testdata", "profile", tt.name+".golden"), []byte(strings.Join(first.Lines, "\n")+"\n"))
			if reports[1].Novel {
				t.Errorf("second changed answer alerted again: %q", reports[1].Lines)
			}
			for i, r := range reports[2:] {
				if r.Lines != nil || r.Novel {
					t.Errorf("changed answer %d: %+v, want it learned", i+3, r)
				}
			}
		})
	}
}

// TestProfileSeed000Line pins SPEC §5's line in code as well.
func TestProfileSeed000Line(t *testing.T) {
	var p shape.Profile
	base := `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`
	observe(t, &p, profileT0, []string{base, base, base, base, base})
	r := observe(t, &p, profileT0.Add(time.Hour), []string{realChanges[0].changed})[0]
	if got, want := fmt.Sprint(r.Lines), "[results: list<object(3 keys)> -> object(1 keys)]"; got != want || !r.Novel {
		t.Errorf("got %s (novel %v), want %s", got, r.Novel, want)
	}
	if got, want := p.Base(), shape.Of(decode(t, []byte(base))).Fingerprint(); got != want {
		t.Errorf("Base: got %s, want the last fitting answer's %s", got, want)
	}
}

// TestProfileMalformedAnswerNotLearned: one odd answer during the warm-up
// is not learned; when it comes back it still drifts.
func TestProfileMalformedAnswerNotLearned(t *testing.T) {
	var p shape.Profile
	good := `{"results":[{"id":"a","score":1}]}`
	bad := `{"results":"internal error"}`
	observe(t, &p, profileT0, []string{good, bad, good, good, good, good})
	r := observe(t, &p, profileT0.Add(time.Hour), []string{bad})[0]
	if got, want := fmt.Sprint(r.Lines), "[results: list<object(2 keys)> -> string]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestProfileWarmup(t *testing.T) {
	var p shape.Profile
	a, b := `{"a":1}`, `{"a":"x"}`
	for i, r := range observe(t, &p, profileT0, []string{a, b, a, b}) {
		if r.Lines != nil {
			t.Errorf("answer %d of the warm-up drifted: %q", i+1, r.Lines)
		}
	}
	if p.Established() {
		t.Errorf("established after %d answers, want %d", p.Answers(), shape.ProfileWarmup)
	}
}

// TestProfileForgets: a variant no answer showed for ProfileWindow is
// forgotten, and a profile without answers for that long starts over.
func TestProfileForgets(t *testing.T) {
	var p shape.Profile
	list := `{"results":[{"id":"a"}]}`
	obj := `{"results":{"items":[{"id":"a"}]}}`
	observe(t, &p, profileT0, []string{list, list, list, list, list, obj, obj})
	// Both layouts are learned; the list one keeps coming for a day.
	at := profileT0.Add(time.Hour)
	for i := range 25 {
		observe(t, &p, at.Add(time.Duration(i)*time.Hour), []string{list})
	}
	r := observe(t, &p, at.Add(25*time.Hour), []string{obj})[0]
	if !r.Novel {
		t.Errorf("a layout last seen more than %v ago: %+v, want it novel again", shape.ProfileWindow, r)
	}
	_, changed := p.Observe(shape.Of(decode(t, []byte(list))), at.Add(60*time.Hour))
	if !changed || p.Answers() != 1 {
		t.Errorf("after %v without answers: changed %v, %d answers; want a new start", 35*time.Hour, changed, p.Answers())
	}
}

// TestProfileChanged: Observe says when more than counts changed, which is
// when the stored form must be written.
func TestProfileChanged(t *testing.T) {
	var p shape.Profile
	a := shape.Of(decode(t, []byte(`{"a":1}`)))
	var got []bool
	for i := range 7 {
		_, c := p.Observe(a, profileT0.Add(time.Duration(i)*time.Minute))
		got = append(got, c)
	}
	if want := "[true true false false true false false]"; fmt.Sprint(got) != want {
		t.Errorf("changed: got %v, want %v (first seen, learned on the 2nd answer, established on the 5th)", got, want)
	}
	// A variant seen once must be kept: it is no longer novel.
	if _, c := p.Observe(shape.Of(decode(t, []byte(`{"a":"x"}`))), profileT0.Add(time.Hour)); !c {
		t.Error("a variant seen for the first time: changed false")
	}
}

func TestProfileStoredForm(t *testing.T) {
	var p shape.Profile
	observe(t, &p, profileT0, play(t, 12, silentPatterns[0].gen))
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var q shape.Profile
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	c, _ := json.Marshal(&q)
	if !bytes.Equal(b, c) {
		t.Errorf("stored form changed by a round trip:\n%s\n%s", b, c)
	}
	checkGolden(t, "testdata/profile/stored_form.golden", append(b, '\n'))
	longKey := `{"v":1,"root":{"kinds":{"object":{"n":1}},"fields":{"` + strings.Repeat("k", shape.MaxKeyBytes+1) + `":{"present":{"n":1},"shape":{}}}}}`
	for _, bad := range []string{`{"v":2}`, `{"v":1,"root":{"kinds":{"set":{"n":1}}}}`, `{"v":1,"answers":-1}`, `[]`, longKey} {
		if err := json.Unmarshal([]byte(bad), &q); err == nil {
			t.Errorf("Unmarshal(%s): no error", bad)
		}
	}
}

// TestProfileSilentPatternsPending lists, for each silent pattern, the
// answers that drift without alerting: a variant the warm-up showed only
// once drifts when it comes back, once, and is learned from then on.
func TestProfileSilentPatternsPending(t *testing.T) {
	want := map[string]string{
		"pagination: next_cursor a string, null on the last page":                      "[10]",
		"a search that sometimes finds nothing":                                        "[]",
		"a search that finds nothing at first":                                         "[]",
		"optional and nullable fields":                                                 "[]",
		"id-keyed map, new keys every answer":                                          "[]",
		"map keyed by ids of no known form":                                            "[]",
		"date-keyed map":                                                               "[]",
		"map keyed by ids of no known form, a field of the values that comes and goes": "[]",
		"lists of mixed objects":                                                       "[]",
		"numbers sometimes int, sometimes float":                                       "[]",
		"optional fields on list items":                                                "[]",
		"nested lists of objects with optional fields":                                 "[]",
		"a field present in some elements of every answer":                             "[]",
	}
	for _, tt := range silentPatterns {
		var p shape.Profile
		var drifting []int
		for i, r := range observe(t, &p, profileT0, play(t, 30, tt.gen)) {
			if r.Lines != nil {
				drifting = append(drifting, i+1)
			}
		}
		if got := fmt.Sprint(drifting); got != want[tt.name] {
			t.Errorf("%s: answers %s drift, want %s", tt.name, got, want[tt.name])
		}
	}
}

// TestProfileKeyedMap: keys of no known form that change from answer to
// answer make the position a map once the profile has seen it; from then
// on the answers share one fingerprint (Canonical) and a change of the
// values drifts.
func TestProfileKeyedMap(t *testing.T) {
	var p shape.Profile
	body := func(i int, score string) string {
		return fmt.Sprintf(`{"by_id":{"doc_%d":{"score":%s},"doc_%d":{"score":%s}}}`, 2*i, score, 2*i+1, score)
	}
	for i := range 6 {
		if r, _ := p.Observe(shape.Of(decode(t, []byte(body(i, "1")))), profileT0.Add(time.Duration(i)*time.Minute)); r.Lines != nil {
			t.Fatalf("answer %d drifted: %q", i+1, r.Lines)
		}
	}
	a := p.Canonical(shape.Of(decode(t, []byte(body(100, "1")))))
	b := p.Canonical(shape.Of(decode(t, []byte(body(200, "2")))))
	if got, want := a.String(), "object{by_id:map<object{score:number}>}"; got != want || a.Fingerprint() != b.Fingerprint() {
		t.Errorf("Canonical: %s and %s, want both %s", a, b, want)
	}
	if !p.KeyedAt([]shape.Step{{Key: "by_id"}}) || p.KeyedAt(nil) || p.KeyedAt([]shape.Step{{Key: "nope"}}) ||
		p.KeyedAt([]shape.Step{{Key: "by_id"}, {Values: true}}) {
		t.Error("KeyedAt: want by_id keyed, and neither the root, an unknown key nor by_id's values")
	}
	plain := shape.Of(decode(t, []byte(`{"id":"x"}`)))
	if got := p.Canonical(plain); got.String() != plain.String() {
		t.Errorf("Canonical changed a shape with no keyed position: %s", got)
	}
	r := p.Check(shape.Of(decode(t, []byte(body(300, `"high"`)))))
	if got, want := fmt.Sprint(r.Lines), "[by_id.*.score: number -> string]"; got != want || !r.Novel {
		t.Errorf("a retyped value of the keyed map: %s (novel %v), want %s", got, r.Novel, want)
	}
	// A few named fields that come and go are not keys.
	var q shape.Profile
	for i := range 8 {
		extra := [...]string{`,"author":"a"`, ``, `,"tags":"x"`, ``}[i%4]
		q.Observe(shape.Of(decode(t, []byte(`{"meta":{"title":"t"`+extra+`}}`))), profileT0.Add(time.Duration(i)*time.Minute))
	}
	if got := q.Learned().String(); got != "object{meta:object{author?:string,tags?:string,title:string}}" {
		t.Errorf("optional named fields: learned %s", got)
	}
}

// TestProfileKeyedMapKeepsOptionalFields: values of a map learned from
// answers before the profile knew it was a map keep what those answers
// showed: a field some of the values lacked stays optional.
func TestProfileKeyedMapKeepsOptionalFields(t *testing.T) {
	var p shape.Profile
	doc := func(id int, author bool) string {
		if author {
			return fmt.Sprintf(`"doc_%d":{"title":"t","author":"Ann"}`, id)
		}
		return fmt.Sprintf(`"doc_%d":{"title":"t"}`, id)
	}
	var bodies []string
	for i := range 6 {
		// The first two answers have a value without an author; the
		// next ones all have one.
		bodies = append(bodies, `{"by_id":{`+doc(2*i, true)+`,`+doc(2*i+1, i >= 2)+`}}`)
	}
	bodies = append(bodies, `{"by_id":{`+doc(100, false)+`}}`)
	for i, r := range observe(t, &p, profileT0, bodies) {
		if r.Lines != nil {
			t.Errorf("answer %d drifted: %q", i+1, r.Lines)
		}
	}
}

// hostileAnswers are providers that try to grow what a profile keeps,
// answer after answer, with keys no real contract has.
var hostileAnswers = []struct {
	name    string
	answers int
	gen     answers
}{
	{"a new 400 KB key per answer", 60, func(i int, _ *rand.Rand) string {
		return fmt.Sprintf(`{"results":[],"%06d%s":1}`, i, strings.Repeat("k", 400<<10))
	}},
	{"a new 400 KB key per answer, nested under another", 60, func(i int, _ *rand.Rand) string {
		long := strings.Repeat("k", 400<<10)
		return fmt.Sprintf(`{"data":{"%06d%s":{"%s%06d":"v"}}}`, i, long, long, i)
	}},
	{"new structure of 930 positions per answer", 60, func(i int, _ *rand.Rand) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"n":1,"r%06d":{`, i)
		for a := range 30 {
			if a > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"a%02d":{`, a)
			for c := range 30 {
				if c > 0 {
					b.WriteByte(',')
				}
				if c%2 == 0 {
					fmt.Fprintf(&b, `"b%02d":1`, c)
				} else {
					fmt.Fprintf(&b, `"b%02d":"v"`, c)
				}
			}
			b.WriteByte('}')
		}
		b.WriteString(`}}`)
		return b.String()
	}},
	{"a new key per answer, more than MaxKeys of them", 2 * shape.MaxKeys, func(i int, _ *rand.Rand) string {
		if i%2 == 0 {
			return fmt.Sprintf(`{"field_%06d":1}`, i)
		}
		return fmt.Sprintf(`{"field_%06d":"v"}`, i)
	}},
}

// TestProfileHostileAnswersBounded checks that what a profile keeps, its
// stored form, its learned shape and its report lines stay bounded however
// long and however many keys a provider's answers bring.
func TestProfileHostileAnswersBounded(t *testing.T) {
	for _, tt := range hostileAnswers {
		t.Run(tt.name, func(t *testing.T) {
			var p shape.Profile
			longest := 0
			for i, body := range play(t, tt.answers, tt.gen) {
				s := shape.Of(decode(t, []byte(body)))
				if got, want := len(s.String()), 2*shape.MaxKeys*(4*shape.MaxKeyBytes+64); got > want {
					t.Fatalf("answer %d: canonical text is %d bytes, want at most %d", i+1, got, want)
				}
				r, _ := p.Observe(s, profileT0.Add(time.Duration(i)*time.Second))
				for _, l := range r.Lines {
					longest = max(longest, len(l))
				}
			}
			if want := 4 * shape.MaxKeyBytes; longest > want {
				t.Errorf("longest report line is %d bytes, want at most %d", longest, want)
			}
			stored, err := json.Marshal(&p)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Count(string(stored), `"seen":`), shape.MaxProfilePositions; got > want {
				t.Errorf("stored form has %d positions, want at most %d", got, want)
			}
			if got, want := len(stored), shape.MaxProfilePositions*256; got > want {
				t.Errorf("stored form is %d bytes, want at most %d", got, want)
			}
			if got, want := len(p.Learned().String()), shape.MaxProfilePositions*(4*shape.MaxKeyBytes+64); got > want {
				t.Errorf("learned canonical text is %d bytes, want at most %d", got, want)
			}
			var q shape.Profile
			if err := json.Unmarshal(stored, &q); err != nil {
				t.Errorf("the stored form does not read back: %v", err)
			}
		})
	}
}

package shape_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results/shape"
)

// searchBody returns a search-results body of at least size bytes, shaped
// like the ones toolpulse probes: a list of results with nested source,
// tags and highlights, some fields null in some items.
func searchBody(tb testing.TB, size int) []byte {
	tb.Helper()
	type highlight struct {
		Field     string   `json:"field"`
		Fragments []string `json:"fragments"`
	}
	var results []map[string]any
	body := func() []byte {
		b, err := json.Marshal(map[string]any{
			"query": "api migration", "took_ms": 12, "total": len(results),
			"results": results, "next_cursor": "c_" + fmt.Sprint(len(results)),
		})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	for i := 0; ; i++ {
		var author any
		if i%3 == 0 {
			author = fmt.Sprintf("author %d", i)
		}
		results = append(results, map[string]any{
			"id":           fmt.Sprintf("doc_%d", i),
			"title":        fmt.Sprintf("API migration guide, part %d", i),
			"url":          fmt.Sprintf("https://docs.example.com/api/migration/%d", i),
			"snippet":      "How to move from the v1 search endpoint to v2, with the new pagination cursor and result wrapper.",
			"score":        1 / float64(i+1),
			"published_at": "2026-10-01T09:00:00Z",
			"author":       author,
			"source":       map[string]any{"name": "Example Docs", "domain": "docs.example.com", "verified": i%2 == 0},
			"tags":         []string{"api", "migration", "v2"}[:i%4%3],
			"highlights":   []highlight{{Field: "title", Fragments: []string{"API <em>migration</em> guide"}}},
		})
		if b := body(); len(b) >= size {
			return b
		}
	}
}

// BenchmarkFingerprint measures Of and Fingerprint on a decoded body, which
// is what the runner adds to every run; the decode variant includes
// json.Unmarshal for scale.
func BenchmarkFingerprint(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"4KB", 4 << 10}, {"256KB", 256 << 10}} {
		body := searchBody(b, size.bytes)
		b.Run(size.name, func(b *testing.B) {
			v := decode(b, body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if fp := shape.Of(v).Fingerprint(); len(fp) != 16 {
					b.Fatal(fp)
				}
			}
		})
		b.Run(size.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				if err := json.Unmarshal(body, &v); err != nil {
					b.Fatal(err)
				}
				shape.Of(v).Fingerprint()
			}
		})
	}
}

// TestSearchBody keeps the benchmark input honest: a valid body of about
// the stated size whose shape is the expected one.
func TestSearchBody(t *testing.T) {
	body := searchBody(t, 4<<10)
	if len(body) > 5<<10 {
		t.Errorf("4KB body is %d bytes", len(body))
	}
	got := shape.Of(decode(t, body)).String()
	want := "object{next_cursor:string,query:string,results:list<object{author:null|string,highlights:list<object{field:string,fragments:list<string>}>,id:string,published_at:string,score:number,snippet:string,source:object{domain:string,name:string,verified:bool},tags:list<string>,title:string,url:string}>,took_ms:number,total:number}"
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// BenchmarkProfileObserve measures what drift detection adds to a run: an
// established profile judges and learns the answer's shape.
func BenchmarkProfileObserve(b *testing.B) {
	s := shape.Of(decode(b, searchBody(b, 4<<10)))
	var p shape.Profile
	at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	for i := range shape.ProfileWarmup {
		p.Observe(s, at.Add(time.Duration(i)*time.Minute))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if r, _ := p.Observe(s, at.Add(time.Duration(i)*time.Second)); r.Lines != nil {
			b.Fatal(r.Lines)
		}
	}
}

// profileHeap returns the live heap one established profile of the 2 KB
// search answer takes, measured over n of them.
func profileHeap(tb testing.TB, n int) float64 {
	tb.Helper()
	s := shape.Of(decode(tb, searchBody(tb, 2<<10)))
	at := time.Date(2026, 10, 26, 13, 0, 0, 0, time.UTC)
	before := liveHeap()
	profiles := make([]*shape.Profile, n)
	for i := range profiles {
		p := &shape.Profile{}
		for j := range shape.ProfileWarmup {
			p.Observe(s, at.Add(time.Duration(j)*time.Minute))
		}
		profiles[i] = p
	}
	after := liveHeap()
	runtime.KeepAlive(profiles)
	return float64(int64(after)-int64(before)) / float64(n)
}

// BenchmarkProfileMemory measures what the runner keeps in memory per
// probe for drift: one established profile of the 2 KB search answer
// (heap-B/profile, the live heap after a GC over 1,000 such profiles).
func BenchmarkProfileMemory(b *testing.B) {
	for b.Loop() {
		b.ReportMetric(profileHeap(b, 1000), "heap-B/profile")
	}
}

// TestProfileMemory holds a profile's size: the runner keeps one per
// probe (and step) in memory, 10,000 of them in a fleet of 10,000 probes.
// A profile of the 2 KB search answer (26 positions) took 11.6 KB while
// its counts carried a time.Time each, 4.8 KB with a map per object and a
// count for each of the eight kinds at every position, 4.3 KB since (3.6 KB
// as a clone, the form the runner keeps).
func TestProfileMemory(t *testing.T) {
	const limit = 6 << 10
	if got := profileHeap(t, 1000); got > limit {
		t.Errorf("a profile of the 2 KB search answer takes %.0f bytes of heap, more than %d", got, limit)
	}
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

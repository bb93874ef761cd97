package consumers

import (
	"encoding/json"
	"fmt"
	"testing"
)

// measured runs op b.N times and reports, next to ns/op, the CPU the whole
// process spent per op (cpu-ns/op): on a shared machine the wall clock
// counts the time other processes hold the cores, the CPU time does not,
// and it includes the garbage collector's work, which ns/op spreads thinly.
func measured(b *testing.B, op func()) {
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// searchBody is a seed-000 style answer with n results, about 180 bytes each.
func searchBody(n int) []byte {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{
			"id":      fmt.Sprintf("doc_%d", 700+i),
			"title":   fmt.Sprintf("API migration guide, part %d: moving from v1 to v2", i),
			"url":     fmt.Sprintf("https://docs.example.com/guides/api-migration/part-%d", i),
			"score":   0.70 + float64(i%30)/100,
			"updated": 1767225600 + i*3600,
		}
	}
	b, err := json.Marshal(map[string]any{"results": items, "next_cursor": "c_20"})
	if err != nil {
		panic(err)
	}
	return b
}

// searchBodyOf is searchBody with as many results as fit in size bytes.
func searchBodyOf(size int) []byte {
	n := 1
	for len(searchBody(n+1)) <= size {
		n++
	}
	return searchBody(n)
}

func benchApply(b *testing.B, c *Consumer, body []byte) {
	in := Input{Response: mustDecode(b, string(body)), Status: 200,
		Headers: map[string]string{"content-type": "application/json"}, Probe: "external_search"}
	if v := c.Apply(in, 1); v.Err != nil || v.Validated == 0 {
		b.Fatalf("Apply = %+v, want a pass", v)
	}
	measured(b, func() { c.Apply(in, 1) })
}

// BenchmarkApply is the seed-000 consumer (select_results.yaml) on a
// 20-result answer: the common case of every run.
func BenchmarkApply(b *testing.B) {
	benchApply(b, selectResultsConsumer(b), searchBody(20))
}

// BenchmarkApplyLoopHeavy runs rules that spend their time in loops over a
// 200-result answer: one whose cost has a bound (cost.go), so that it runs
// without charges; the same with split() in validate, which has none; and a
// loop over the results inside a loop over them (20 results), the kind of
// rule the budget exists for.
func BenchmarkApplyLoopHeavy(b *testing.B) {
	const selectLoop = `response.results
		| filter(.score >= 0.75 && .url startsWith "https://" && len(.title) > 10)
		| sortBy(.score, "desc")`
	b.Run("bounded", func(b *testing.B) {
		c := mustCompile(b, Source{Select: selectLoop,
			Validate: `type(.id) == "string" && .score > 0 && all([.id, .title, .url], len(#) > 0)`})
		if c.selectFast == nil {
			b.Fatalf("no bound: %s", c.unbounded)
		}
		benchApply(b, c, searchBody(200))
	})
	b.Run("split", func(b *testing.B) {
		c := mustCompile(b, Source{Select: selectLoop,
			Validate: `type(.id) == "string" && none(split(.title, " "), # == "") && .score > 0`})
		benchApply(b, c, searchBody(200))
	})
	b.Run("nested", func(b *testing.B) {
		c := mustCompile(b, Source{
			Select:   `filter(response.results, count(response.results, .score > 0.85) > 0 && .score >= 0.75)`,
			Validate: `type(.id) == "string"`,
		})
		benchApply(b, c, searchBody(20))
	})
}

func BenchmarkDecodeJSON(b *testing.B) {
	for _, size := range []struct {
		name  string
		bytes int
	}{{"4KB", 4 << 10}, {"256KB", 256 << 10}} {
		b.Run(size.name, func(b *testing.B) {
			body := searchBodyOf(size.bytes)
			b.SetBytes(int64(len(body)))
			measured(b, func() {
				if _, err := DecodeJSON(body); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

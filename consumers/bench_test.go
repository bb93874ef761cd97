package consumers

import (
	"encoding/json"
	"fmt"
	"testing"
)

// searchBody is a seed-000 style answer with n results, about 200 bytes each.
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

func BenchmarkApply(b *testing.B) {
	c := selectResultsConsumer(b)
	in := Input{Response: mustDecode(b, string(searchBody(20))), Status: 200,
		Headers: map[string]string{"content-type": "application/json"}, Probe: "external_search"}
	if v := c.Apply(in, 1); v.Err != nil || v.Validated == 0 {
		b.Fatalf("Apply = %+v, want a pass", v)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Apply(in, 1)
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	body := searchBody(20)
	b.Logf("body is %d bytes", len(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}

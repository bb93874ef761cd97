package shape_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolpulse/toolpulse/results/shape"
)

func ExampleOf() {
	var v any
	_ = json.Unmarshal([]byte(`{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`), &v)
	s := shape.Of(v)
	fmt.Println(s)
	fmt.Println(s.Summary())
	// Output:
	// object{next_cursor:null,results:list<object{id:string,score:number,title:string}>}
	// object(2 keys)
}

func ExampleDiff() {
	var baseline, drifted any
	_ = json.Unmarshal([]byte(`{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`), &baseline)
	_ = json.Unmarshal([]byte(`{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`), &drifted)
	for _, line := range shape.Diff(shape.Of(baseline), shape.Of(drifted)) {
		fmt.Println(line)
	}
	// Output:
	// results: list<object(3 keys)> -> object(1 keys)
}

func ExampleParse() {
	s, err := shape.Parse("object{score:number|string}")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Summary(), len(s.Fingerprint()))
	_, err = shape.Parse("object{score:string|number}")
	fmt.Println(err)
	// Output:
	// object(1 keys) 16
	// shape: offset 20: kinds of a union must be distinct and in the order ..., bool, list, map, null, number, object, string
}

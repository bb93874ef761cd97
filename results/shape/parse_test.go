package shape_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results/shape"
)

// keys returns n fields "k000:number,k001:number,..." for object texts.
func keys(n int) string {
	f := make([]string, n)
	for i := range f {
		f[i] = fmt.Sprintf("k%03d:number", i)
	}
	return strings.Join(f, ",")
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name, text, summary string
	}{
		{"scalar", "string", "string"},
		{"marker", "...", "..."},
		{"union of every kind", "...|bool|list<number>|null|number|object{a:null}|string", "...|bool|list<number>|null|number|object(1 keys)|string"},
		{"empty list", "list<empty>", "list<empty>"},
		{"empty object", "object{}", "object(0 keys)"},
		{"list of union", "list<number|object{a:number|string}>", "list<number|object(1 keys)>"},
		{"seed000 drifted", "object{next_cursor:null,results:object{items:list<object{id:string,score:number,title:string}>}}", "object(2 keys)"},
		{"optional keys", `list<object{a?:number,"b?"?:string,c:null}>`, "list<object(3 keys)>"},
		{"quoted keys", `object{"":null,"\x00\x7f\xff":null,"\"":null,"\\":null,"a.b":null,"\u00e9\U0001f680":null}`, "object(6 keys)"},
		{"keys that look like syntax", `object{"...":null,"...1":null,"list<empty>":null,null:null}`, "object(4 keys)"},
		{"truncated object", "object{" + keys(shape.MaxKeys) + ",...44}", "object(300 keys)"},
		{"MaxKeys keys, not truncated", "object{" + keys(shape.MaxKeys) + "}", "object(256 keys)"},
		{"key of MaxKeyBytes", "object{" + strings.Repeat("k", shape.MaxKeyBytes) + ":null}", "object(1 keys)"},
		{"cut key", `object{"` + strings.Repeat("k", shape.MaxKeyBytes-20) + `...#0123456789abcdef":null}`, "object(1 keys)"},
		{"MaxDepth levels", strings.Repeat("list<", shape.MaxDepth) + "..." + strings.Repeat(">", shape.MaxDepth), strings.Repeat("list<", shape.MaxDepth) + "..." + strings.Repeat(">", shape.MaxDepth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := shape.Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got, want := s.String(), tt.text; got != want {
				t.Errorf("String: got %s, want %s", got, want)
			}
			if got, want := s.Summary(), tt.summary; got != want {
				t.Errorf("Summary: got %s, want %s", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("list<", shape.MaxDepth+1) + "null" + strings.Repeat(">", shape.MaxDepth+1)
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "empty text"},
		{"unknown kind", "integer", "offset 0: expected a shape"},
		{"summary is not canonical", "object(1 keys)", "offset 0: expected a shape"},
		{"space", "object{a: number}", "offset 9: expected a shape"},
		{"trailing text", "null null", `offset 4: unexpected ' ' after the shape`},
		{"unclosed list", "list<number", `offset 11: expected '>', found end of text`},
		{"unclosed object", "object{a:number", `offset 15: expected '}', found end of text`},
		{"missing colon", "object{a}", `offset 8: expected ':', found '}'`},
		{"optional twice", "object{a??:null}", `offset 9: expected ':', found '?'`},
		{"missing key", "object{:number}", "offset 7: expected a key"},
		{"trailing comma", "object{a:number,}", "offset 16: expected a key"},
		{"keys unsorted", "object{b:null,a:null}", "offset 14: keys must be distinct and in byte order"},
		{"key repeated", "object{a:null,a:null}", "offset 14: keys must be distinct and in byte order"},
		{"kinds unsorted", "string|number", "offset 7: kinds of a union must be distinct and in the order"},
		{"kind repeated", "number|number", "offset 7: kinds of a union must be distinct"},
		{"two lists", "list<null>|list<bool>", "offset 11: kinds of a union must be distinct"},
		{"empty union member", "number|", "offset 7: expected a shape"},
		{"needless quotes", `object{"a":null}`, "not canonical text"},
		{"uppercase hex escape", `object{"\x1F":null}`, `want \x and 2 lowercase hex digits`},
		{"uppercase unicode escape", `object{"\u00E9":null}`, `want \u and 4 lowercase hex digits`},
		{"needless unicode escape", `object{"\u0041":null}`, "not canonical text"},
		{"BMP rune as long escape", `object{"\U000000e9":null}`, "not canonical text"},
		{"surrogate escape", `object{"\ud800":null}`, "not canonical text"},
		{"escape beyond Unicode", `object{"\U00110000":null}`, `escape "\\U00110000" is beyond Unicode`},
		{"raw non-ASCII", `object{"é":null}`, "not canonical text"},
		{"needless hex escape", `object{"\x41":null}`, "not canonical text"},
		{"raw control byte", "object{\"\x01\":null}", "not canonical text"},
		{"unknown escape", `object{"\n":null}`, `unknown escape "\\n"`},
		{"unterminated key", `object{"abc`, "offset 7: unterminated quoted key"},
		{"unterminated escape", `object{"\`, "unterminated escape"},
		{"short hex escape", `object{"\x4`, "unterminated escape"},
		{"short unicode escape", `object{"\u00e`, "unterminated escape"},
		{"marker too early", "object{a:null,...3}", `offset 17: "..." after 1 keys, want it only after 256`},
		{"marker without count", "object{" + keys(shape.MaxKeys) + ",...}", "expected the count of keys left out"},
		{"marker count zero", "object{" + keys(shape.MaxKeys) + ",...0}", "expected the count of keys left out"},
		{"marker count leading zero", "object{" + keys(shape.MaxKeys) + ",...07}", "expected the count of keys left out"},
		{"marker count too large", "object{" + keys(shape.MaxKeys) + ",...1000000000}", "key count too large"},
		{"too many keys", "object{" + keys(shape.MaxKeys+1) + "}", "more than 256 keys"},
		{"bare key too long", "object{" + strings.Repeat("k", shape.MaxKeyBytes+1) + ":null}", "offset 7: key longer than 128 bytes"},
		{"quoted key too long", `object{"` + strings.Repeat(" ", shape.MaxKeyBytes+1) + `":null}`, "offset 7: key longer than 128 bytes"},
		{"escaped key too long", `object{"` + strings.Repeat(`\u00e9`, shape.MaxKeyBytes/2+1) + `":null}`, "offset 7: key longer than 128 bytes"},
		{"too deep", deep, "offset 320: nested deeper than 64 levels"},
		{"non-canonical union order in list", "list<string|null>", "offset 12: kinds of a union must be distinct"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := shape.Parse(tt.text)
			if err == nil {
				t.Fatalf("got shape %s, want error containing %q", s, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %q, want it to contain %q", err, tt.want)
			}
			if s.String() != "" {
				t.Errorf("got shape %s with the error, want the zero Shape", s)
			}
		})
	}
}

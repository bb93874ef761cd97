package consumers

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

func (g *generator) wrapList(v any) (any, bool) {
	if l, ok := v.([]any); ok {
		return map[string]any{wrapKey: l}, true
	}
	return v, false
}

func (g *generator) unwrap(key string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		if m, ok := v.(map[string]any); ok {
			if l, ok := m[key].([]any); ok {
				return l, true
			}
		}
		return v, false
	}
}

func (g *generator) removeKey(key string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		if _, ok := m[key]; !ok {
			return v, false
		}
		out := g.copyMap(m, 0)
		delete(out, key)
		return out, true
	}
}

func (g *generator) renameKey(from, to string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		x, ok := m[from]
		if !ok {
			return v, false
		}
		out := g.copyMap(m, 0)
		delete(out, from)
		out[to] = x
		return out, true
	}
}

func (g *generator) addKey(key string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return v, false
		}
		out := g.copyMap(m, 1)
		out[key] = addedValue
		return out, true
	}
}

func (g *generator) retype(kinds kindSet, to func(any) any) func(any) (any, bool) {
	return func(v any) (any, bool) {
		if kindOf(v)&kinds == 0 {
			return v, false
		}
		return to(v), true
	}
}

func (g *generator) emptyList(v any) (any, bool) {
	if l, ok := v.([]any); ok && len(l) > 0 {
		return []any{}, true
	}
	return v, false
}

func (g *generator) nonObjectItems(v any) (any, bool) {
	l, ok := v.([]any)
	if !ok {
		return v, false
	}
	var out []any
	for i, e := range l {
		if _, ok := e.(map[string]any); !ok {
			continue
		}
		if out == nil {
			out = g.copyList(l)
		}
		out[i] = stringItem
	}
	if out == nil {
		return v, false
	}
	return out, true
}

func (g *generator) nest(v any) (any, bool) {
	return map[string]any{nestKey: v}, true
}

// numberText is a number's JSON text: 0.93 becomes "0.93".
func numberText(v any) any {
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	// Only infinities get here (a YAML .inf fixture); JSON has no text
	// for them.
	f, _ := v.(float64)
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// renamed returns the name a provider renaming key would likely give it:
// snake_case becomes camelCase, camelCase becomes snake_case, and any other
// key has the case of its first letter flipped ("score" becomes "Score").
// It returns "" when key has no letter case to change.
func renamed(key string) string {
	if s := snakeToCamel(key); s != key {
		return s
	}
	if s := camelToSnake(key); s != key {
		return s
	}
	r, size := utf8.DecodeRuneInString(key)
	var s string
	switch {
	case unicode.IsLower(r):
		s = string(unicode.ToUpper(r)) + key[size:]
	case unicode.IsUpper(r):
		s = string(unicode.ToLower(r)) + key[size:]
	}
	if s == key || r == utf8.RuneError {
		return ""
	}
	return s
}

// snakeToCamel drops each underscore that follows a character other than
// an underscore and precedes a lower-case ASCII letter, upper-casing the
// letter: next_cursor becomes nextCursor.
func snakeToCamel(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' && i > 0 && key[i-1] != '_' && i+1 < len(key) && 'a' <= key[i+1] && key[i+1] <= 'z' {
			b.WriteByte(key[i+1] - 'a' + 'A')
			i++
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// camelToSnake puts an underscore before each upper-case ASCII letter that
// follows a lower-case ASCII letter or a digit, lower-casing the letter:
// nextCursor becomes next_cursor.
func camelToSnake(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'A' <= c && c <= 'Z' && i > 0 && ('a' <= key[i-1] && key[i-1] <= 'z' || '0' <= key[i-1] && key[i-1] <= '9') {
			b.WriteByte('_')
			b.WriteByte(c - 'A' + 'a')
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

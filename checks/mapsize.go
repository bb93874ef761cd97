package checks

import (
	"github.com/goccy/go-yaml/token"
)

// maxMapKeys bounds the keys of one YAML mapping. The parser copies a
// mapping's entries once per key, so its time grows with the square of the
// keys: 20,000 keys take 1.5 s and 100,000 (a 1.2 MB file) 53 s, long enough
// to stall a start or a reload. A real config's largest mapping is its
// labels or headers, a handful of keys; a probe list is a sequence, which
// does not have this cost. 10,000 keys parse in about 0.35 s.
const maxMapKeys = 10_000

// bigMapping returns the key that takes a mapping past maxMapKeys, or nil.
// It reads the lexer's tokens, whose cost is linear, before the parser
// sees them. A block mapping's keys share one column: a key or a
// sequence entry further left ends the mappings to its right, so a stack
// of (column, keys) follows the nesting. A flow mapping's keys are counted
// between its braces. The count may only merge two mappings when nothing
// at a smaller column separates them, which a valid document cannot do.
func bigMapping(tokens token.Tokens) *token.Token {
	type block struct{ column, keys int }
	var (
		blocks []block
		flows  []int // keys per open flow collection; -1 for a sequence
	)
	closeBlocks := func(column int) {
		for len(blocks) > 0 && blocks[len(blocks)-1].column > column {
			blocks = blocks[:len(blocks)-1]
		}
	}
	for i, tk := range tokens {
		if tk == nil || tk.Position == nil {
			continue
		}
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType:
			blocks, flows = blocks[:0], flows[:0]
		case token.MappingStartType:
			flows = append(flows, 0)
		case token.SequenceStartType:
			flows = append(flows, -1)
		case token.MappingEndType, token.SequenceEndType:
			if len(flows) > 0 {
				flows = flows[:len(flows)-1]
			}
		case token.SequenceEntryType:
			if len(flows) == 0 {
				closeBlocks(tk.Position.Column)
			}
		case token.MappingValueType:
			key := tk
			if i > 0 && tokens[i-1] != nil && tokens[i-1].Position != nil {
				key = tokens[i-1]
			}
			if n := len(flows); n > 0 {
				if flows[n-1] >= 0 {
					if flows[n-1]++; flows[n-1] > maxMapKeys {
						return key
					}
				}
				continue
			}
			column := key.Position.Column
			closeBlocks(column)
			if n := len(blocks); n > 0 && blocks[n-1].column == column {
				if blocks[n-1].keys++; blocks[n-1].keys > maxMapKeys {
					return key
				}
				continue
			}
			blocks = append(blocks, block{column: column, keys: 1})
		}
	}
	return nil
}

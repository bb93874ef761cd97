package tooldef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The parts of a probe's definition beside its tool's Fields (SPEC
// §10.1). A server's instructions reach every agent that connects, and
// its prompts and resources are read by agents as its tools are: a server
// re-instructs agents through any of them.
const (
	// PartServer is what the server says of itself in the handshake
	// (initialize, or server/discover): {instructions, name, version}.
	PartServer = "server"
	// PartPrompts is the prompts/list listing, by prompt name; only where
	// the probe watches it.
	PartPrompts = "prompts"
	// PartResources is the resources/list listing, by URI; only where the
	// probe watches it.
	PartResources = "resources"
)

// listingFields are the keys of a listing's entry whose change is a
// definition drift. As with tools, a title or _meta may change without
// changing what the entry is; a resource's size and annotations
// (lastModified) change with its content, which is not its definition.
var listingFields = map[string][]string{
	PartPrompts:   {"description", "arguments"},
	PartResources: {"name", "description", "mimeType"},
}

// listingKey is the field an entry of each listing is known by.
var listingKey = map[string]string{PartPrompts: "name", PartResources: "uri"}

// Server is what a definition watches of the server itself.
type Server struct {
	Name, Version, Instructions string
}

// WithServer sets d's server part. Every definition read from a live
// session has one, which is how Comparable tells it from one stored
// before the server was watched.
func (d Definition) WithServer(s Server) {
	part := map[string]any{"name": s.Name, "version": s.Version}
	if s.Instructions != "" {
		part["instructions"] = s.Instructions
	}
	d[PartServer] = part
}

// WithListing sets d's part of listing (PartPrompts or PartResources)
// from the listing's raw entries, every page of it: an object of the
// entries by name (prompts) or URI (resources), each with the listing's
// watched fields. An entry without its key is kept under "#N", its place
// in the listing, and a key listed again under "KEY#2", so that nothing a
// server lists goes unwatched. An entry that is not an object is an
// error.
func (d Definition) WithListing(listing string, entries []json.RawMessage) error {
	fields, ok := listingFields[listing]
	if !ok {
		return fmt.Errorf("tooldef: no listing %q", listing)
	}
	part := make(map[string]any, len(entries))
	for i, raw := range entries {
		var all map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&all); err != nil || all == nil {
			return fmt.Errorf("tooldef: %s entry %d is not a JSON object", listing, i)
		}
		key, _ := all[listingKey[listing]].(string)
		if key == "" {
			key = "#" + strconv.Itoa(i)
		}
		for n, k := 2, key; ; n++ {
			if _, taken := part[k]; !taken {
				key = k
				break
			}
			k = key + "#" + strconv.Itoa(n)
		}
		entry := map[string]any{}
		for _, f := range fields {
			if v, ok := all[f]; ok {
				entry[f] = v
			}
		}
		part[key] = entry
	}
	d[listing] = part
	return nil
}

// ParseStored reads a definition's canonical form back, as a store keeps
// it: the tool's Fields and the parts beside them.
func ParseStored(canonical []byte) (Definition, error) {
	var all map[string]any
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.UseNumber()
	if err := dec.Decode(&all); err != nil {
		return nil, fmt.Errorf("tooldef: the stored definition is not a JSON object: %w", err)
	}
	if all == nil {
		return nil, errors.New("tooldef: the stored definition is null, not an object")
	}
	d := Definition{}
	for _, k := range append([]string{PartServer, PartPrompts, PartResources}, Fields...) {
		if v, ok := all[k]; ok {
			d[k] = v
		}
	}
	return d, nil
}

package postgres

import (
	"encoding/binary"
	"fmt"

	"github.com/toolpulse/toolpulse/results/hourly"
)

// hourBuckets is the duration buckets of a probe's whole hours as stats
// reads them: ms[i] a bucket, runs[i] its runs, an hour's after another's
// (a bucket may repeat). Its slices are reused from probe to probe.
type hourBuckets struct {
	ms, runs []int64
}

// read sets b from the concatenated binary bucket_ms and bucket_runs
// arrays of some hours (statsSums), refusing what RecordRun never writes:
// keys that are not buckets, negative counts, arrays of different lengths.
func (b *hourBuckets) read(ms, runs []byte) error {
	var err error
	if b.ms, err = readInt8Arrays(ms, b.ms[:0]); err != nil {
		return fmt.Errorf("bucket_ms: %w", err)
	}
	if b.runs, err = readInt8Arrays(runs, b.runs[:0]); err != nil {
		return fmt.Errorf("bucket_runs: %w", err)
	}
	if len(b.ms) != len(b.runs) {
		return fmt.Errorf("%w: %d buckets, %d counts", errBuckets, len(b.ms), len(b.runs))
	}
	for i, ms := range b.ms {
		if ms < 0 || hourly.Bucket(ms) != ms || b.runs[i] < 0 {
			return fmt.Errorf("%w: bucket %d with %d runs", errBuckets, ms, b.runs[i])
		}
	}
	return nil
}

// int8OID is the type of the elements of a bigint[].
const int8OID = 20

// readInt8Arrays appends to out the elements of the bigint arrays in data,
// one after another, each in the binary form Postgres sends an array in
// (array_send: the number of dimensions, a has-nulls flag, the element
// type, then per dimension its length and lower bound, then each element
// as its length and its bytes, big-endian). Empty data is no array; an
// empty array has no dimension. It refuses anything else: more than one
// dimension, a null, another element type, bytes cut short.
func readInt8Arrays(data []byte, out []int64) ([]int64, error) {
	be := binary.BigEndian
	bad := func(what string) error {
		return fmt.Errorf("%w: %s, %d bytes from the end", errBuckets, what, len(data))
	}
	for len(data) > 0 {
		if len(data) < 12 {
			return out, bad("array header cut short")
		}
		dims, nulls, elem := be.Uint32(data), be.Uint32(data[4:]), be.Uint32(data[8:])
		data = data[12:]
		switch {
		case dims == 0:
			continue
		case dims != 1:
			return out, bad(fmt.Sprintf("an array of %d dimensions", dims))
		case nulls != 0:
			return out, bad("an array with nulls")
		case elem != int8OID:
			return out, bad(fmt.Sprintf("an array of type %d, not bigint", elem))
		case len(data) < 8:
			return out, bad("array dimension cut short")
		}
		n := int(be.Uint32(data))
		data = data[8:]
		if n < 0 || len(data) < 12*n {
			return out, bad(fmt.Sprintf("%d elements", n))
		}
		for range n {
			if be.Uint32(data) != 8 {
				return out, bad("an element that is not 8 bytes")
			}
			out = append(out, int64(be.Uint64(data[4:])))
			data = data[12:]
		}
	}
	return out, nil
}

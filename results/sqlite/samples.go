package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/toolpulse/toolpulse/results"
)

// latestPassSample is probe ?1's latest passing run, in the order history
// is listed in, with its shape's sample: one search of the index on
// (probe, outcome, started_at) (migration 0001), read backwards and
// stopped at the first row, then one row of results and one of shapes.
// The LEFT JOIN keeps the latest pass even when its shape has no sample,
// so that an older pass is never taken for the latest.
const latestPassSample = `SELECT r.operation_id, r.started_at, r.shape_fingerprint, s.sample
FROM results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
WHERE r.probe = ?1 AND r.outcome = 'pass'
ORDER BY r.started_at DESC, r.id DESC
LIMIT 1`

// LatestPassSamples returns, for each of probes (all probes with results
// when probes is empty), the sample of the shape of its latest passing
// run, when that shape has one. Probes without a passing run or without a
// sample are absent from the map.
//
// "Latest" is the highest started_at, and of runs that started in the same
// millisecond the last recorded. A later run that did not pass does not
// count, and neither does an earlier pass: when the latest pass's shape has
// no sample the probe is absent. The sample is the first body of that
// shape a passing run brought (Shape.Sample), which may be a pass of
// another probe with the same shape.
//
// Everything is read in one read transaction, so the probes are seen at
// one moment: an index search per probe, plus one per probe name when
// probes is empty.
func (s *Store) LatestPassSamples(ctx context.Context, probes []string) (map[string]results.PassSample, error) {
	out, err := s.latestPassSamples(ctx, probes)
	if err != nil {
		return nil, fmt.Errorf("sqlite: latest pass samples: %w", err)
	}
	return out, nil
}

func (s *Store) latestPassSamples(ctx context.Context, probes []string) (map[string]results.PassSample, error) {
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if len(probes) == 0 {
		if probes, err = readStrings(ctx, tx, probeNames); err != nil {
			return nil, fmt.Errorf("probes: %w", err)
		}
	}
	stmt, err := tx.PrepareContext(ctx, latestPassSample)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()

	out := make(map[string]results.PassSample, len(probes))
	for _, probe := range probes {
		if _, done := out[probe]; done {
			continue
		}
		var (
			p                   = results.PassSample{Probe: probe}
			startedAt           string
			fingerprint, sample sql.NullString
		)
		err := stmt.QueryRowContext(ctx, probe).Scan(&p.OperationID, &startedAt, &fingerprint, &sample)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !sample.Valid) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("probe %q: %w", probe, err)
		}
		if p.StartedAt, err = parseTime(startedAt); err != nil {
			return nil, fmt.Errorf("probe %q: %w", probe, err)
		}
		p.Fingerprint, p.Body = fingerprint.String, sample.String
		out[probe] = p
	}
	return out, nil
}

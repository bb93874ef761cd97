package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
)

// latestPassSample is probe $1's latest passing run, in the order history
// is listed in, with its shape's sample: one search of the index on
// (probe, outcome, started_at, id), read backwards and stopped at the
// first row, then one row of results and one of shapes. The LEFT JOIN
// keeps the latest pass even when its shape has no sample, so that an
// older pass is never taken for the latest.
const latestPassSample = `SELECT r.operation_id, r.started_at, r.shape_fingerprint, s.sample
FROM results r LEFT JOIN shapes s ON s.fingerprint = r.shape_fingerprint
WHERE r.probe = $1 AND r.outcome = 'pass'
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
// one moment.
func (s *Store) LatestPassSamples(ctx context.Context, probes []string) (map[string]results.PassSample, error) {
	out, err := s.latestPassSamples(ctx, probes)
	if err != nil {
		return nil, fmt.Errorf("postgres: latest pass samples: %w", ctxErr(ctx, err))
	}
	return out, nil
}

func (s *Store) latestPassSamples(ctx context.Context, probes []string) (map[string]results.PassSample, error) {
	tx, err := s.pool.BeginTx(ctx, snapshot)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if len(probes) == 0 {
		if probes, err = readStrings(ctx, tx, probeNames); err != nil {
			return nil, fmt.Errorf("probes: %w", err)
		}
	}
	out := make(map[string]results.PassSample, len(probes))
	for _, probe := range probes {
		if _, done := out[probe]; done {
			continue
		}
		var (
			p                   = results.PassSample{Probe: probe}
			startedAt           time.Time
			fingerprint, sample *string
		)
		err := tx.QueryRow(ctx, latestPassSample, probe).Scan(&p.OperationID, &startedAt, &fingerprint, &sample)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && sample == nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("probe %q: %w", probe, err)
		}
		p.StartedAt = startedAt.UTC()
		p.Fingerprint, p.Body = str(fingerprint), *sample
		out[probe] = p
	}
	return out, nil
}

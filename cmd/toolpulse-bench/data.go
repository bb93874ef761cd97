package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
)

// The consumer every generated result names. The daemon's config declares
// the same one, so the API and the status page show rows that agree with
// the configuration; its rule hash comes from consumers.Compile.
const (
	consumerName     = "bench_search"
	consumerVersion  = "1"
	consumerSelect   = `(type(response.results) == "map" ? response.results.items : response.results) | filter(.score >= 0.75)`
	consumerValidate = `type(.id) == "string" && type(.score) in ["int", "float"]`
)

// benchConsumer compiles the bench consumer.
func benchConsumer() (*consumers.Consumer, error) {
	c, errs := consumers.Compile(consumers.Source{
		Name: consumerName, Version: consumerVersion, Select: consumerSelect, Validate: consumerValidate,
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("compile the bench consumer: %w", errs[0])
	}
	return c, nil
}

// The mix of outcomes, in parts per 10,000 runs: 96% pass, 3%
// contract_error, 1% unavailable; 5% of passes needed a second attempt.
const (
	passBelow          = 9600
	contractBelow      = 9900
	retriedPassPercent = 5
)

// Kinds of generated run. The ids are used in fill.sql, which picks one
// per result.
const (
	kindPass = iota
	kindPassRetried
	kindEmptySelection
	kindMissingField
	kindWrongType
	kindTimeout
	kindServerError
	// kindPassItems passes on the provider's other layout: a drift that the
	// consumer survives. Only drift slots use it.
	kindPassItems
)

// Shapes of the provider's answers; the first is every probe's baseline.
const (
	shapeList = iota
	shapeItems
	shapeMissingScore
	shapeStringScore
)

// The bodies the shapes are taken from, with shape.Of, so that
// fingerprints and canonical texts are toolpulse's own.
const (
	bodyList         = `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`
	bodyItems        = `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`
	bodyMissingScore = `{"results":[{"id":"doc_784","title":"API migration guide"}],"next_cursor":null}`
	bodyStringScore  = `{"results":[{"id":"doc_784","title":"API migration guide","score":"0.93"}],"next_cursor":null}`
)

// shapeBodies lists the bodies in the order of the shape constants.
func shapeBodies() []string {
	return []string{shapeList: bodyList, shapeItems: bodyItems, shapeMissingScore: bodyMissingScore, shapeStringScore: bodyStringScore}
}

// timeoutMS is how long an attempt that timed out took: the timeout the
// messages name.
const timeoutMS = 5000

// failedAttempt is an attempt before the last one of a retried run.
type failedAttempt struct {
	HTTPStatus int // 0: no response arrived
	Code       results.Code
	Message    string
}

// kind is one way a generated run ends.
type kind struct {
	ID         int
	Outcome    results.Outcome
	Code       results.Code // "" on pass
	Message    string       // "" on pass
	HTTPStatus int          // of the last attempt; 0: no response arrived
	Selected   int          // selected and validated items
	Shape      int          // index into the shapes; -1: no JSON body was decoded
	Sample     string       // "" on pass and when no response arrived
	// Attempts is 1 or 2; a second attempt follows Failed after a back-off
	// wait.
	Attempts int
	Failed   failedAttempt
	// TimedOut: every attempt took timeoutMS.
	TimedOut bool
}

const (
	msgServerBusy = "HTTP 503 Service Unavailable"
	msgTimeout    = "timed out after 5s waiting for the response headers"
)

// kinds lists every kind, in id order.
func kinds() []kind {
	busy := failedAttempt{HTTPStatus: 503, Code: results.CodeServerError, Message: msgServerBusy}
	return []kind{
		{ID: kindPass, Outcome: results.Pass, Attempts: 1, HTTPStatus: 200, Selected: 3, Shape: shapeList},
		{ID: kindPassRetried, Outcome: results.Pass, Attempts: 2, Failed: busy, HTTPStatus: 200, Selected: 3, Shape: shapeList},
		{
			// Scores below the threshold: the shape is the baseline's.
			ID: kindEmptySelection, Outcome: results.ContractError, Code: results.CodeEmptySelection,
			Message: "select returned no items; at least 1 expected", Attempts: 1, HTTPStatus: 200,
			Shape: shapeList, Sample: `{"results":[{"id":"doc_12","title":"Release notes","score":0.41}],"next_cursor":null}`,
		},
		{
			ID: kindMissingField, Outcome: results.ContractError, Code: "missing_field",
			Message: "results[0].score is missing", Attempts: 1, HTTPStatus: 200,
			Shape: shapeMissingScore, Sample: bodyMissingScore,
		},
		{
			ID: kindWrongType, Outcome: results.ContractError, Code: "wrong_type",
			Message: "results[0].score is a string, want a number", Attempts: 1, HTTPStatus: 200,
			Shape: shapeStringScore, Sample: bodyStringScore,
		},
		{
			ID: kindTimeout, Outcome: results.Unavailable, Code: results.CodeTimeout, Message: msgTimeout,
			Attempts: 2, Failed: failedAttempt{Code: results.CodeTimeout, Message: msgTimeout}, TimedOut: true,
			Shape: -1,
		},
		{
			// toolpulse keeps the body of a 5xx as the sample but does not
			// take its shape.
			ID: kindServerError, Outcome: results.Unavailable, Code: results.CodeServerError, Message: msgServerBusy,
			Attempts: 2, Failed: busy, HTTPStatus: 503, Shape: -1, Sample: `{"error":"overloaded, retry later"}`,
		},
		{ID: kindPassItems, Outcome: results.Pass, Attempts: 1, HTTPStatus: 200, Selected: 3, Shape: shapeItems},
	}
}

// benchShape is a shape as the shapes table holds it, with its diff from
// the baseline ("" for the baseline itself).
type benchShape struct {
	Fingerprint string
	Canonical   string
	Diff        string
}

// benchShapes computes every shape of shapeBodies, in the same order.
func benchShapes() ([]benchShape, error) {
	bodies := shapeBodies()
	parsed := make([]shape.Shape, len(bodies))
	for i, body := range bodies {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			return nil, fmt.Errorf("shape body %d: %w", i, err)
		}
		parsed[i] = shape.Of(v)
	}
	out := make([]benchShape, len(parsed))
	for i, s := range parsed {
		out[i] = benchShape{
			Fingerprint: s.Fingerprint(),
			Canonical:   s.String(),
			Diff:        strings.Join(shape.Diff(parsed[shapeList], s), "\n"),
		}
	}
	return out, nil
}

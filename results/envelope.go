package results

// SchemaVersion is the version of the Envelope's JSON layout.
const SchemaVersion = "1"

// Envelope is the JSON form of a Result that CLI output, the API and
// scripts read (SPEC §6). Its field names are a contract.
type Envelope struct {
	SchemaVersion string         `json:"schema_version"`
	ToolName      string         `json:"tool_name"` // the probe's name, for MCP probes too
	Kind          ProbeKind      `json:"kind"`
	MCP           *MCPTarget     `json:"mcp,omitempty"` // the tool and server; absent for HTTP
	Status        Outcome        `json:"status"`
	OperationID   string         `json:"operation_id"`
	StartedAt     string         `json:"started_at"`
	DurationMS    int64          `json:"duration_ms"`
	Attempts      int            `json:"attempts"`
	HTTPStatus    *int           `json:"http_status"`
	Data          *EnvelopeData  `json:"data"`
	Error         *Error         `json:"error"`
	Shape         *EnvelopeShape `json:"shape"`
	Consumer      ConsumerRef    `json:"consumer"`
	// Step is a steps probe's deciding step, the first that failed;
	// absent when every step passed, and for a single probe (SPEC §11).
	Step string `json:"step,omitempty"`
	// Steps are a steps probe's steps as they ran; absent for a single
	// probe.
	Steps []EnvelopeStep `json:"steps,omitempty"`
	// Node is the instance that ran the operation (Result.Node); absent
	// when none is recorded.
	Node string `json:"node,omitempty"`
	// Location is where the operation ran from (Result.RanFrom, SPEC
	// §13): "default" for a single instance that names none.
	Location string `json:"location"`
	// TraceID is the W3C trace id the run's requests carried (Result.TraceID,
	// SPEC §10.1); absent for a probe with trace: false.
	TraceID string `json:"trace_id,omitempty"`
}

// EnvelopeStep is one step of a steps probe's run as the envelope shows
// it. Code and Message are set exactly when Outcome is not pass.
type EnvelopeStep struct {
	Name       string  `json:"name"`
	Outcome    Outcome `json:"outcome"`
	Code       Code    `json:"code,omitempty"`
	Message    string  `json:"message,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	Polls      int     `json:"polls"`
	Always     bool    `json:"always"`
	Skipped    bool    `json:"skipped"`
}

// EnvelopeData is the payload of a passing operation.
type EnvelopeData struct {
	SelectedCount  int `json:"selected_count"`
	ValidatedCount int `json:"validated_count"`
}

// EnvelopeShape is the response shape as the envelope shows it.
type EnvelopeShape struct {
	Fingerprint string   `json:"fingerprint"`
	Baseline    string   `json:"baseline,omitempty"`
	Drift       []string `json:"drift"`
}

// Envelope returns the SPEC §6 envelope of r. Data is set only on pass and
// Error only otherwise, so a failure can never read as an empty success.
func (r *Result) Envelope() Envelope {
	env := Envelope{
		SchemaVersion: SchemaVersion,
		ToolName:      r.Probe,
		Kind:          r.EffectiveKind(),
		Status:        r.Outcome,
		OperationID:   r.OperationID,
		StartedAt:     FormatTime(r.StartedAt),
		DurationMS:    r.Duration.Milliseconds(),
		Attempts:      r.AttemptCount(),
		Consumer:      r.Consumer,
	}
	if r.MCP != nil {
		target := *r.MCP
		env.MCP = &target
	}
	if r.HTTPStatus != 0 {
		status := r.HTTPStatus
		env.HTTPStatus = &status
	}
	if r.Outcome == Pass {
		env.Data = &EnvelopeData{SelectedCount: r.SelectedCount, ValidatedCount: r.ValidatedCount}
	} else if r.Error != nil {
		e := *r.Error
		env.Error = &e
	}
	if r.Shape != nil {
		drift := r.Shape.Drift
		if drift == nil {
			drift = []string{}
		}
		env.Shape = &EnvelopeShape{Fingerprint: r.Shape.Fingerprint, Baseline: r.Shape.Baseline, Drift: drift}
	}
	env.Step, env.Node, env.Location, env.TraceID = r.Step, r.Node, r.RanFrom(), r.TraceID
	for _, st := range r.Steps {
		es := EnvelopeStep{Name: st.Name, Outcome: st.Outcome, DurationMS: st.Duration.Milliseconds(),
			Polls: st.Polls, Always: st.Always, Skipped: st.Skipped}
		if st.Error != nil {
			es.Code, es.Message = st.Error.Code, st.Error.Message
		}
		env.Steps = append(env.Steps, es)
	}
	return env
}

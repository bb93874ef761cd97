package main

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
)

// With --kind steps every probe is a three-step flow under /p/i/jobs, in
// the shape of SPEC §11's refund drill: create a job, confirm it, verify
// that it was confirmed.
//
//	POST /p/i/jobs                create: a new job, its id in the answer
//	POST /p/i/jobs/ID/confirm     confirm: 404 unless ID is the probe's open job
//	GET  /p/i/jobs/ID             verify: 404 unless ID is the open job
//
// Each answer is the HTTP provider's answer with the job spliced in front
// of its fields ({"job":{"id":…,"state":…},"results":…}), so that each step
// gets about what an HTTP probe's run gets and is judged by the same
// consumer: the comparison per exchange is like for like. The probe
// captures the id at create and sends it in the URLs of the other two, so
// a run passes only if the id it captured went to the steps after it.
//
// Create's request is the run's arrival, for the start lag. The mix and the
// alert probes decide verify's answer, the step whose failure a real flow
// would show; create and confirm always pass, so every run makes its three
// exchanges whatever its outcome.

// The steps of a steps probe.
const (
	stepCreate  = "create"
	stepConfirm = "confirm"
	stepVerify  = "verify"
)

const (
	jobsPath    = "/jobs"
	confirmPath = "/confirm"
	// verifyWithin bounds verify's polls. Every run's first poll holds,
	// since confirm came before it; a chain that lost its id polls until
	// then and fails with claim_mismatch.
	verifyWithin = 2 * time.Second
)

// benchSteps are the steps of a probe served at base, each answer judged
// by consumer. Create and confirm send an Idempotency-Key, as a client of
// such an API would, so that --max-attempts retries them as it does an
// HTTP probe's POST.
func benchSteps(base, consumer string) []harness.Step {
	jobs := base + jobsPath
	job := jobs + "/{{job_id}}"
	idempotent := map[string]string{"Idempotency-Key": "{{operation_id}}"}
	return []harness.Step{
		{Name: stepCreate, Consumer: consumer,
			Request: harness.Request{Method: http.MethodPost, URL: jobs, Headers: idempotent,
				JSON: map[string]any{"query": "API migration guide"}},
			Capture: map[string]harness.Capture{"job_id": {Rule: "response.job.id"}}},
		{Name: stepConfirm, Consumer: consumer,
			Request: harness.Request{Method: http.MethodPost, URL: job + confirmPath, Headers: idempotent,
				JSON: map[string]any{"job_id": "{{job_id}}"}}},
		{Name: stepVerify, Consumer: consumer,
			Request: harness.Request{Method: http.MethodGet, URL: job},
			Until:   `response.job.id == vars.job_id && response.job.state == "confirmed"`, Within: verifyWithin},
	}
}

// serveStep answers one request of probe i's flow; rest is the path after
// /p/i.
func (p *provider) serveStep(w http.ResponseWriter, r *http.Request, i int, pp *providerProbe, rest string, now int64) {
	if rest == jobsPath && r.Method == http.MethodPost {
		p.createJob(w, i, pp, now)
		return
	}
	id, confirm := jobOfPath(rest)
	switch {
	case id == "":
		http.NotFound(w, r)
	case confirm && r.Method == http.MethodPost:
		p.confirmJob(w, i, pp, id)
	case !confirm && r.Method == http.MethodGet:
		p.verifyJob(w, i, pp, id, now)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// jobOfPath parses /jobs/ID and /jobs/ID/confirm; id is "" for any other
// path.
func jobOfPath(rest string) (id string, confirm bool) {
	tail, ok := strings.CutPrefix(rest, jobsPath+"/")
	if !ok {
		return "", false
	}
	id, confirm = strings.CutSuffix(tail, confirmPath)
	if strings.Contains(id, "/") {
		return "", false
	}
	return id, confirm
}

func (p *provider) createJob(w http.ResponseWriter, i int, pp *providerProbe, now int64) {
	pp.mu.Lock()
	pp.arrivals = append(pp.arrivals, now)
	pp.jobs++
	pp.confirmed = false
	id := jobID(i, pp.jobs)
	pp.mu.Unlock()
	writeJobAnswer(w, &p.answers[answerPass], id, "created")
}

func (p *provider) confirmJob(w http.ResponseWriter, i int, pp *providerProbe, id string) {
	pp.mu.Lock()
	open := id == jobID(i, pp.jobs)
	if open {
		pp.confirmed = true
	}
	pp.mu.Unlock()
	if !open {
		writeNoJob(w)
		return
	}
	writeJobAnswer(w, &p.answers[answerPass], id, "confirmed")
}

func (p *provider) verifyJob(w http.ResponseWriter, i int, pp *providerProbe, id string, now int64) {
	pp.mu.Lock()
	open := id == jobID(i, pp.jobs)
	confirmed := pp.confirmed
	seq := pp.requests
	if open {
		pp.requests++
	}
	pp.mu.Unlock()
	if !open {
		writeNoJob(w)
		return
	}
	kind, connOpen := p.decide(w, i, pp, seq, now)
	if !connOpen {
		return
	}
	state := "created"
	if confirmed {
		state = "confirmed"
	}
	writeJobAnswer(w, &p.answers[kind], id, state)
}

// jobID names probe i's n-th job: an id no other run of any probe gets.
func jobID(i int, n uint64) string {
	return "job-" + strconv.Itoa(i) + "-" + strconv.FormatUint(n, 10)
}

// writeJobAnswer writes a, with the job in front of its fields when it is
// a JSON object of results (a 200); a failure's body as it is.
func writeJobAnswer(w http.ResponseWriter, a *cannedAnswer, id, state string) {
	body := a.body
	if a.status == http.StatusOK {
		b := make([]byte, 0, len(body)+len(id)+len(state)+32)
		b = append(b, `{"job":{"id":"`...)
		b = append(b, id...)
		b = append(b, `","state":"`...)
		b = append(b, state...)
		b = append(b, `"},`...)
		body = append(b, body[1:]...) // the canned object without its opening brace
	}
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(body)
}

// writeNoJob refuses a step that named a job the probe does not have
// open: the id it captured did not reach it.
func writeNoJob(w http.ResponseWriter) {
	writeJobAnswer(w, &cannedAnswer{status: http.StatusNotFound, body: []byte(`{"error":"no such job"}`)}, "", "")
}

package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// defaultDrip is the pause after each byte of a Drip answer whose Every
// is 0.
const defaultDrip = 100 * time.Millisecond

// errGone is a write given up because the client or the server went away.
var errGone = errors.New("mcptest: client or server gone")

// out writes one HTTP answer: plain, one JSON object, or SSE events, at
// full speed or one byte per drip.
type out struct {
	w       http.ResponseWriter
	ctx     context.Context
	closing <-chan struct{}
	sse     bool
	drip    time.Duration
	started bool
	status  int
}

func (o *out) start(status int) {
	if o.started {
		return
	}
	o.started, o.status = true, status
	if o.sse {
		o.w.Header().Set("Content-Type", "text/event-stream")
		o.w.Header().Set("Cache-Control", "no-cache, no-transform")
		o.w.Header().Set("X-Accel-Buffering", "no")
	} else {
		o.w.Header().Set("Content-Type", "application/json")
	}
	o.w.WriteHeader(status)
}

func (o *out) flush() { _ = http.NewResponseController(o.w).Flush() }

// wait blocks until the client or the server goes away.
func (o *out) wait() {
	select {
	case <-o.ctx.Done():
	case <-o.closing:
	}
}

func (o *out) accepted() {
	o.started, o.status = true, http.StatusAccepted
	o.w.WriteHeader(http.StatusAccepted)
}

func (o *out) plain(status int, text string) {
	o.started, o.status = true, status
	o.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	o.w.WriteHeader(status)
	_, _ = io.WriteString(o.w, text+"\n")
}

// rpcHTTPError answers status with a JSON-RPC error as one JSON object,
// the way servers answer what they reject before any stream starts.
func (o *out) rpcHTTPError(status int, id json.RawMessage, code int, text string, data any) {
	o.started, o.status = true, status
	o.w.Header().Set("Content-Type", "application/json")
	o.w.WriteHeader(status)
	_, _ = o.w.Write(encode(id, nil, &rpcError{Code: code, Message: text, Data: data}))
}

// event writes one JSON-RPC message: the body of a JSON answer, or one
// SSE "message" event.
func (o *out) event(payload []byte) error {
	o.start(http.StatusOK)
	var b bytes.Buffer
	if o.sse {
		b.WriteString("event: message\ndata: ")
		b.Write(payload)
		b.WriteString("\n\n")
	} else {
		b.Write(payload)
	}
	return o.write(b.Bytes())
}

// stream writes one message made of prefix, n bytes of 'x' and suffix,
// without holding it in memory.
func (o *out) stream(prefix string, n int64, suffix string) error {
	o.start(http.StatusOK)
	if o.sse {
		prefix = "event: message\ndata: " + prefix
		suffix += "\n\n"
	}
	if err := o.write([]byte(prefix)); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for n > 0 {
		c := chunk
		if int64(len(c)) > n {
			c = c[:n]
		}
		if err := o.write(c); err != nil {
			return err
		}
		n -= int64(len(c))
	}
	return o.write([]byte(suffix))
}

// write writes b, flushed, or one byte per drip.
func (o *out) write(b []byte) error {
	if closed(o.ctx, o.closing) {
		return errGone
	}
	if o.drip <= 0 {
		if _, err := o.w.Write(b); err != nil {
			return err
		}
		o.flush()
		return nil
	}
	t := time.NewTimer(o.drip)
	defer t.Stop()
	for i := range b {
		if _, err := o.w.Write(b[i : i+1]); err != nil {
			return err
		}
		o.flush()
		t.Reset(o.drip)
		select {
		case <-t.C:
		case <-o.ctx.Done():
			return errGone
		case <-o.closing:
			return errGone
		}
	}
	return nil
}

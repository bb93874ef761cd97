package prober

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/probetest"
)

// The seed-000 consumer, as SPEC §4 writes it.
const (
	seedSelect   = probetest.SeedSelect
	seedValidate = probetest.SeedValidate
)

// The seed-000 fixtures (seed 000, "The regression suite needs fixtures for").
const (
	bodyOriginalList  = probetest.BodyOriginalList
	bodyItemsWrapper  = probetest.BodyItemsWrapper
	bodyMissing       = `{"next_cursor":null}`
	bodyNull          = `{"results":null,"next_cursor":null}`
	bodyNonObject     = `{"results":["doc_784",0.93],"next_cursor":null}`
	bodyMissingScore  = `{"results":[{"id":"doc_784","title":"API migration guide"}],"next_cursor":null}`
	bodyStringScore   = `{"results":[{"id":"doc_784","title":"API migration guide","score":"0.93"}],"next_cursor":null}`
	bodyBooleanScore  = `{"results":[{"id":"doc_784","title":"API migration guide","score":true}],"next_cursor":null}`
	bodyEmptyList     = `{"results":[],"next_cursor":null}`
	bodyIntegerID     = `{"results":[{"id":784,"title":"API migration guide","score":0.93}],"next_cursor":null}`
	bodyHTML          = "<!doctype html><html><body><h1>Welcome</h1></body></html>"
	testUserAgent     = "toolpulse/test"
	testFixtureQuery  = probetest.FixtureQuery
	testQueryLanguage = probetest.QueryLanguage
)

// The providers and probes the daemon's tests share (internal/probetest).
var (
	mustConsumer = probetest.MustConsumer
	testProbe    = probetest.Probe
	serve        = probetest.Serve
	jsonBody     = probetest.JSONBody
	closedPort   = probetest.ClosedPort
	searchBody   = probetest.SearchBody
)

// typedBody answers 200 with body under the given Content-Type; "" sends
// none (net/http would sniff one otherwise).
func typedBody(contentType, body string) func(testing.TB) string {
	return func(t testing.TB) string {
		return serve(t, func(w http.ResponseWriter, r *http.Request) {
			if contentType == "" {
				w.Header()["Content-Type"] = nil
			} else {
				w.Header().Set("Content-Type", contentType)
			}
			io.WriteString(w, body)
		})
	}
}

// strictSearch serves the original list, but only to the request the probe
// is configured to send: anything else gets a 400 and fails the row.
func strictSearch(t testing.TB) string {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		var fixture map[string]any
		err := json.NewDecoder(r.Body).Decode(&fixture)
		switch {
		case err != nil:
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		case r.Method != http.MethodPost || r.URL.Path != "/search":
			http.Error(w, "want POST /search, got "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
		case r.URL.Query().Get("lang") != testQueryLanguage:
			http.Error(w, "want lang=en, got "+r.URL.RawQuery, http.StatusBadRequest)
		case fixture["query"] != testFixtureQuery:
			http.Error(w, fmt.Sprintf("want the fixture, got %v", fixture), http.StatusBadRequest)
		case r.Header.Get("Content-Type") != "application/json":
			http.Error(w, "want Content-Type application/json", http.StatusBadRequest)
		case r.Header.Get("User-Agent") != testUserAgent:
			http.Error(w, "want User-Agent toolpulse/test, got "+r.Header.Get("User-Agent"), http.StatusBadRequest)
		case r.Header.Get("Authorization") != "Bearer sk-test-SECRET":
			http.Error(w, "want the configured Authorization header", http.StatusUnauthorized)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, bodyOriginalList)
		}
	})
}

// hang accepts the request and never answers.
func hang(t testing.TB) string {
	release := make(chan struct{})
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a client that hung up only once the request body
		// has been read.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	return url
}

// rawServer runs handle on every connection of a plain TCP listener, for
// faults below HTTP.
func rawServer(t testing.TB, handle func(c net.Conn, br *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				// Read the whole request first: closing a socket with unread
				// input sends a RST, which would turn every fault into a reset.
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				handle(c, br)
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

// resetMidResponse sends the headers and part of the body, then resets the
// connection (SO_LINGER 0).
func resetMidResponse(t testing.TB) string {
	return rawServer(t, func(c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"results\":[")
		time.Sleep(20 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0)
	})
}

// garbage answers with bytes that are not HTTP at all (an SSH banner).
func garbage(t testing.TB) string {
	return rawServer(t, func(c net.Conn, _ *bufio.Reader) {
		io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
	})
}

// untrustedTLS is an HTTPS provider whose certificate nobody trusts.
func untrustedTLS(t testing.TB) string {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, bodyOriginalList)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the expected handshake failures
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.URL
}

// unavailableThenOK answers 503 to the first request and the original list
// afterwards.
func unavailableThenOK(t testing.TB) string {
	var n atomic.Int32
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, bodyOriginalList)
	})
}

// rateLimited answers 429 with the given Retry-After on every request.
func rateLimited(retryAfter string) func(testing.TB) string {
	return func(t testing.TB) string {
		return serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", retryAfter)
			http.Error(w, "slow down", http.StatusTooManyRequests)
		})
	}
}

// bigBody serves n bytes of a JSON string, with a Content-Length when
// declared, or streamed in chunks without one.
func bigBody(n int, declared bool) func(testing.TB) string {
	body := `"` + strings.Repeat("x", n-2) + `"`
	return func(t testing.TB) string {
		return serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if declared {
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				io.WriteString(w, body)
				return
			}
			for chunk := range chunks(body, 64<<10) {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		})
	}
}

func chunks(s string, size int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			n := min(size, len(s))
			if !yield(s[:n]) {
				return
			}
			s = s[n:]
		}
	}
}

// gzipBomb serves about 8 KiB of gzip that inflates to 8 MiB, eight times
// the probe's cap.
func gzipBomb(t testing.TB) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zeros := make([]byte, 1<<20)
	for range 8 {
		zw.Write(zeros)
	}
	zw.Close()
	bomb := buf.Bytes()
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
}

// drip sends a 200 and then one byte of body every 20ms, forever.
func drip(t testing.TB) string {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := io.WriteString(w, "["); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	})
}

package harness

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// Loopback serves a handler on a loopback port, for a program that has no
// httptest.Server: toolpulse-bench.
type Loopback struct {
	// URL is http://127.0.0.1:PORT, without a trailing slash.
	URL    string
	srv    *http.Server
	served chan error
}

// Listen serves h on a free loopback port until Close.
func Listen(h http.Handler) (*Loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Loopback{URL: "http://" + ln.Addr().String(), served: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving, drops open connections and waits for the serving
// goroutine to return.
func (s *Loopback) Close() error {
	err := s.srv.Close()
	if served := <-s.served; !errors.Is(served, http.ErrServerClosed) && err == nil {
		err = served
	}
	return err
}

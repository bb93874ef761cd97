package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// apiError is the JSON body of every error the API returns; code is stable.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeAPIError(w http.ResponseWriter, status int, code, message string) {
	var body apiError
	body.Error.Code, body.Error.Message = code, message
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// healthJSON is the body of a healthy /healthz.
type healthJSON struct {
	Status string `json:"status"` // always ok
	roleJSON
	// Decider holds the fleet's decider lease, as the store said; left
	// out without a fleet store, when nobody holds it, or when the store
	// could not say (the instance is healthy all the same).
	Decider *deciderJSON `json:"decider,omitempty"`
}

// handleHealthz answers 200 while healthy reports no error, 503 with the
// error otherwise; it waits at most two seconds for the answer. A healthy
// answer says this instance's role: leader and standby alike are healthy,
// for they both serve the status page and the API. ?role=leader asks for
// the leader only, for a load balancer or a Service that wants it: a
// healthy standby answers it 503 not_leader.
//
// In a fleet, the answer also names the instance that holds the
// decider's lease and its epoch, read from fleet (nil: no fleet).
func handleHealthz(healthy func(context.Context) error, role func() Role, fleet FleetStore) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.URL.Query().Get("role")
		if want != "" && want != "leader" {
			writeAPIError(w, http.StatusBadRequest, "bad_request", "role: want leader or nothing, got "+strconv.Quote(want))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := healthy(ctx); err != nil {
			writeAPIError(w, http.StatusServiceUnavailable, "unhealthy", err.Error())
			return
		}
		self := role()
		if want == "leader" && !self.Leading {
			writeAPIError(w, http.StatusServiceUnavailable, "not_leader",
				"this instance ("+self.Node+") is a standby; another leads location "+self.Location)
			return
		}
		out := healthJSON{Status: "ok", roleJSON: toRoleJSON(self)}
		if fleet != nil {
			if f, err := fleet.Fleet(ctx); err == nil {
				out.Decider = deciderOf(f)
			}
		}
		writeJSON(w, out)
	})
}

package web

import (
	"net/http"
	"strconv"

	"github.com/toolpulse/toolpulse/checks"
)

// locationParams reads ?location=, given once or more, as a filter of
// results by the location they ran from (SPEC §13); none: every location.
// A name that cannot be a location is 400 bad_request.
func locationParams(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	locs := r.URL.Query()["location"]
	for _, l := range locs {
		if !checks.ValidLocation(l) {
			writeAPIError(w, http.StatusBadRequest, "bad_request",
				"location: "+strconv.Quote(l)+" is not a location name (lower-case letters, digits and -)")
			return nil, false
		}
	}
	return locs, true
}

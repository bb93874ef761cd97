package main

import (
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestNothingSelected: a run that selected nothing shows "–" in the check
// and history tables and on the probe page, never counts of zero that read
// like a measurement.
func TestNothingSelected(t *testing.T) {
	tests := []struct {
		name             string
		r                results.Result
		message, counted string
	}{
		{"pass with items", results.Result{Outcome: results.Pass, SelectedCount: 3, ValidatedCount: 3},
			"3 selected, 3 validated", "3/3"},
		{"pass of an empty list (min_results 0)", results.Result{Outcome: results.Pass},
			"–", "–"},
		{"unavailable", results.Result{Outcome: results.Unavailable, Error: results.NewError(results.CodeServerError, "HTTP 503")},
			"HTTP 503", "–"},
		{"empty selection", results.Result{Outcome: results.ContractError, Error: results.NewError(results.CodeEmptySelection, "none")},
			"none", "–"},
		{"invalid item", results.Result{Outcome: results.ContractError, SelectedCount: 2, ValidatedCount: 1,
			Error: results.NewError(results.CodeInvalidItem, "item 1")}, "item 1", "2/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := codeAndMessage(&tt.r); got != tt.message {
				t.Errorf("table message %q, want %q", got, tt.message)
			}
			if got := newRunView(time.Now(), &tt.r).Selected; got != tt.counted {
				t.Errorf("probe page selected/validated %q, want %q", got, tt.counted)
			}
		})
	}
}

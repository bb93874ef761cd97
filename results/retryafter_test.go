package results

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 26, 13, 7, 0, 0, time.UTC)
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "seconds", value: "7", want: 7 * time.Second, wantOK: true},
		{name: "zero seconds", value: "0", want: 0, wantOK: true},
		{name: "seconds with spaces", value: " 3 ", want: 3 * time.Second, wantOK: true},
		{name: "plus sign", value: "+5", want: 5 * time.Second, wantOK: true},
		{name: "HTTP date", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{name: "RFC 850 date", value: now.Add(time.Hour).Format(time.RFC850), want: time.Hour, wantOK: true},
		{name: "date in the past", value: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		{name: "largest seconds that fit", value: "9223372036", want: 9223372036 * time.Second, wantOK: true},
		{name: "seconds beyond a Duration saturate", value: "9223372037", want: math.MaxInt64, wantOK: true},
		{name: "absurd seconds saturate", value: "99999999999999999", want: math.MaxInt64, wantOK: true},
		{name: "date centuries ahead saturates", value: "Fri, 31 Dec 9999 23:59:59 GMT", want: math.MaxInt64, wantOK: true},
		{name: "seconds beyond int64", value: "99999999999999999999"},
		{name: "empty", value: ""},
		{name: "blank", value: "  "},
		{name: "negative", value: "-5"},
		{name: "fraction", value: "1.5"},
		{name: "words", value: "soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.value, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

module github.com/toolpulse/toolpulse

go 1.26

require github.com/expr-lang/expr v1.17.8

require (
	github.com/alecthomas/kong v1.17.0 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)

module github.com/toolpulse/toolpulse

go 1.26

require (
	github.com/alecthomas/kong v1.17.0
	github.com/expr-lang/expr v1.17.8
	github.com/goccy/go-yaml v1.19.2
	github.com/google/uuid v1.6.0
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/mattn/go-sqlite3 v1.14.53
)

require (
	github.com/go-co-op/gocron/v2 v2.21.2 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/slack-go/slack v0.35.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)

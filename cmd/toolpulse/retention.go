package main

import (
	"context"
	"log/slog"
	"time"
)

// retentionEvery is how often the daemon prunes; pruning works in short
// batches, so running it often keeps each pass small.
const retentionEvery = 10 * time.Minute

// pruneLoop deletes results older than retention, once at start and then
// every `every`, until ctx ends. A retention of 0 keeps everything.
func pruneLoop(ctx context.Context, store store, retention, every time.Duration, logger *slog.Logger) {
	if retention <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		deleted, err := store.Prune(ctx, time.Now().Add(-retention), 0)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Error("pruning old results failed; will try again", "retention", retention, "error", err)
		case deleted > 0:
			logger.Info("pruned old results", "deleted", deleted, "retention", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
